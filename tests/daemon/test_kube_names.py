"""A name goes into an API path only once it is one the API server could have given an
object, and then escaped as one segment: a name that cannot exist is a 404 answered
before anything is sent — by every call of the client, reads and writes alike."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path

import pytest

from volsched.cache.errors import InvalidName, NotFound
from volsched.cache.objects.names import name_problem, path_segment, shown
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.kube.resources import resource
from volsched.emulator import ApiServer, ControllerSettings, write_kubeconfig

HOSTILE = [
    "x?watch=true&timeoutSeconds=5",
    "?limit=1&labelSelector=a%3Db",
    "a/b/c",
    "..",
    ".",
    "a%2Fb",
    "a#b",
    "Data",
    "-a",
    "a-",
    "a..b",
    "a b",
    "ä",
    "a" * 254,
]


@pytest.mark.parametrize(
    ("kind", "name", "valid"),
    [
        ("PersistentVolumeClaim", "data-web-0", True),
        ("PersistentVolume", "pvc-3f6a.b1", True),
        ("Node", "ip-10-0-0-1.eu-west-1.compute.internal", True),
        ("Node", "a" * 253, True),
        ("Namespace", "kube-system", True),
        ("Namespace", "a.b", False),
        ("Namespace", "a" * 64, False),
        ("Service", "1abc", False),
        ("Service", "abc-1", True),
        ("Pod", "web-0", True),
        ("Pod", "", False),
        *[("PersistentVolumeClaim", name, False) for name in HOSTILE],
    ],
)
def test_which_names_an_object_can_have(kind: str, name: str, valid: bool) -> None:
    assert (name_problem(kind, name) is None) == valid


@pytest.mark.parametrize("name", HOSTILE)
@pytest.mark.parametrize("where", ["name", "namespace"])
def test_a_path_holds_no_name_that_cannot_exist(name: str, where: str) -> None:
    claims = resource("PersistentVolumeClaim")
    with pytest.raises(InvalidName, match="no object can have this name"):
        if where == "name":
            claims.path("shop", name)
        else:
            claims.path(name, "data")


def test_a_valid_name_is_one_escaped_segment() -> None:
    assert path_segment("Node", "n-1.zone-a") == "n-1.zone-a"
    assert resource("Pod").path("shop", "web-0", "binding") == (
        "/api/v1/namespaces/shop/pods/web-0/binding"
    )


def test_a_shown_name_is_bounded_and_on_one_line() -> None:
    assert shown("web-0") == "web-0"
    assert shown("a" * 300) == "a" * 253 + "…"
    assert shown("a\nb\x1b[31m") == "a\\nb\\x1b[31m"


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[tuple[KubeClient, ApiServer]]:
    server = ApiServer(ControllerSettings.none())
    await server.start()
    kube = await KubeClient.connect(str(write_kubeconfig(tmp_path / "kc", server.url)))
    try:
        yield kube, server
    finally:
        await kube.close()
        await server.stop()


CALLS: list[tuple[str, Callable[[KubeClient, str], Awaitable[object]]]] = [
    ("get", lambda c, n: c.get("PersistentVolumeClaim", n, "shop")),
    ("get in namespace", lambda c, n: c.get("PersistentVolumeClaim", "data", n)),
    ("get cluster-scoped", lambda c, n: c.get("PersistentVolume", n)),
    ("list in namespace", lambda c, n: c.list("PersistentVolumeClaim", n)),
    ("patch", lambda c, n: c.patch("PersistentVolumeClaim", n, {"metadata": {}}, "shop")),
    ("replace", lambda c, n: c.replace("Node", {"metadata": {"name": n}})),
    ("delete", lambda c, n: c.delete("Pod", n, "shop")),
    ("bind", lambda c, n: c.bind_pod("shop", n, "uid", "node-1")),
    ("bind to namespace", lambda c, n: c.bind_pod(n, "web-0", "uid", "node-1")),
    ("create in namespace", lambda c, n: c.create("Event", {"metadata": {"name": "e"}}, n)),
]


@pytest.mark.parametrize("name", ["x?watch=true&timeoutSeconds=5", "a/b/c", "..", "a" * 300])
@pytest.mark.parametrize(("call", "send"), CALLS, ids=[call for call, _ in CALLS])
async def test_the_client_sends_nothing_for_a_name_that_cannot_exist(
    client: tuple[KubeClient, ApiServer],
    name: str,
    call: str,
    send: Callable[[KubeClient, str], Awaitable[object]],
) -> None:
    kube, server = client
    server.faults.reset()
    with pytest.raises(NotFound, match="no object can have this name") as raised:
        await send(kube, name)
    assert raised.value.status == 404
    assert len(str(raised.value)) < 400
    assert server.faults.requests() == []
