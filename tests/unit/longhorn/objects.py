"""Longhorn objects shaped as longhorn-manager writes them (``longhorn.io/v1beta2``), for
unit and integration tests: namespaced in ``longhorn-system``, int64 byte counts,
condition lists, a Volume's size as a string, disks named by UUID in Replicas."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tests.support import pv, pvc, storage_class

Raw = dict[str, Any]
API = "longhorn.io/v1beta2"
NAMESPACE = "longhorn-system"
DRIVER = "driver.longhorn.io"
GIB = 1024**3


@dataclass(frozen=True)
class LonghornDisk:
    maximum: int = 100 * GIB
    available: int = 100 * GIB
    scheduled: int = 0
    reserved: int = 0
    tags: tuple[str, ...] = ()
    allow: bool = True
    ready: bool = True


def _meta(name: str) -> Raw:
    return {"name": name, "namespace": NAMESPACE}


def _condition(kind: str, ok: bool) -> Raw:
    return {"type": kind, "status": "True" if ok else "False", "reason": "", "message": ""}


def disk_uuid(node: str, disk: str) -> str:
    return f"{node}-{disk}-uuid"


def longhorn_node(
    name: str,
    disks: dict[str, LonghornDisk] | None = None,
    *,
    ready: bool = True,
    schedulable: bool = True,
    allow: bool = True,
    tags: tuple[str, ...] = (),
) -> Raw:
    disks = {"default-disk-1": LonghornDisk()} if disks is None else disks
    return {
        "apiVersion": API,
        "kind": "Node",
        "metadata": _meta(name),
        "spec": {
            "name": name,
            "allowScheduling": allow,
            "evictionRequested": False,
            "tags": list(tags),
            "disks": {
                disk_name: {
                    "diskType": "filesystem",
                    "path": f"/var/lib/longhorn/{disk_name}",
                    "allowScheduling": disk.allow,
                    "evictionRequested": False,
                    "storageReserved": disk.reserved,
                    "tags": list(disk.tags),
                }
                for disk_name, disk in disks.items()
            },
        },
        "status": {
            "conditions": [_condition("Ready", ready), _condition("Schedulable", schedulable)],
            "diskStatus": {
                disk_name: {
                    "conditions": [
                        _condition("Ready", disk.ready),
                        _condition("Schedulable", True),
                    ],
                    "diskUUID": disk_uuid(name, disk_name),
                    "storageMaximum": disk.maximum,
                    "storageAvailable": disk.available,
                    "storageScheduled": disk.scheduled,
                    "scheduledReplica": {},
                }
                for disk_name, disk in disks.items()
            },
            "region": "",
            "zone": "",
        },
    }


def longhorn_volume(
    name: str,
    size: int = 10 * GIB,
    replicas: int = 3,
    locality: str = "disabled",
    *,
    state: str = "attached",
    robustness: str = "healthy",
    node: str = "",
    **spec: Any,
) -> Raw:
    return {
        "apiVersion": API,
        "kind": "Volume",
        "metadata": _meta(name),
        "spec": {
            "size": str(size),
            "numberOfReplicas": replicas,
            "dataLocality": locality,
            "frontend": "blockdev",
            "nodeSelector": [],
            "diskSelector": [],
            "replicaSoftAntiAffinity": "ignored",
            "replicaZoneSoftAntiAffinity": "ignored",
            "replicaDiskSoftAntiAffinity": "ignored",
            **spec,
        },
        "status": {
            "state": state,
            "robustness": robustness,
            "currentNodeID": node,
            "actualSize": 0,
            "lastDegradedAt": "",
        },
    }


def longhorn_replica(
    name: str,
    volume: str,
    node: str,
    disk: str = "default-disk-1",
    *,
    state: str = "running",
    failed_at: str = "",
    healthy_at: str = "2026-11-01T10:00:00Z",
    **spec: Any,
) -> Raw:
    return {
        "apiVersion": API,
        "kind": "Replica",
        "metadata": _meta(name),
        "spec": {
            "volumeName": volume,
            "nodeID": node,
            "diskID": disk_uuid(node, disk),
            "diskPath": f"/var/lib/longhorn/{disk}",
            "dataDirectoryName": f"{volume}-abcdef01",
            "failedAt": failed_at,
            "healthyAt": healthy_at,
            "rebuildRetryCount": 0,
            "evictionRequested": False,
            "active": True,
            **spec,
        },
        "status": {"currentState": state, "ownerID": node},
    }


def longhorn_setting(name: str, value: str) -> Raw:
    return {"apiVersion": API, "kind": "Setting", "metadata": _meta(name), "value": value}


def longhorn_class(name: str = "longhorn", **parameters: str) -> Raw:
    """A WaitForFirstConsumer class of Longhorn's CSI driver."""
    return storage_class(name, provisioner=DRIVER, parameters=parameters or None)


def longhorn_claim(claim: str, volume: str, namespace: str = "default") -> list[Raw]:
    """A claim bound to a PV of the Longhorn Volume ``volume`` (Longhorn names the PV
    after the volume)."""
    return [
        pv(
            volume,
            "10Gi",
            storage_class="longhorn",
            claim=(namespace, claim),
            phase="Bound",
            spec={"csi": {"driver": DRIVER, "volumeHandle": volume}},
        ),
        pvc(claim, "10Gi", "longhorn", namespace, volume_name=volume, bound=True),
    ]
