"""Raw manifests for the integration tests (what a user would kubectl apply)."""

from __future__ import annotations

from typing import Any

Raw = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
STORAGE_API = "volsched.io/v1alpha1"
GI = 2**30


def node(name: str, zone: str = "zone-a", cpu: str = "4") -> Raw:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, ZONE: zone}},
        "status": {
            "allocatable": {"cpu": cpu, "memory": "16Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def storage_class(
    name: str, provisioner: str = "kubernetes.io/no-provisioner", **params: str
) -> Raw:
    body: Raw = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
    }
    if params:
        body["parameters"] = params
    return body


def local_pv(name: str, node: str, size: str = "10Gi", storage_class: str = "local") -> Raw:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name},
        "spec": {
            "capacity": {"storage": size},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": storage_class,
            "local": {"path": f"/mnt/{name}"},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "kubernetes.io/hostname",
                                    "operator": "In",
                                    "values": [node],
                                }
                            ]
                        }
                    ]
                }
            },
        },
        "status": {"phase": "Available"},
    }


def claim(
    name: str, storage_class: str = "local", size: str = "5Gi", namespace: str = "default"
) -> Raw:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": storage_class,
            "resources": {"requests": {"storage": size}},
        },
    }


def pod(
    name: str, claims: tuple[str, ...] = (), cpu: str = "100m", namespace: str = "default"
) -> Raw:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "schedulerName": "volsched",
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}
            ],
            "volumes": [
                {"name": f"v{i}", "persistentVolumeClaim": {"claimName": c}}
                for i, c in enumerate(claims)
            ],
        },
    }


def storage_node(name: str, gibibytes: int = 100) -> Raw:
    """volsched's StorageNode with one schedulable disk ``d1``, empty and ready."""
    return {
        "apiVersion": STORAGE_API,
        "kind": "StorageNode",
        "metadata": {"name": name},
        "spec": {
            "allowScheduling": True,
            "disks": {"d1": {"path": "/mnt/d1", "allowScheduling": True}},
        },
        "status": {
            "ready": True,
            "disks": {
                "d1": {
                    "storageMaximum": gibibytes * GI,
                    "storageAvailable": gibibytes * GI,
                    "storageScheduled": 0,
                }
            },
        },
    }
