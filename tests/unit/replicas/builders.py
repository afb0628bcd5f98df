"""Builders for replica-scheduling tests: raw objects as users write them, parsed.

Tests describe hosts (a Kubernetes Node and its StorageNode) with their disks and get
back a ``ReplicaCluster``; everything goes through the real parsers.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from volsched.cache.objects.core import Node, parse_node
from volsched.cache.objects.replicated import (
    Replica,
    StorageNode,
    Volume,
    parse_replica,
    parse_storage_node,
    parse_volume,
)
from volsched.scheduling.replicas import ReplicaCluster, ReplicaSchedulingSettings, ScheduledSpace
from volsched.scheduling.replicas import schedule_volume as _schedule_volume
from volsched.scheduling.replicas.results import VolumePlacement

GB = 10**9
Raw = dict[str, Any]


@dataclass(frozen=True)
class Disk:
    """One disk; ``available`` defaults to ``maximum`` (an empty disk)."""

    maximum: int
    available: int | None = None
    scheduled: int = 0
    reserved: int = 0
    tags: tuple[str, ...] = ()
    allow: bool = True
    evicting: bool = False
    reported: bool = True


@dataclass(frozen=True)
class Host:
    name: str
    zone: str | None = "z1"
    disks: dict[str, Disk] = field(default_factory=lambda: {"d1": Disk(100 * GB)})
    tags: tuple[str, ...] = ()
    ready: bool = True
    storage_ready: bool = True
    cordoned: bool = False
    allow: bool = True
    evicting: bool = False
    compute_only: bool = False
    kube: bool = True
    storage: bool = True


def kube_node(host: Host) -> Node:
    labels = {"kubernetes.io/hostname": host.name}
    if host.zone is not None:
        labels["topology.kubernetes.io/zone"] = host.zone
    return parse_node(
        {
            "metadata": {"name": host.name, "labels": labels},
            "spec": {"unschedulable": host.cordoned},
            "status": {
                "allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True" if host.ready else "False"}],
            },
        }
    )


def raw_storage_node(host: Host) -> Raw:
    spec_disks: Raw = {}
    status_disks: Raw = {}
    for name, disk in host.disks.items():
        spec_disks[name] = {
            "path": f"/mnt/{name}",
            "allowScheduling": disk.allow,
            "evictionRequested": disk.evicting,
            "storageReserved": disk.reserved,
            "tags": list(disk.tags),
        }
        if disk.reported:
            status_disks[name] = {
                "storageMaximum": disk.maximum,
                "storageAvailable": disk.maximum if disk.available is None else disk.available,
                "storageScheduled": disk.scheduled,
            }
    return {
        "apiVersion": "volsched.io/v1alpha1",
        "kind": "StorageNode",
        "metadata": {"name": host.name},
        "spec": {
            "allowScheduling": host.allow,
            "evictionRequested": host.evicting,
            "computeOnly": host.compute_only,
            "tags": list(host.tags),
            "disks": spec_disks,
        },
        "status": {"ready": host.storage_ready, "disks": status_disks},
    }


def storage_node(host: Host) -> StorageNode:
    return parse_storage_node(raw_storage_node(host))


def volume(name: str, size: int, replicas: int = 3, **spec: Any) -> Volume:
    status = spec.pop("status", {})
    return parse_volume(
        {
            "metadata": {"name": name},
            "spec": {"size": size, "numberOfReplicas": replicas, **spec},
            "status": status,
        }
    )


def replica(name: str, volume_name: str, node: str = "", disk: str = "", **spec: Any) -> Replica:
    status = spec.pop("status", {})
    metadata: Raw = {"name": name}
    if "deletionTimestamp" in spec:
        metadata["deletionTimestamp"] = spec.pop("deletionTimestamp")
    return parse_replica(
        {
            "metadata": metadata,
            "spec": {"volumeName": volume_name, "nodeID": node, "diskID": disk, **spec},
            "status": status,
        }
    )


def cluster(hosts: list[Host], replicas: list[Replica] | None = None) -> ReplicaCluster:
    return ReplicaCluster(
        [kube_node(h) for h in hosts if h.kube],
        [storage_node(h) for h in hosts if h.storage],
        replicas or [],
    )


def settings(**overrides: Any) -> ReplicaSchedulingSettings:
    return ReplicaSchedulingSettings(**overrides)


def schedule(
    vol: Volume,
    hosts: list[Host],
    replicas: list[Replica] | None = None,
    now: float = 0.0,
    **setting_overrides: Any,
) -> VolumePlacement | None:
    """One volume against a fresh cluster and an empty pass."""
    return _schedule_volume(
        vol, cluster(hosts, replicas), settings(**setting_overrides), now, ScheduledSpace()
    )


def spots(result: VolumePlacement | None) -> list[tuple[str, str]]:
    assert result is not None
    return [(p.node, p.disk) for p in result.placed]


def zones_hosts(zones: int, per_zone: int, disk: Disk | None = None) -> list[Host]:
    """``per_zone`` hosts in each of ``zones`` zones, one disk each."""
    return [
        Host(f"n{z}{i}", zone=f"z{z}", disks={"d1": disk or Disk(100 * GB)})
        for z in range(1, zones + 1)
        for i in range(1, per_zone + 1)
    ]
