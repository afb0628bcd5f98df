"""volsched run against the embedded cluster: pods placed with bound, WaitForFirstConsumer
and provisioned claims; failures rolled back and retried; events and conditions as
kube-scheduler writes them; health and metrics endpoints."""

from __future__ import annotations

import asyncio
import sys

import aiohttp
import pytest

from tests.integration.conftest import FAST, Cluster, eventually
from tests.integration.objects import claim, local_pv, node, pod, storage_class
from volsched.daemon.runtime.interpreter import SWITCH_INTERVAL_SECONDS
from volsched.emulator import ControllerSettings

BASE = [
    node("node-1", "zone-a"),
    node("node-2", "zone-b"),
    node("node-3", "zone-c"),
    storage_class("local"),
    storage_class("zonal", provisioner="csi.example.com"),
]


async def test_pods_with_bound_wffc_and_provisioned_claims_are_placed(cluster: Cluster) -> None:
    server = cluster.server
    server.load(BASE)
    # A PV bound to its claim the way the PV controller leaves it.
    bound_pv = local_pv("pv-bound", "node-3")
    bound_pv["spec"]["claimRef"] = {"namespace": "default", "name": "c-bound"}
    server.load([bound_pv, local_pv("pv-local", "node-2"), claim("c-bound"), claim("c-local")])
    server.load([claim("c-dyn", "zonal")])
    daemon = await cluster.start_daemon()
    await eventually(
        lambda: (
            (cluster.server.get("PersistentVolumeClaim", "c-bound", "default") or {})
            .get("status", {})
            .get("phase")
            == "Bound"
        ),
        what="the PV controller binding the pre-bound claim",
    )
    server.load(
        [
            pod("uses-bound", ("c-bound",)),
            pod("uses-local", ("c-local",)),
            pod("uses-dyn", ("c-dyn",)),
        ]
    )
    await eventually(
        lambda: all(cluster.node_of(p) for p in ("uses-bound", "uses-local", "uses-dyn")),
        what="all three pods bound",
    )
    assert cluster.node_of("uses-bound") == "node-3"
    assert cluster.node_of("uses-local") == "node-2"
    dynamic = server.get("PersistentVolumeClaim", "c-dyn", "default")
    assert dynamic is not None
    assert dynamic["metadata"]["annotations"][
        "volume.kubernetes.io/selected-node"
    ] == cluster.node_of("uses-dyn")
    assert dynamic["spec"]["volumeName"]
    scheduled = [e for e in cluster.events_for("uses-local") if e.get("reason") == "Scheduled"]
    assert (
        scheduled and scheduled[0]["note"] == "Successfully assigned default/uses-local to node-2"
    )
    assert scheduled[0]["type"] == "Normal"
    await eventually(lambda: daemon.store.stats.journal_depth == 0, what="journal entries closed")


async def test_a_409_on_the_pv_prebind_rolls_back_and_the_retry_places_the_pod(
    cluster: Cluster,
) -> None:
    server = cluster.server
    server.load([*BASE, local_pv("pv-1", "node-1"), claim("c1")])
    server.faults.fail_next("PUT", r"/persistentvolumes/pv-1$", 409)
    await cluster.start_daemon()
    server.load([pod("p", ("c1",))])
    await eventually(lambda: cluster.node_of("p") == "node-1", what="pod placed on retry")
    puts = server.faults.requests("PUT", r"/persistentvolumes/pv-1$")
    assert [r.status for r in puts][:2] == [409, 200]
    failed = [e for e in cluster.events_for("p") if e.get("reason") == "FailedScheduling"]
    assert failed and failed[0]["type"] == "Warning"
    volume = server.get("PersistentVolume", "pv-1")
    assert volume is not None and volume["spec"]["claimRef"]["name"] == "c1"


async def test_unschedulable_pod_says_why_and_moves_when_a_pv_appears(cluster: Cluster) -> None:
    server = cluster.server
    server.load([*BASE, claim("c1", size="50Gi")])
    await cluster.start_daemon()
    server.load([pod("p", ("c1",))])
    # kube-scheduler's text: the filter message, one space, then the PostFilter's.
    message = (
        "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind."
        " no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )

    def condition() -> dict[str, str] | None:
        for item in cluster.pod("p").get("status", {}).get("conditions") or []:
            if item.get("type") == "PodScheduled":
                return item
        return None

    found = await eventually(condition, what="PodScheduled condition")
    assert found["status"] == "False"
    assert found["reason"] == "Unschedulable"
    assert found["message"] == message
    failed = [e for e in cluster.events_for("p") if e.get("reason") == "FailedScheduling"]
    assert failed[0]["note"] == message
    # Our own status writes are no reason to try again: the pod waits for an event.
    await asyncio.sleep(3)
    failures = [e for e in cluster.events_for("p") if e.get("reason") == "FailedScheduling"]
    assert len(failures) == 1
    server.load([local_pv("big", "node-3", size="100Gi")])
    await eventually(lambda: cluster.node_of("p") == "node-3", what="requeue on the PV event")


@pytest.mark.parametrize("controllers", [FAST])
async def test_health_readiness_and_metrics(
    cluster: Cluster, controllers: ControllerSettings
) -> None:
    cluster.server.load([*BASE, local_pv("pv-1", "node-1"), claim("c1"), pod("p", ("c1",))])
    daemon = await cluster.start_daemon()
    await eventually(lambda: cluster.node_of("p"), what="pod placed")
    # The binding cycle finishes (event written, metrics counted) just after the bind.
    await eventually(lambda: daemon.loop.in_flight == 0, what="binding cycle finished")
    base = f"http://127.0.0.1:{daemon.http_port}"
    async with aiohttp.ClientSession() as session:
        for path in ("/healthz", "/livez", "/readyz"):
            async with session.get(base + path) as response:
                assert response.status == 200, path
        async with session.get(base + "/readyz?verbose") as response:
            text = await response.text()
            assert "[+]informer-sync ok" in text and "[+]database ok" in text
        async with session.get(base + "/metrics") as response:
            assert response.status == 200
            metrics = await response.text()
    assert 'scheduler_schedule_attempts_total{profile="volsched",result="scheduled"} 1.0' in metrics
    reached = {
        line.split('milestone="')[1].split('"')[0]: float(line.rsplit(" ", 1)[1])
        for line in metrics.splitlines()
        if line.startswith("volsched_startup_seconds{")
    }
    # Started in-process (no command line): the milestones from the database on, in order.
    order = ["database_open", "caught_up", "ready", "first_binding"]
    assert sorted(reached, key=reached.__getitem__) == order
    assert 'scheduler_pending_pods{queue="active"}' in metrics
    assert "scheduler_scheduling_attempt_duration_seconds_bucket" in metrics
    assert 'scheduler_queue_incoming_pods_total{event="PodAdd",queue="active"}' in metrics
    assert 'volsched_cache_objects{kind="Node"} 3.0' in metrics
    assert "volsched_database_write_duration_seconds" in metrics
    assert "volsched_binding_journal_depth 0.0" in metrics


@pytest.mark.parametrize("controllers", [ControllerSettings(pv_bind_delay_seconds=2.0)])
async def test_the_assume_layer_is_on_disk_while_a_binding_waits(
    cluster: Cluster, controllers: ControllerSettings
) -> None:
    cluster.server.load([*BASE, local_pv("pv-1", "node-1"), claim("c1")])
    daemon = await cluster.start_daemon()
    cluster.server.load([pod("p", ("c1",))])
    await eventually(lambda: daemon.store.stats.journal_depth == 1, what="binding cycle waiting")
    await daemon.store.flush()
    stored = await daemon.store.load(freeze=False)
    assert set(stored.assumed.get("PersistentVolume", {})) == {"pv-1"}
    assert stored.assumed["PersistentVolume"]["pv-1"]["spec"]["claimRef"]["name"] == "c1"
    assert stored.assumed["Pod"]["default/p"]["spec"]["nodeName"] == "node-1"
    await eventually(lambda: cluster.node_of("p") == "node-1", what="pod bound")
    await eventually(lambda: daemon.store.stats.journal_depth == 0, what="journal closed")
    await daemon.store.flush()
    stored = await daemon.store.load(freeze=False)
    assert not any(stored.assumed.values())


async def test_the_daemon_shortens_the_interpreter_switch_interval_while_it_runs(
    cluster: Cluster,
) -> None:
    """So that SQLite's worker thread is not starved by the scheduling loop (see
    SWITCH_INTERVAL_SECONDS); an embedding process gets its own setting back."""
    before = sys.getswitchinterval()
    cluster.server.load([node("node-1")])
    daemon = await cluster.start_daemon()
    assert sys.getswitchinterval() == SWITCH_INTERVAL_SECONDS < before
    await cluster.stop_daemon(daemon)
    assert sys.getswitchinterval() == before
