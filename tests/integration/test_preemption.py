"""Preemption by the running daemon against the embedded cluster: a high-priority pod
whose volume lives on a full node evicts the low-priority pod there, with kube-scheduler's
DisruptionTarget condition and Preempted event, waits for it to go, and binds there."""

from __future__ import annotations

from typing import Any

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import claim, local_pv, node, pod, storage_class

Raw = dict[str, Any]


def scene(cluster: Cluster) -> None:
    batch = with_priority(pod("batch", cpu="4"), 1, node_name="node-1")
    # A finalizer keeps the victim visible while it terminates, as a kubelet would.
    batch["metadata"]["finalizers"] = ["example.com/drain"]
    cluster.server.load(
        [
            node("node-1", "zone-a"),
            node("node-2", "zone-b"),
            storage_class("local"),
            local_pv("pv-1", "node-1"),
            claim("data"),
            batch,
        ]
    )


def victim_marked(cluster: Cluster) -> Raw | None:
    found = cluster.server.get("Pod", "batch", "default")
    if found is None or not found["metadata"].get("deletionTimestamp"):
        return None
    return found


def kubelet_finishes(cluster: Cluster) -> None:
    registry = cluster.server.registry
    registry.patch(
        registry.core("pods"),
        "default",
        "batch",
        "application/merge-patch+json",
        {"metadata": {"finalizers": None}},
    )


def with_priority(raw: Raw, priority: int, node_name: str = "") -> Raw:
    raw["spec"]["priority"] = priority
    if node_name:
        raw["spec"]["nodeName"] = node_name
    return raw


async def test_a_high_priority_pod_preempts_on_the_node_holding_its_volume(
    cluster: Cluster,
) -> None:
    server = cluster.server
    scene(cluster)
    daemon = await cluster.start_daemon()
    await eventually(lambda: "default/batch" in daemon.cluster.pods, what="victim in cache")
    server.load([with_priority(pod("db", ("data",), cpu="2"), 1000)])

    terminating = await eventually(
        lambda: victim_marked(cluster), what="the victim marked for deletion"
    )
    conditions = {c["type"]: c for c in terminating["status"].get("conditions", [])}
    target = conditions["DisruptionTarget"]
    assert (target["status"], target["reason"]) == ("True", "PreemptionByScheduler")
    assert target["message"] == "volsched: preempting to accommodate a higher priority pod"
    assert cluster.pod("db")["status"]["nominatedNodeName"] == "node-1"
    # The event is written after the victim's condition: wait for it, do not race it.
    preempted = await eventually(
        lambda: [e for e in cluster.events_for("batch") if e["reason"] == "Preempted"],
        what="the victim's Preempted event",
    )
    db_uid = cluster.pod("db")["metadata"]["uid"]
    assert [e["note"] for e in preempted] == [f"Preempted by pod {db_uid} on node node-1"]
    failed = [e for e in cluster.events_for("db") if e["reason"] == "FailedScheduling"]
    assert failed and failed[0]["note"].startswith("0/2 nodes are available:")
    assert cluster.node_of("db") is None  # the victim still holds the node

    # The kubelet finishes: the victim goes, and the preemptor takes its place.
    kubelet_finishes(cluster)
    await eventually(lambda: cluster.node_of("db") == "node-1", what="db bound to node-1")
    assert server.get("Pod", "batch", "default") is None


async def test_a_daemon_killed_after_evicting_and_before_binding_converges(
    cluster: Cluster,
) -> None:
    """SIGKILL once the victim is being deleted and the pod nominated, before any
    binding; the victim then goes. The next leader sees the nomination and places the
    pod where the victim was."""
    scene(cluster)
    await cluster.kill_daemon_once(
        [with_priority(pod("db", ("data",), cpu="2"), 1000)],
        lambda: victim_marked(cluster),
        "the victim marked for deletion",
    )
    assert cluster.pod("db")["status"]["nominatedNodeName"] == "node-1"
    assert cluster.node_of("db") is None
    kubelet_finishes(cluster)
    daemon = await cluster.start_daemon()
    await eventually(
        lambda: cluster.node_of("db") == "node-1", timeout=30, what="db bound to node-1"
    )
    assert "default/batch" not in daemon.cluster.pods
