"""A resumed watch: when it counts as caught up, and that nothing it brings is applied
before the stored cache has loaded (against the emulator over real HTTP)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import pytest

from tests.emulator.support import eventually, node
from volsched.cache.cluster import ClusterCache
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.watch import watching as watching_module
from volsched.daemon.watch.ingest import Ingest
from volsched.daemon.watch.watching import CATCH_UP_RELIST, KindWatcher, WatchSettings
from volsched.emulator import ApiServer, ControllerSettings


@pytest.fixture
async def server() -> AsyncIterator[ApiServer]:
    emulator = ApiServer(controllers=ControllerSettings.none(), bookmark_interval_seconds=60)
    await emulator.start()
    yield emulator
    await emulator.stop()


def resumed(
    server: ApiServer,
    client: KubeClient,
    changes: list[dict[str, object]],
    settings: WatchSettings | None = None,
) -> tuple[KindWatcher, ClusterCache]:
    """A Node watcher resuming from the server's version before ``changes`` land, with
    the version after them as its catch-up target."""
    resume_from = str(server.store.revision)
    server.load(changes)
    watching, cluster = watcher(client, resume_from, settings=settings)
    watching.catch_up_to(str(server.store.revision))
    return watching, cluster


@contextlib.asynccontextmanager
async def running(watching: KindWatcher) -> AsyncIterator[None]:
    """``watching.run()`` in a task for the block, cancelled after it."""
    task = asyncio.create_task(watching.run())
    try:
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def watcher(
    client: KubeClient,
    resume_from: str,
    gate: asyncio.Event | None = None,
    settings: WatchSettings | None = None,
) -> tuple[KindWatcher, ClusterCache]:
    cluster = ClusterCache()
    ingest = Ingest(cluster, None, "volsched")
    return KindWatcher(
        "Node", client, ingest, None, settings or WatchSettings(), resume_from, apply_after=gate
    ), cluster


@pytest.mark.parametrize(
    ("resume_from", "target", "synced"),
    [
        ("40", "40", True),  # nothing happened since the resume point
        ("41", "40", True),  # the resume point is newer than the target
        ("39", "40", False),  # changes may be waiting in the stream
        ("39", "garbage", False),  # no usable target: wait for the stream
    ],
)
async def test_a_resume_point_at_or_past_the_target_has_nothing_to_catch_up(
    client: KubeClient, resume_from: str, target: str, synced: bool
) -> None:
    watching, _ = watcher(client, resume_from)
    watching.catch_up_to(target)
    assert watching.state.synced is synced


async def test_events_wait_for_the_stored_cache_and_the_bookmark_proves_the_catch_up(
    server: ApiServer, client: KubeClient
) -> None:
    resume_from = str(server.store.revision)
    server.load([node("n1")])
    target = str(server.store.revision)
    gate = asyncio.Event()
    watching, cluster = watcher(client, resume_from, gate)
    watching.catch_up_to(target)
    task = asyncio.create_task(watching.watch_once())
    try:
        await asyncio.sleep(0.5)
        # The stream has n1's ADDED, but the stored cache has not loaded: not applied.
        assert cluster.nodes == {}
        assert not watching.state.synced
        gate.set()
        await eventually(lambda: "n1" in cluster.nodes, what="n1 applied after the load")
        # n1's event is at the target: caught up without waiting for a bookmark.
        assert watching.state.synced
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_a_quiet_kind_is_caught_up_by_the_bookmark_of_its_short_first_watch(
    server: ApiServer, client: KubeClient
) -> None:
    watching, cluster = resumed(server, client, [namespace("moved-on")])
    assert not watching.state.synced
    loop = asyncio.get_running_loop()
    started = loop.time()
    # The first watch ends by itself (3 s), its bookmark a second in; no Node changed.
    await asyncio.wait_for(watching.watch_once(), 10)
    assert watching.state.synced
    assert loop.time() - started < 4
    assert cluster.nodes == {}


async def test_a_quiet_kind_whose_bookmarks_stay_behind_is_relisted(
    server: ApiServer, client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A watch cache that has not heard from etcd since before the target (another API
    server of an HA control plane): its bookmarks never prove the catch-up, so after a
    few short watches the kind is relisted, which makes the cache exactly the server's."""
    monkeypatch.setattr(watching_module, "CATCH_UP_WATCHES", 2)
    server.load([node("n1")])
    resume_from = str(server.store.revision)
    server.load([namespace("before-the-freeze")])
    server.faults.freeze_bookmarks()
    server.load([namespace("after-the-freeze")])
    watching, cluster = watcher(client, resume_from)
    # What the stored cache held: a node the server no longer has.
    watching.ingest.upsert("Node", node("ghost"), persist=False)
    watching.catch_up_to(str(server.store.revision))
    loop = asyncio.get_running_loop()
    started = loop.time()
    async with running(watching):
        await asyncio.wait_for(watching.state.synced_event.wait(), 15)
        # Two 3 s watches, each with a bookmark short of the target, then the relist.
        assert loop.time() - started > 5
        assert watching.state.catch_up_watches == 2
        assert watching.state.relists == 1
        assert set(cluster.nodes) == {"n1"}
        assert server.faults.requests("GET", r"/api/v1/nodes\?limit=")


def namespace(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


async def test_failed_catch_up_watches_count_towards_the_relist(
    server: ApiServer, client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A server whose watch cache is behind the resume point refuses the watch ("Too large
    resource version", 504); those failures count like watches that ended short."""
    monkeypatch.setattr(watching_module, "CATCH_UP_WATCHES", 2)
    server.load([node("n1")])
    watching, cluster = resumed(server, client, [namespace("moved-on")], FAST_BACKOFF)
    server.faults.fail_next("GET", WATCHES, 504, times=5)
    async with running(watching):
        await asyncio.wait_for(watching.state.synced_event.wait(), 10)
        assert watching.state.catch_up_watches == 2
        assert watching.state.relists == 1
        assert set(cluster.nodes) == {"n1"}
        # Refused twice, then relisted: the remaining injected failures were not needed.
        assert server.faults.pending_failures() == 3


async def test_watches_ending_after_the_catch_up_are_not_counted(
    server: ApiServer, client: KubeClient
) -> None:
    watching, cluster = resumed(server, client, [node("n1")])
    async with running(watching):
        await asyncio.wait_for(watching.state.synced_event.wait(), 5)
        for _ in range(3):
            # Each stream the server ends is reopened, never counted towards a relist.
            opened = len(server.faults.requests("GET", WATCHES))
            await eventually(lambda: server.store.subscriptions(), what="a watch open")
            server.faults.cut_watches()
            await eventually(
                lambda opened=opened: len(server.faults.requests("GET", WATCHES)) > opened,
                what="the watch reopened",
            )
        assert watching.state.catch_up_watches == 0
        assert watching.state.relists == 0
        assert set(cluster.nodes) == {"n1"}


async def test_without_a_target_a_kind_with_no_bookmark_at_all_is_relisted(
    server: ApiServer,
    client: KubeClient,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The target could not be read, and the server sends this watcher no bookmark (its
    cache is no further than the resume point): after the short watches, a relist."""
    monkeypatch.setattr(watching_module, "CATCH_UP_WATCHES", 2)
    server.load([node("n1")])
    server.faults.freeze_bookmarks()
    resume_from = str(server.store.revision)
    server.load([namespace("after-the-freeze")])
    watching, cluster = watcher(client, resume_from)
    caplog.set_level("INFO", logger="volsched.watch")
    async with running(watching):
        await asyncio.wait_for(watching.state.synced_event.wait(), 15)
        assert watching.state.relists == 1
        assert set(cluster.nodes) == {"n1"}
        [line] = [r.getMessage() for r in caplog.records if CATCH_UP_RELIST in r.getMessage()]
        assert "never reached a bookmark" in line


WATCHES = r"/api/v1/nodes\?.*watch=true"
FAST_BACKOFF = WatchSettings(backoff_initial_seconds=0.05, backoff_max_seconds=0.1)
