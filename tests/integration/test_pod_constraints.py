"""Placement rules kube-scheduler keeps, kept by the daemon against the embedded cluster:
scheduling gates (a gated pod's claim is untouched until the gate goes) and required
pod anti-affinity (a StatefulSet-like group spread one per node, the extra one pending
with upstream's reason)."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import claim, local_pv, node, pod, storage_class
from volsched.daemon.kube.client import KubeClient

Raw = dict[str, Any]
GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


def condition(cluster: Cluster, name: str) -> Raw | None:
    found = cluster.server.get("Pod", name, "default") or {}
    for entry in (found.get("status") or {}).get("conditions") or []:
        if entry.get("type") == "PodScheduled":
            return dict(entry)
    return None


async def test_a_gated_pod_is_never_attempted_until_its_gate_is_removed(cluster: Cluster) -> None:
    server = cluster.server
    held = pod("held", ("c-held",))
    held["spec"]["schedulingGates"] = [{"name": "example.com/data-restored"}]
    server.load(
        [
            node("node-1"),
            node("node-2"),
            storage_class("local"),
            local_pv("pv-held", "node-2"),
            local_pv("pv-free", "node-1"),
            claim("c-held"),
            claim("c-free"),
            held,
        ]
    )
    await cluster.start_daemon()
    server.load([pod("free", ("c-free",))])
    await eventually(lambda: cluster.node_of("free") == "node-1", what="the free pod placed")
    await eventually(
        lambda: (condition(cluster, "held") or {}).get("reason") == "SchedulingGated",
        what="the gated pod's condition",
    )
    gated = condition(cluster, "held")
    assert gated is not None
    assert (gated["status"], gated["message"]) == ("False", GATED_MESSAGE)
    await asyncio.sleep(1.0)
    # Nothing was written for the gated pod: no node, no prebind, no event.
    assert cluster.node_of("held") is None
    pv = server.get("PersistentVolume", "pv-held")
    assert pv is not None and not pv["spec"].get("claimRef")
    held_claim = server.get("PersistentVolumeClaim", "c-held", "default")
    assert held_claim is not None
    assert "volume.kubernetes.io/selected-node" not in (
        held_claim["metadata"].get("annotations") or {}
    )
    assert cluster.events_for("held") == []

    # The gate goes (an update through the API, as its controller would do it).
    client = await KubeClient.connect(str(cluster.kubeconfig))
    try:
        current = await client.get("Pod", "held", "default")
        current["spec"]["schedulingGates"] = []
        await client.replace("Pod", current)
    finally:
        await client.close()
    await eventually(lambda: cluster.node_of("held") == "node-2", what="the released pod placed")
    await eventually(
        lambda: (
            (server.get("PersistentVolumeClaim", "c-held", "default") or {})
            .get("status", {})
            .get("phase")
            == "Bound"
        ),
        what="its claim bound",
    )


def replica(name: str) -> Raw:
    body = pod(name)
    body["metadata"]["labels"] = {"app": "db"}
    body["spec"]["affinity"] = {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {"matchLabels": {"app": "db"}},
                    "topologyKey": "kubernetes.io/hostname",
                }
            ]
        }
    }
    return body


async def test_required_anti_affinity_spreads_replicas_one_per_node(cluster: Cluster) -> None:
    server = cluster.server
    server.load([node("node-1", "zone-a"), node("node-2", "zone-b"), node("node-3", "zone-c")])
    await cluster.start_daemon()
    server.load([replica(f"db-{i}") for i in range(3)])
    await eventually(
        lambda: all(cluster.node_of(f"db-{i}") for i in range(3)), what="three replicas placed"
    )
    assert sorted(str(cluster.node_of(f"db-{i}")) for i in range(3)) == [
        "node-1",
        "node-2",
        "node-3",
    ]
    server.load([replica("db-3")])
    await eventually(
        lambda: (condition(cluster, "db-3") or {}).get("reason") == "Unschedulable",
        what="the fourth replica's reason",
    )
    failed = condition(cluster, "db-3")
    assert failed is not None
    # Anti-affinity is resolvable in principle, but the pods in the way have the same
    # priority: kube-scheduler's PostFilter text follows the filter's.
    assert failed["message"] == (
        "0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules."
        " no new claims to deallocate, preemption: 0/3 nodes are available:"
        " 3 No preemption victims found for incoming pod."
    )
    assert cluster.node_of("db-3") is None
