"""The daemon beside Longhorn: the embedded cluster serves Longhorn's CRDs and holds
Longhorn's objects as longhorn-manager writes them; volsched places pods next to their
Longhorn replicas and refuses nodes where Longhorn could not place a strict-local volume,
without writing any Longhorn object."""

from __future__ import annotations

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import claim, node, pod
from tests.unit.longhorn.objects import (
    GIB,
    LonghornDisk,
    Raw,
    longhorn_claim,
    longhorn_class,
    longhorn_node,
    longhorn_replica,
    longhorn_setting,
    longhorn_volume,
)
from volsched.emulator.longhorn import longhorn_crds

DISK_GIB = {"n1": 100, "n2": 100, "n3": 300}


def longhorn_cluster(over_provisioning: str | None = "100") -> list[Raw]:
    objects: list[Raw] = list(longhorn_crds())
    for index, (name, size) in enumerate(DISK_GIB.items()):
        disk = LonghornDisk(maximum=size * GIB, available=size * GIB)
        objects += [node(name, f"zone-{'abc'[index]}"), longhorn_node(name, {"d1": disk})]
    if over_provisioning is not None:
        objects.append(longhorn_setting("storage-over-provisioning-percentage", over_provisioning))
    objects += [
        longhorn_setting("default-replica-count", "3"),
        longhorn_class("longhorn", dataLocality="best-effort"),
        longhorn_class("longhorn-local", numberOfReplicas="1", dataLocality="strict-local"),
    ]
    return objects


def longhorn_state(cluster: Cluster) -> list[Raw]:
    return [
        obj
        for kind in ("Node", "Volume", "Replica", "Setting")
        for obj in cluster.server.list(kind, "longhorn-system", api_version="longhorn.io/v1beta2")
    ]


async def test_pods_follow_their_longhorn_data(cluster: Cluster) -> None:
    cluster.server.load(longhorn_cluster())
    cluster.server.load(
        [
            longhorn_volume(
                "pvc-data",
                replicas=1,
                locality="best-effort",
                state="detached",
                robustness="unknown",
            ),
            longhorn_replica("pvc-data-r-1", "pvc-data", "n2", "d1", state="stopped"),
            *longhorn_claim("data", "pvc-data"),
        ]
    )
    before = longhorn_state(cluster)
    assert len(before) == 3 + 1 + 1 + 2
    await cluster.start_daemon()

    # A restarted pod of a best-effort volume goes back to its (detached) data.
    cluster.server.load([pod("app", ("data",))])
    await eventually(lambda: cluster.node_of("app") is not None, what="app placed")
    assert cluster.node_of("app") == "n2"

    # A new strict-local claim of 150 GiB: only n3's disk can hold it.
    cluster.server.load([claim("local", "longhorn-local", "150Gi"), pod("db", ("local",))])
    await eventually(lambda: cluster.node_of("db") is not None, what="db placed")
    assert cluster.node_of("db") == "n3"
    provisioned = cluster.server.get("PersistentVolumeClaim", "local", "default")
    assert provisioned is not None
    annotations = provisioned["metadata"].get("annotations") or {}
    assert annotations.get("volume.kubernetes.io/selected-node") == "n3"

    # volsched read Longhorn's objects and wrote none of them.
    assert longhorn_state(cluster) == before
    assert cluster.server.list("Replica", api_version="volsched.io/v1alpha1") == []


async def test_a_strict_local_claim_no_disk_can_hold_waits_for_longhorn(
    cluster: Cluster,
) -> None:
    cluster.server.load(longhorn_cluster(over_provisioning=None))
    await cluster.start_daemon()
    cluster.server.load([claim("huge", "longhorn-local", "400Gi"), pod("db", ("huge",))])

    def failed() -> list[str]:
        return [
            str(e.get("note"))
            for e in cluster.events_for("db")
            if e.get("reason") == "FailedScheduling"
        ]

    messages = await eventually(failed, what="FailedScheduling event")
    assert messages[0] == (
        "0/3 nodes are available: 3 node(s) did not have enough free storage."
        " no new claims to deallocate, preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
    )
    assert cluster.node_of("db") is None
    claim_now = cluster.server.get("PersistentVolumeClaim", "huge", "default")
    assert claim_now is not None
    assert "volume.kubernetes.io/selected-node" not in (
        claim_now["metadata"].get("annotations") or {}
    )

    # Longhorn's admin allows over-provisioning: n3's 300 GiB disk may now promise
    # 600 GiB, and the waiting pod is tried again and placed there.
    cluster.server.load([longhorn_setting("storage-over-provisioning-percentage", "200")])
    await eventually(lambda: cluster.node_of("db") is not None, what="db placed", timeout=15)
    assert cluster.node_of("db") == "n3"
