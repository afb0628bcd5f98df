"""The leader keeps existing volumes at their replica count: a Replica object waiting
for a node gets one, and a replica that failed past the replenishment wait is replaced
in a zone the volume does not use."""

from __future__ import annotations

from typing import Any

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import node, storage_node

Raw = dict[str, Any]
GI = 2**30
API = "volsched.io/v1alpha1"


def replica(name: str, volume: str, node_name: str = "", **spec: Any) -> Raw:
    return {
        "apiVersion": API,
        "kind": "Replica",
        "metadata": {"name": name},
        "spec": {
            "volumeName": volume,
            "nodeID": node_name,
            "diskID": "d1" if node_name else "",
            **spec,
        },
        "status": {"synced": True},
    }


def replicas_of(cluster: Cluster, volume: str) -> list[Raw]:
    return [r for r in cluster.server.list("Replica") if r["spec"]["volumeName"] == volume]


async def test_missing_and_waiting_replicas_are_placed_and_written(cluster: Cluster) -> None:
    zones = {"n-a": "zone-a", "n-b": "zone-b", "n-c": "zone-c", "n-d": "zone-a"}
    objects: list[Raw] = []
    for name, zone in zones.items():
        objects += [node(name, zone), storage_node(name)]
    objects += [
        {
            "apiVersion": API,
            "kind": "Volume",
            "metadata": {"name": "vol-wait"},
            "spec": {"size": 10 * GI, "numberOfReplicas": 2},
            "status": {"robustness": "degraded"},
        },
        replica("vol-wait-r-1", "vol-wait", "n-a"),
        replica("vol-wait-r-2", "vol-wait"),
        {
            "apiVersion": API,
            "kind": "Volume",
            "metadata": {"name": "vol-failed"},
            "spec": {"size": 10 * GI, "numberOfReplicas": 3},
            "status": {"robustness": "degraded", "lastDegradedAt": "2020-01-01T00:00:00Z"},
        },
        replica("vol-failed-r-1", "vol-failed", "n-a"),
        replica("vol-failed-r-2", "vol-failed", "n-b"),
        replica("vol-failed-r-3", "vol-failed", "n-c", failedAt="2020-01-01T00:00:00Z"),
    ]
    cluster.server.load(objects)
    await cluster.start_daemon()

    def waiting_placed() -> bool:
        waiting = cluster.server.get("Replica", "vol-wait-r-2")
        return bool(waiting and waiting["spec"]["nodeID"])

    await eventually(waiting_placed, what="the waiting replica placed")
    waiting = cluster.server.get("Replica", "vol-wait-r-2")
    assert waiting is not None and waiting["spec"]["nodeID"] in ("n-b", "n-c")
    await eventually(lambda: len(replicas_of(cluster, "vol-failed")) == 4, what="a new replica")
    fresh = [
        r
        for r in replicas_of(cluster, "vol-failed")
        if r["metadata"]["name"].startswith("vol-failed-r-")
        and r["metadata"]["name"] not in {"vol-failed-r-1", "vol-failed-r-2", "vol-failed-r-3"}
    ]
    assert len(fresh) == 1
    # Past the replenishment wait the failed copy no longer holds its node or zone, so
    # the new replica goes to the zone the volume lacks: zone-c, that is n-c.
    assert fresh[0]["spec"]["nodeID"] == "n-c"


async def test_a_failed_write_hands_its_promised_space_back(cluster: Cluster) -> None:
    # Each disk holds one 10 GiB replica and not two (15 GiB, over-provisioning 100 %):
    # if the failed create kept its promise, n-b would look full and the retry would
    # find no disk for the missing replica.
    objects: list[Raw] = []
    for name, zone in {"n-a": "zone-a", "n-b": "zone-b"}.items():
        objects += [node(name, zone), storage_node(name, gibibytes=15)]
    objects += [
        {
            "apiVersion": API,
            "kind": "Volume",
            "metadata": {"name": "vol"},
            "spec": {"size": 10 * GI, "numberOfReplicas": 2},
            "status": {"robustness": "degraded"},
        },
        replica("vol-r-1", "vol", "n-a"),
    ]
    server = cluster.server
    server.load(objects)
    server.faults.fail_next("POST", r"/replicas$", 500)
    await cluster.start_daemon()

    await eventually(lambda: len(replicas_of(cluster, "vol")) == 2, what="the retried replica")
    created = [r for r in replicas_of(cluster, "vol") if r["metadata"]["name"] != "vol-r-1"]
    assert [r["spec"]["nodeID"] for r in created] == ["n-b"]
    assert server.faults.pending_failures() == 0  # the first create did fail
