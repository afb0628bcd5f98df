"""The decisions page is guarded as /metrics is: with authentication on, a caller needs
a token the API server vouches for and a grant for ``get`` on ``/decisions``."""

from __future__ import annotations

from tests.integration.conftest import Cluster
from tests.integration.test_http_auth import NOBODY, SCRAPER, call, start
from volsched.emulator import User

READER = "reader-token"
PAGES = ("/decisions", "/decisions?pod=default/web", "/decisions?pod=default/nope")


async def test_the_page_refuses_unknown_and_unauthorised_callers(cluster: Cluster) -> None:
    daemon = await start(cluster)
    for token, status in ((None, 401), ("made-up", 401), (NOBODY, 403)):
        for path in PAGES:
            got, text = await call(daemon, "GET", path, token)
            assert got == status, (token, path, text)
            assert "<html" not in text and "Pending pods" not in text


async def test_a_granted_reader_gets_the_page_and_only_the_page(cluster: Cluster) -> None:
    daemon = await start(cluster)
    cluster.server.access.tokens[READER] = User("alice", groups=("sre",))
    # One rule for both pages: the pod is a query parameter, not a path.
    cluster.server.access.allow("sre", "/decisions", "get")
    status, text = await call(daemon, "GET", "/decisions", READER)
    assert status == 200 and "<h1>Decisions</h1>" in text
    status, text = await call(daemon, "GET", "/decisions?pod=default/web", READER)
    assert status == 200 and "Pod <code>default/web</code>" in text
    status, _ = await call(daemon, "GET", "/decisions?pod=default/nope", READER)
    assert status == 404
    # The grant is for the page's paths, not for everything the daemon serves.
    assert (await call(daemon, "GET", "/metrics", READER))[0] == 403
    # And /metrics' scraper is not a reader of the page.
    assert (await call(daemon, "GET", "/decisions", SCRAPER))[0] == 403
