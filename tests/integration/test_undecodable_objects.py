"""One object the decoder refuses stops nothing: served in a watch event or in a list page
at start — a number of 5,000 digits, a lone surrogate in a label, nesting 1,500 levels
deep — it is skipped (a Longhorn Setting that deep is read without its deepest parts),
named once in the log, counted, and every later pod is still placed while the kind
syncs and /readyz turns 200, also after a restart."""

from __future__ import annotations

import logging
from typing import Any

import aiohttp
import pytest

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import node, pod
from tests.unit.longhorn.objects import longhorn_setting
from volsched.daemon.runtime.app import Daemon
from volsched.emulator.longhorn import longhorn_crds

# Each placeholder label value is served as the bytes beside it.
HOSTILE = {
    "number": b"1" + b"0" * 4999,
    "surrogate": b'"\\ud800"',
    "deep": b"[" * 1500 + b"]" * 1500,
}
PROBLEM = {
    "number": "a number of 5,000 digits",
    "surrogate": "a lone UTF-16 surrogate in a string",
    "deep": "nested deeper than 100 levels",
}


def hostile_pod(name: str, what: str) -> dict[str, Any]:
    bad = pod(name)
    bad["metadata"]["labels"] = {"hostile": f"garbled-{what}"}
    return bad


def deep_setting() -> dict[str, Any]:
    # Longhorn's CRDs preserve unknown fields: the API server keeps whatever is there.
    setting = longhorn_setting("default-replica-count", "3")
    setting["extra"] = "garbled-deep"
    return setting


def garble(cluster: Cluster) -> None:
    for what, written in HOSTILE.items():
        cluster.server.faults.garble(f"garbled-{what}", written)


def named(caplog: pytest.LogCaptureFixture, text: str) -> list[str]:
    return [r.getMessage() for r in caplog.records if text in r.getMessage()]


def metric(daemon: Daemon, kind: str) -> str:
    text = daemon.metrics.render().decode()
    found = [
        line
        for line in text.splitlines()
        if line.startswith(f'volsched_undecodable_objects_total{{kind="{kind}"}}')
    ]
    return found[0].split()[-1] if found else "0"


async def ready(daemon: Daemon) -> int:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{daemon.http_port}/readyz") as response,
    ):
        return response.status


@pytest.mark.parametrize("what", sorted(HOSTILE))
async def test_a_watch_event_that_does_not_decode_is_skipped_and_the_watch_goes_on(
    cluster: Cluster, caplog: pytest.LogCaptureFixture, what: str
) -> None:
    garble(cluster)
    cluster.server.load([node("n1"), node("n2", "zone-b")])
    daemon = await cluster.start_daemon()
    caplog.set_level(logging.WARNING, logger="volsched")
    (bad,) = cluster.server.load([hostile_pod("bad", what)])
    cluster.server.load([pod(f"web-{i}") for i in range(3)])
    await eventually(
        lambda: all(cluster.node_of(f"web-{i}") for i in range(3)), what="later pods placed"
    )
    version = bad["metadata"]["resourceVersion"]
    assert named(caplog, "Pod default/bad") == [
        f"Pod default/bad at resourceVersion {version}: cannot be decoded ({PROBLEM[what]}); "
        "skipped"
    ]
    assert not named(caplog, "watch failed")
    assert metric(daemon, "Pod") == "1.0"
    assert await ready(daemon) == 200
    # A restart resumes past it, syncs and is ready.
    await cluster.stop_daemon(daemon)
    again = await cluster.start_daemon()
    cluster.server.load([pod("after-restart")])
    await eventually(lambda: cluster.node_of("after-restart"), what="placed after restart")
    assert await ready(again) == 200


async def test_undecodable_objects_in_the_lists_at_start_are_skipped(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    garble(cluster)
    cluster.server.load([*longhorn_crds(), node("n1"), node("n2", "zone-b")])
    cluster.server.load([hostile_pod(f"bad-{what}", what) for what in HOSTILE])
    cluster.server.load([deep_setting(), *(pod(f"web-{i}") for i in range(3))])
    caplog.set_level(logging.WARNING, logger="volsched")
    daemon = await cluster.start_daemon()
    assert daemon.sync.synced()
    assert await ready(daemon) == 200
    await eventually(lambda: all(cluster.node_of(f"web-{i}") for i in range(3)), what="pods placed")
    # Three pods named (one line each, the first of a kind at once, the others after
    # the rate limit or counted), all counted.
    assert metric(daemon, "Pod") == "3.0"
    # One line for the three (the rate limit: the others within 10 s go to DEBUG).
    (pod_line,) = named(caplog, "Pod default/bad-")
    assert "cannot be decoded" in pod_line
    # The deep Setting is kept, without its deepest parts, and named.
    kept = daemon.cluster.get("LonghornSetting", "longhorn-system/default-replica-count")
    assert kept is not None and kept.value == "3"
    (line,) = named(caplog, "LonghornSetting longhorn-system/default-replica-count")
    assert "nested deeper than 100 levels left out" in line
    assert metric(daemon, "LonghornSetting") == "0"
    # A warm start proves its stored cache against metadata lists that hold them too.
    await cluster.stop_daemon(daemon)
    again = await cluster.start_daemon()
    assert again.sync.synced() and await ready(again) == 200
    cluster.server.load([pod("after-restart")])
    await eventually(lambda: cluster.node_of("after-restart"), what="placed after restart")


async def test_a_deep_longhorn_setting_in_a_watch_is_kept(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    garble(cluster)
    cluster.server.load([*longhorn_crds(), node("n1")])
    daemon = await cluster.start_daemon()
    caplog.set_level(logging.WARNING, logger="volsched")
    cluster.server.load([deep_setting(), pod("web")])
    await eventually(lambda: cluster.node_of("web"), what="pod placed")
    key = "longhorn-system/default-replica-count"
    await eventually(lambda: daemon.cluster.get("LonghornSetting", key), what="setting kept")
    assert len(named(caplog, f"LonghornSetting {key}")) == 1
    assert not named(caplog, "watch failed")


@pytest.mark.parametrize(
    ("written", "said"),
    [
        (b"NaN", "cannot be decoded (NaN, which is not a JSON number); skipped"),
        (b"Infinity", "cannot be decoded (Infinity, which is not a JSON number); skipped"),
        (b"1e400", "cannot be decoded (a number out of range (1e400)); skipped"),
        (b'"Infinity"', "field status.allocatable.cpu: 'Infinity' is not a quantity"),
    ],
)
async def test_a_node_with_a_non_finite_allocatable_is_skipped(
    cluster: Cluster, caplog: pytest.LogCaptureFixture, written: bytes, said: str
) -> None:
    cluster.server.faults.garble("garbled-cpu", written)
    cluster.server.load([node("n1"), node("n2", "zone-b")])
    daemon = await cluster.start_daemon()
    caplog.set_level(logging.WARNING, logger="volsched")
    (broken,) = cluster.server.load([node("broken", cpu="garbled-cpu")])
    cluster.server.load([pod(f"web-{i}") for i in range(4)])
    await eventually(
        lambda: all(cluster.node_of(f"web-{i}") in ("n1", "n2") for i in range(4)),
        what="pods placed on the other nodes",
    )
    (line,) = named(caplog, "broken")
    assert line.endswith(
        f"Node broken at resourceVersion {broken['metadata']['resourceVersion']}"
        f"{':' if 'decoded' in said else ''} {said}"
    )
    assert "broken" not in daemon.cluster.nodes
    assert await ready(daemon) == 200


async def test_a_watch_event_of_megabytes_is_read(cluster: Cluster) -> None:
    """A line longer than the HTTP client's default buffer (128 KiB) is one event, not
    an error: an object of a megabyte or more (a large last-applied annotation) is
    within what an API server stores."""
    cluster.server.load([node("n1")])
    daemon = await cluster.start_daemon()
    big = pod("big")
    big["metadata"]["annotations"] = {"note": "x" * 2_000_000}
    cluster.server.load([big, pod("after")])
    await eventually(lambda: cluster.node_of("big") and cluster.node_of("after"), what="placed")
    assert "default/big" in daemon.cluster.pods
