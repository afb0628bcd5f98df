"""The decisions page over real HTTP (aiohttp's test server, the daemon's own app
factory and middleware) and a cache built from parsed objects: names shown as text,
an error page for an unknown pod, every list bounded, and a question that reserves nothing.
Authentication is tested against the emulator in tests/integration."""

from __future__ import annotations

import re
import time
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

import pytest
from aiohttp.test_utils import TestClient, TestServer

from tests.support import cluster as cache_of
from tests.support import node, parse, pod
from tests.unit.replicas.builders import Host, kube_node, replica, storage_node, volume
from volsched.cache.cluster import ClusterCache
from volsched.daemon.binding.attempts import Attempt, LastAttempts
from volsched.daemon.config.settings import Settings
from volsched.daemon.http.decisions_page import decisions_routes
from volsched.daemon.http.decisions_view import PageLimits
from volsched.daemon.http.server import HealthChecks, health_app
from volsched.daemon.runtime.profiles import build_profiles
from volsched.scheduling.profile_builder import PluginFactory
from volsched.scheduling.provisioners import storage_provisioners
from volsched.scheduling.shadow.comparison import Cause, Comparison, Outcome
from volsched.scheduling.shadow.tally import ShadowTally
from volsched.scheduling.storage_placement import ReplicaContext

HOSTILE_POD = "<script>alert(1)"
HOSTILE_VOLUME = "<svg onload=alert(2)>"
UNSCHEDULABLE = "0/1 nodes are available: 1 Insufficient cpu."


@dataclass
class Page:
    client: TestClient  # type: ignore[type-arg]
    cluster: ClusterCache
    attempts: LastAttempts

    async def get(self, path: str) -> tuple[int, str, dict[str, str]]:
        response = await self.client.get(path)
        return response.status, await response.text(), dict(response.headers)


async def serve_page(
    cluster: ClusterCache,
    limits: PageLimits | None = None,
    shadow_report: Callable[[], dict[str, Any]] | None = None,
) -> Page:
    settings = Settings()
    replicas = ReplicaContext(cluster, settings.replica_scheduling, time.time)
    profiles = build_profiles(
        settings, cluster, PluginFactory(cluster, storage_provisioners(replicas)), seed=1
    )
    attempts = LastAttempts()
    checks = HealthChecks([], [], lambda: b"")
    routes = decisions_routes(cluster, profiles, attempts, limits, shadow_report)
    app = health_app(checks, routes)
    client = TestClient(TestServer(app))
    await client.start_server()
    return Page(client, cluster, attempts)


@pytest.fixture
async def pages() -> AsyncIterator[list[Page]]:
    started: list[Page] = []
    yield started
    for page in started:
        await page.client.close()


def volsched_pod(name: str, cpu: str = "1", **extra: str) -> dict[str, object]:
    raw = pod(name, cpu=cpu, **extra)
    raw["spec"]["schedulerName"] = "volsched"  # type: ignore[index]
    return raw


async def test_names_are_shown_as_text_never_as_markup(pages: list[Page]) -> None:
    host = Host("node-1", zone="zone-a")
    cluster = cache_of(node("node-1", cpu="500m"), volsched_pod(HOSTILE_POD))
    cluster.upsert("StorageNode", storage_node(host))
    cluster.upsert("Volume", volume(HOSTILE_VOLUME, 10**9, replicas=1))
    cluster.upsert("Replica", replica("r-1", HOSTILE_VOLUME, "node-1", "d1"))
    page = await serve_page(cluster)
    pages.append(page)
    page.attempts.record(f"default/{HOSTILE_POD}", Attempt("Unschedulable", "<b>why</b>", 0.0))

    status, body, headers = await page.get("/decisions")
    assert status == 200
    assert "&lt;script&gt;alert(1)" in body
    assert "&lt;svg onload=alert(2)&gt;" in body
    assert "&lt;b&gt;why&lt;/b&gt;" in body
    assert "<script" not in body and "<svg" not in body and "<b>" not in body
    # And were anything to slip through, the browser would refuse to run it.
    assert "default-src 'none'" in headers["Content-Security-Policy"]

    status, body, _ = await page.get(f"/decisions?pod={quote(f'default/{HOSTILE_POD}', safe='')}")
    assert status == 200
    assert "&lt;script&gt;alert(1)" in body and "<script" not in body
    assert UNSCHEDULABLE in body


@pytest.mark.parametrize(
    ("pod_parameter", "status", "says"),
    [
        ("default/nope", 404, "Pod default/nope is not in the scheduler"),
        ("elsewhere/web", 404, "Pod elsewhere/web is not in the scheduler"),
        ("web", 400, "pod=web: give the pod as NAMESPACE/NAME"),
        ("default/", 400, "pod=default/: give the pod as NAMESPACE/NAME"),
        ("a/b/c", 400, "pod=a/b/c: give the pod as NAMESPACE/NAME"),
    ],
)
async def test_an_unknown_pod_is_an_error_page_not_a_traceback(
    pages: list[Page], pod_parameter: str, status: int, says: str
) -> None:
    page = await serve_page(cache_of(node("node-1"), volsched_pod("web")))
    pages.append(page)
    got, body, headers = await page.get(f"/decisions?pod={quote(pod_parameter)}")
    assert got == status
    assert headers["Content-Type"].startswith("text/html")
    assert says in body
    assert "Traceback" not in body and "Pending pods" not in body


def bounded_cluster() -> ClusterCache:
    """6 nodes with storage in 3 zones, 7 pending pods, 4 volumes."""
    cluster = ClusterCache()
    for index in range(6):
        host = Host(f"node-{index}", zone=f"zone-{index % 3}")
        cluster.upsert("Node", kube_node(host))
        cluster.upsert("StorageNode", storage_node(host))
    for index in range(7):
        cluster.upsert("Pod", parse(volsched_pod(f"app-{index}")))
    for index in range(4):
        cluster.upsert("Volume", volume(f"vol-{index}", 10**9))
    return cluster


@pytest.mark.parametrize(
    ("path", "item", "shown", "more"),
    [
        ("/decisions", 'class="pending-pod"', 5, "… and 2 more pending pod(s)"),
        ("/decisions", 'class="volume"', 2, "… and 2 more volume(s)"),
        ("/decisions", 'data-node="', 3, "… and 3 more storage node(s)"),
        ("/decisions?pod=default/app-0", 'class="node-row"', 4, "… and 2 more node(s)"),
    ],
)
async def test_lists_are_bounded_with_a_count_of_the_rest(
    pages: list[Page], path: str, item: str, shown: int, more: str
) -> None:
    limits = PageLimits(pending_pods=5, volumes=2, storage_nodes=3, node_rows=4)
    page = await serve_page(bounded_cluster(), limits)
    pages.append(page)
    status, body, _ = await page.get(path)
    assert status == 200
    assert len(re.findall(re.escape(item), body)) == shown
    assert more in body


async def test_a_pod_that_fits_is_decided_without_reserving_anything(pages: list[Page]) -> None:
    cluster = cache_of(
        node("node-small", cpu="1"),
        node("node-big", cpu="8"),
        node("node-tiny", cpu="500m"),
        volsched_pod("web", cpu="900m"),
    )
    page = await serve_page(cluster)
    pages.append(page)
    generation = cluster.generation
    status, body, _ = await page.get("/decisions?pod=default/web")
    assert status == 200
    rows = re.findall(r'data-node="([^"]+)".*?result-([a-z-]+)', body, re.S)
    assert rows[-1] == ("node-tiny", "rejected")
    assert {result for _, result in rows[:2]} == {"chosen", "feasible"}
    assert "Insufficient cpu" in body and "NodeResourcesFit" in body
    # The page asked; the cache did not move.
    assert "default/web" in cluster.pending and not cluster.assumed_pods
    assert cluster.generation == generation


async def test_a_scheduled_pod_says_where_it_runs(pages: list[Page]) -> None:
    page = await serve_page(cache_of(node("node-1"), volsched_pod("web", node_name="node-1")))
    pages.append(page)
    status, body, _ = await page.get("/decisions?pod=default/web")
    assert status == 200
    assert "Scheduled to <code>node-1</code>" in body
    assert 'class="node-row"' not in body


def test_the_record_of_attempts_keeps_the_most_recent_pods() -> None:
    attempts = LastAttempts(limit=3)
    for index in range(4):
        attempts.record(f"default/p{index}", Attempt("Unschedulable", f"m{index}", index))
    attempts.record("default/p1", Attempt("Unschedulable", "again", 9.0))
    attempts.record("default/p4", Attempt("Unschedulable", "m4", 10.0))
    assert len(attempts) == 3
    assert [attempts.get(f"default/p{i}") is not None for i in range(5)] == [
        False,
        True,
        False,
        True,
        True,
    ]
    latest = attempts.get("default/p1")
    assert latest is not None and latest.message == "again"


async def test_in_shadow_mode_the_page_shows_each_difference_with_its_cause(
    pages: list[Page],
) -> None:
    tally = ShadowTally(["default-scheduler"])
    tally.record(Comparison("ns/a", "default-scheduler", "n1", "n1", Outcome.AGREED))
    tally.record(
        Comparison(
            f"ns/{HOSTILE_POD}",
            "default-scheduler",
            "n2",
            "n1",
            Outcome.LOWER_SCORE,
            score_gap=40,
            cause=Cause.STORAGE_PREFERENCE,
            differing=("PrioritizeVolumes",),
            stranded=(91 * 2**30, 2**30),
        )
    )
    page = await serve_page(cache_of(node("n1"), node("n2")), shadow_report=tally.report)
    pages.append(page)
    status, body, _ = await page.get("/decisions")
    assert status == 200
    assert "Agreement (same node or tied): <strong>50.0%</strong>" in body
    assert re.search(r'data-cause="storage-preference"><td class="num">1</td>', body)
    row = re.search(r'<tr class="shadow-difference".*?</tr>', body, re.S)
    assert row is not None
    cells = [
        re.sub(r"<[^>]+>", "", cell).strip()
        for cell in re.findall(r"<td[^>]*>(.*?)</td>", row.group(0), re.S)
    ]
    assert "&lt;script&gt;" in row.group(0) and "<script>" not in body
    assert cells[1:] == ["n2", "n1", "lower_score", "storage-preference", "40", "PrioritizeVolumes"]
    assert "theirs 91.0 GiB, volsched's 1.0 GiB, saved 90.0 GiB" in body


async def test_outside_shadow_mode_there_is_no_shadow_section(pages: list[Page]) -> None:
    page = await serve_page(cache_of(node("n1")))
    pages.append(page)
    _, body, _ = await page.get("/decisions")
    assert 'id="shadow"' not in body
