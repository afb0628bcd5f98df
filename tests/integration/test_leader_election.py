"""Two daemons, one Lease: only the leader schedules, the standby keeps its cache warm
and takes over when the leader stops (gracefully) or dies (SIGKILL)."""

from __future__ import annotations

import asyncio
import signal

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import node, pod
from volsched.daemon.config.settings import DatabaseSettings


async def test_only_the_leader_schedules_and_a_graceful_stop_hands_over(cluster: Cluster) -> None:
    cluster.server.load([node("node-1"), node("node-2")])
    first = await cluster.start_daemon()
    standby_settings = cluster.settings(
        database=DatabaseSettings(str(cluster.workdir / "standby.db"))
    )
    second = await cluster.start_daemon(standby_settings, lead=False)
    await eventually(second.sync.synced, what="standby caches synced")
    assert first.elector.is_leader and not second.elector.is_leader
    assert second.ready.is_set()

    cluster.server.load([pod("a")])
    await eventually(lambda: cluster.node_of("a"), what="leader schedules")
    await asyncio.sleep(0.3)
    assert second.loop.in_flight == 0
    assert (
        second.metrics.schedule_attempts.labels(result="scheduled", profile="volsched")._value.get()
        == 0
    )
    lease = cluster.server.get("Lease", "volsched", "kube-system")
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == first.settings.leader_election.identity

    loop = asyncio.get_running_loop()
    stopped_at = loop.time()
    await cluster.stop_daemon(first)
    await asyncio.wait_for(second.leading.wait(), timeout=5)
    # Released on shutdown: the standby takes over within about one retry period.
    assert loop.time() - stopped_at < 1.5
    cluster.server.load([pod("b")])
    await eventually(lambda: cluster.node_of("b"), what="new leader schedules")


async def test_a_killed_leader_is_replaced_after_its_lease_expires(cluster: Cluster) -> None:
    cluster.server.load([node("node-1")])
    process = await cluster.subprocess_daemon()
    try:
        await eventually(
            lambda: (
                (cluster.server.get("Lease", "volsched", "kube-system") or {})
                .get("spec", {})
                .get("holderIdentity")
            ),
            timeout=20,
            what="the subprocess leading",
        )
        standby = await cluster.start_daemon(
            cluster.settings(database=DatabaseSettings(str(cluster.workdir / "standby.db"))),
            lead=False,
        )
        await asyncio.sleep(0.5)
        assert not standby.elector.is_leader
        process.send_signal(signal.SIGKILL)
        await process.wait()
        loop = asyncio.get_running_loop()
        killed_at = loop.time()
        await asyncio.wait_for(standby.leading.wait(), timeout=10)
        took = loop.time() - killed_at
        assert took < 1.5 + 2 * 0.2 * 2.2 + 0.5
        lease = cluster.server.get("Lease", "volsched", "kube-system")
        assert lease is not None and lease["spec"]["leaseTransitions"] >= 1
        cluster.server.load([pod("after")])
        await eventually(lambda: cluster.node_of("after") == "node-1", what="new leader schedules")
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
