"""What must survive: cut, expired and stalled watches, and quiet ones without bookmarks
(without a warning); a daemon killed between the PV prebind and the pod binding;
restarts with a warm, a deleted or a corrupt database; SIGTERM."""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import time
from pathlib import Path

import aiohttp
import pytest

from tests.integration.conftest import FAST, Cluster, eventually
from tests.integration.objects import claim, local_pv, node, pod, storage_class
from volsched.daemon.config.settings import DatabaseSettings
from volsched.emulator import ApiServer, ControllerSettings

BASE = [node("node-1", "zone-a"), node("node-2", "zone-b"), storage_class("local")]


def cache_pvs(cluster: Cluster, daemon: object) -> set[str]:
    return {pv.meta.name for pv in daemon.cluster.pvs.values()}  # type: ignore[attr-defined]


def server_pvs(cluster: Cluster) -> set[str]:
    return {pv["metadata"]["name"] for pv in cluster.server.list("PersistentVolume")}


async def test_watch_cut_expiry_and_stall_all_converge(cluster: Cluster) -> None:
    server = cluster.server
    server.load([*BASE, local_pv("pv-a", "node-1")])
    # Watches the server ends after 2 s; one still open half a second later has stalled.
    daemon = await cluster.start_daemon(
        timeout_seconds=2, max_timeout_seconds=2, overdue_seconds=0.5
    )
    await eventually(lambda: cache_pvs(cluster, daemon) == {"pv-a"}, what="initial sync")

    # 1. The connection drops: the watch resumes from its resourceVersion.
    server.faults.cut_watches(abrupt=True)
    server.load([local_pv("pv-b", "node-2")])
    await eventually(lambda: cache_pvs(cluster, daemon) == {"pv-a", "pv-b"}, what="after a cut")

    # 2. History compacted while the stream is down: 410 Gone, relist, deletions emitted.
    pv_watcher = next(w for w in daemon.sync.watchers if w.kind == "PersistentVolume")
    relists_before = pv_watcher.state.relists
    server.faults.stall_watches(0.5)
    await server_delete(cluster, "pv-a")
    server.faults.compact()
    server.faults.cut_watches()
    await eventually(lambda: cache_pvs(cluster, daemon) == server_pvs(cluster), what="after 410")
    assert pv_watcher.state.relists > relists_before

    # 3. The server stops serving the streams but keeps their connections open: nothing
    # comes, not even the end at their timeoutSeconds. A stream still open past its
    # timeout is treated as dead and reopened. (The emulator stalls every stream, new
    # ones too, for 3 s; the daemon gives up on a stream half a second past its 2 s
    # timeout and reconnects until the server talks again.)
    restarts_before = pv_watcher.state.restarts
    server.faults.stall_watches(3, past_timeout=True)
    await asyncio.sleep(0.1)
    server.load([local_pv("pv-c", "node-1")])
    await eventually(
        lambda: "pv-c" in cache_pvs(cluster, daemon), timeout=10, what="after a stalled stream"
    )
    assert cache_pvs(cluster, daemon) == server_pvs(cluster)
    assert pv_watcher.state.restarts > restarts_before
    assert "the stream had stalled" in pv_watcher.state.last_error


async def test_quiet_kinds_without_bookmarks_are_renewed_without_a_warning(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    """kube-apiserver without etcd's progress notifications (etcd's default) sends no
    bookmark for a kind nobody writes: its watch is silent from start to end. The daemon's
    watches of every kind are renewed when the server ends them, with no warning, and go
    on delivering."""
    server = cluster.server
    server.load(BASE)
    server.faults.suppress_bookmarks()
    caplog.set_level(logging.INFO, logger="volsched.watch")
    daemon = await cluster.start_daemon(timeout_seconds=1, max_timeout_seconds=2)
    watched = [w for w in daemon.sync.watchers if not w.state.absent]
    opened = len(server.faults.requests("GET", "watch=true"))
    await asyncio.sleep(4.5)
    assert len(server.faults.requests("GET", "watch=true")) >= opened + 2 * len(watched)
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert warnings == []
    assert all(w.state.restarts == 0 for w in watched)
    server.load([pod("p1")])
    await eventually(lambda: cluster.node_of("p1"), what="p1 placed")


async def kill_after_prebind(cluster: Cluster, workload: dict[str, object], pv: str) -> None:
    """Run the daemon as a process, create the pod, and SIGKILL the daemon as soon as the
    API server has accepted its PV prebind (it is then waiting for the PV controller)."""
    faults = cluster.server.faults
    await cluster.kill_daemon_once(
        [workload],
        lambda: any(r.status == 200 for r in faults.requests("PUT", rf"/persistentvolumes/{pv}$")),
        "the daemon prebinding the PV",
    )


async def server_delete(cluster: Cluster, name: str) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.delete(f"{cluster.server.url}/api/v1/persistentvolumes/{name}") as response,
    ):
        assert response.status in (200, 202)


@pytest.mark.parametrize(
    "controllers",
    [ControllerSettings(pv_bind_delay_seconds=8.0, provision_delay_seconds=0.05)],
)
async def test_killed_between_prebind_and_binding_rolls_back_then_places(
    cluster: Cluster, controllers: ControllerSettings
) -> None:
    """SIGKILL while the binding cycle waits for the PV controller; restart before the
    controller acts (the new daemon waits out the dead one's 1.5 s lease first): the
    prebind is undone, then the pod is placed."""
    server = cluster.server
    server.load([*BASE, local_pv("pv-1", "node-1"), claim("c1")])
    await kill_after_prebind(cluster, pod("p", ("c1",)), "pv-1")
    prebound = server.get("PersistentVolume", "pv-1")
    assert prebound is not None and prebound["spec"]["claimRef"]["name"] == "c1"
    assert cluster.node_of("p") is None

    daemon = await cluster.start_daemon()
    assert daemon.recovered is not None
    assert (daemon.recovered.released, daemon.recovered.kept) == (1, 0)
    await eventually(lambda: cluster.node_of("p") == "node-1", timeout=30, what="pod placed")
    volume = server.get("PersistentVolume", "pv-1")
    assert volume is not None and volume["status"]["phase"] == "Bound"
    await eventually(lambda: daemon.store.stats.journal_depth == 0, what="journal entries closed")


@pytest.mark.parametrize(
    "controllers",
    [ControllerSettings(pv_bind_delay_seconds=0.5, provision_delay_seconds=0.05)],
)
async def test_killed_daemon_rolls_forward_when_the_claim_got_bound(
    cluster: Cluster, controllers: ControllerSettings
) -> None:
    """The PV controller completes the prebind while the daemon is down: on restart the
    claim keeps its PV and the pod follows it, without writing the PV again."""
    server = cluster.server
    server.load([*BASE, local_pv("pv-1", "node-2"), claim("c1")])
    await kill_after_prebind(cluster, pod("p", ("c1",)), "pv-1")
    await eventually(
        lambda: (
            (server.get("PersistentVolumeClaim", "c1", "default") or {})
            .get("status", {})
            .get("phase")
            == "Bound"
        ),
        what="the PV controller completing the prebind while the daemon is down",
    )
    puts_before = len(server.faults.requests("PUT", r"/persistentvolumes/pv-1$"))
    daemon = await cluster.start_daemon()
    assert daemon.recovered is not None
    assert (daemon.recovered.released, daemon.recovered.kept) == (0, 1)
    await eventually(
        lambda: cluster.node_of("p") == "node-2", timeout=15, what="pod follows its PV"
    )
    assert len(server.faults.requests("PUT", r"/persistentvolumes/pv-1$")) == puts_before
    volume = server.get("PersistentVolume", "pv-1")
    assert volume is not None and volume["spec"]["claimRef"]["name"] == "c1"


async def test_warm_restart_waits_for_its_watches_to_catch_up_before_it_is_ready(
    cluster: Cluster,
) -> None:
    """The stored cache loads at once, but nothing is decided (and /readyz fails) until
    every resumed kind is proven to hold the API server's current state — here a PV
    added while it was down keeps the metadata list from matching, the watch that would
    bring it is stalled, and the relist that proves the kind instead is slow too."""
    server = cluster.server
    server.load([*BASE, local_pv("pv-1", "node-1"), claim("c1")])
    first = await cluster.start_daemon()
    await eventually(first.sync.synced, what="first sync")
    await cluster.stop_daemon(first)
    server.load([local_pv("pv-2", "node-2")])

    server.faults.stall_watches(3)
    # The PV kind's relist (a quicker proof than its bookmark) answers as late.
    server.faults.delay_next("GET", r"/persistentvolumes\?limit=500(&|$)", 3)
    started = time.monotonic()
    starting = asyncio.create_task(cluster.start_daemon())
    await eventually(lambda: cluster.live_daemons(), what="the second daemon opened")
    (second,) = cluster.live_daemons()
    await eventually(lambda: second._runner is not None, what="its HTTP endpoint")
    # Loaded from disk, but not caught up: not ready, nothing scheduled.
    assert {pv.meta.name for pv in second.cluster.pvs.values()} == {"pv-1"}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{second.http_port}/readyz") as response,
    ):
        assert response.status == 503
        assert "waiting for" in await response.text()
    await starting
    assert second.sync.warm
    assert time.monotonic() - started >= 3
    assert all(w.state.synced for w in second.sync.watchers)
    assert {pv.meta.name for pv in second.cluster.pvs.values()} == {"pv-1", "pv-2"}
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{second.http_port}/readyz") as response,
    ):
        assert response.status == 200


async def test_warm_restart_catches_up_in_seconds_when_bookmarks_come_once_a_minute(
    tmp_path: Path,
) -> None:
    """kube-apiserver bookmarks a watch once a minute. A resumed watch of a kind that
    did not change while the daemon was away has no event to prove it caught up; its
    first watch is short, so the bookmark two seconds before its deadline does, and the
    warm start is ready in seconds instead of a minute. What changed while it was away
    is in the cache by then."""
    server = ApiServer(controllers=FAST, bookmark_interval_seconds=60)
    await server.start()
    cluster = Cluster(server, tmp_path)
    try:
        server.load([*BASE, local_pv("pv-1", "node-1")])
        first = await cluster.start_daemon()
        await cluster.stop_daemon(first)
        volumes = server.registry.resource("", "v1", "persistentvolumes")
        server.registry.delete(volumes, "", "pv-1")
        server.load([local_pv("pv-2", "node-2")])
        started = time.monotonic()
        second = await asyncio.wait_for(cluster.start_daemon(), 15)
        assert second.sync.warm
        assert time.monotonic() - started < 10
        assert cache_pvs(cluster, second) == {"pv-2"}
        assert all(w.state.synced for w in second.sync.watchers)
    finally:
        await cluster.close()
        await server.stop()


@pytest.mark.parametrize("damage", ["delete", "garbage"])
async def test_deleted_or_corrupt_database_is_rebuilt_from_a_relist(
    cluster: Cluster, damage: str
) -> None:
    server = cluster.server
    server.load([*BASE, local_pv("pv-1", "node-1"), claim("c1")])
    first = await cluster.start_daemon()
    await eventually(first.sync.synced, what="first sync")
    await cluster.stop_daemon(first)
    for suffix in ("", "-wal", "-shm"):
        path = cluster.db_path.with_name(cluster.db_path.name + suffix)
        if path.exists():
            path.unlink()
    if damage == "garbage":
        cluster.db_path.write_bytes(b"this is not a database" * 100)
    second = await cluster.start_daemon()
    assert not second.sync.warm
    assert second.sync.opened.state == ("cold" if damage == "delete" else "rebuilt")
    if damage == "garbage":
        assert second.sync.opened.moved_to is not None and os.path.exists(
            second.sync.opened.moved_to
        )
    server.load([pod("p", ("c1",))])
    await eventually(lambda: cluster.node_of("p") == "node-1", what="scheduling after rebuild")


@pytest.mark.parametrize("controllers", [FAST])
async def test_sigterm_stops_cleanly(cluster: Cluster, controllers: ControllerSettings) -> None:
    cluster.server.load([*BASE, local_pv("pv-1", "node-1"), claim("c1"), pod("p", ("c1",))])
    process = await cluster.subprocess_daemon()
    try:
        await eventually(lambda: cluster.node_of("p") == "node-1", timeout=30, what="pod placed")
        process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), timeout=15)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.stderr is not None
    stderr = (await process.stderr.read()).decode()
    assert code == 0, stderr
    assert "Traceback" not in stderr


@pytest.mark.parametrize(
    "controllers",
    [ControllerSettings(pv_bind_delay_seconds=8.0, provision_delay_seconds=0.05)],
)
async def test_a_standby_with_an_empty_database_finishes_what_the_dead_leader_left(
    cluster: Cluster, controllers: ControllerSettings
) -> None:
    """Failover: the leader is killed between its PV prebind and the pod binding; the
    replica that takes over has its own, empty database — no journal entry — and still
    releases the prebind it finds recorded on the PV, then places the pod."""
    server = cluster.server
    server.load([*BASE, local_pv("pv-1", "node-1"), claim("c1")])
    await kill_after_prebind(cluster, pod("p", ("c1",)), "pv-1")
    prebound = server.get("PersistentVolume", "pv-1")
    assert prebound is not None and prebound["spec"]["claimRef"]["name"] == "c1"
    assert "volsched.io/binding-intent" in prebound["metadata"]["annotations"]

    standby_db = cluster.workdir / "standby.db"
    standby = await cluster.start_daemon(
        cluster.settings(database=DatabaseSettings(str(standby_db)))
    )
    assert standby.store.stats.journal_depth == 0
    assert standby.recovered is not None
    assert (standby.recovered.released, standby.recovered.kept) == (1, 0)
    await eventually(lambda: cluster.node_of("p") == "node-1", timeout=30, what="pod placed")
    volume = server.get("PersistentVolume", "pv-1")
    assert volume is not None and volume["status"]["phase"] == "Bound"
