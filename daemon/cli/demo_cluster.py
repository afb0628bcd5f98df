"""The sample cluster ``volsched demo`` runs on: 9 nodes in 3 zones, local NVMe PVs, a
replicated StorageClass on hyperconverged storage, and pods arriving over a few seconds
— one of which cannot fit anywhere."""

from __future__ import annotations

from typing import Any

Raw = dict[str, Any]
ZONES = ("zone-a", "zone-b", "zone-c")
GROUP = "volsched.io"
VERSION = "v1alpha1"
GI = 2**30


def storage_crds() -> list[Raw]:
    """The three volsched.io kinds, served by the emulator (the full schemas with their
    validation are in deploy/crds/ for real clusters)."""
    crds = []
    for kind, plural in (
        ("StorageNode", "storagenodes"),
        ("Volume", "volumes"),
        ("Replica", "replicas"),
    ):
        crds.append(
            {
                "apiVersion": "apiextensions.k8s.io/v1",
                "kind": "CustomResourceDefinition",
                "metadata": {"name": f"{plural}.{GROUP}"},
                "spec": {
                    "group": GROUP,
                    "scope": "Cluster",
                    "names": {
                        "kind": kind,
                        "plural": plural,
                        "singular": kind.lower(),
                        "listKind": f"{kind}List",
                    },
                    "versions": [
                        {
                            "name": VERSION,
                            "served": True,
                            "storage": True,
                            "subresources": {"status": {}},
                            "schema": {
                                "openAPIV3Schema": {
                                    "type": "object",
                                    "x-kubernetes-preserve-unknown-fields": True,
                                }
                            },
                        }
                    ],
                },
            }
        )
    return crds


def _node(name: str, zone: str) -> Raw:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "topology.kubernetes.io/zone": zone,
                "topology.kubernetes.io/region": "demo",
            },
        },
        "spec": {},
        "status": {
            "allocatable": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _storage_node(name: str) -> Raw:
    return {
        "apiVersion": f"{GROUP}/{VERSION}",
        "kind": "StorageNode",
        "metadata": {"name": name},
        "spec": {
            "allowScheduling": True,
            "tags": ["demo"],
            "disks": {
                "nvme-0": {
                    "path": "/mnt/nvme0",
                    "allowScheduling": True,
                    "storageReserved": "10Gi",
                    "tags": ["ssd"],
                },
                "hdd-0": {
                    "path": "/mnt/hdd0",
                    "allowScheduling": True,
                    "storageReserved": "50Gi",
                    "tags": ["hdd"],
                },
            },
        },
        "status": {
            "ready": True,
            "disks": {
                "nvme-0": {
                    "storageMaximum": 400 * GI,
                    "storageAvailable": 360 * GI,
                    "storageScheduled": 0,
                },
                "hdd-0": {
                    "storageMaximum": 2000 * GI,
                    "storageAvailable": 1800 * GI,
                    "storageScheduled": 0,
                },
            },
        },
    }


def _local_pv(node: str, index: int, size_gi: int) -> Raw:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": f"local-{node}-{index}"},
        "spec": {
            "capacity": {"storage": f"{size_gi}Gi"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": "local-nvme",
            "local": {"path": f"/mnt/disks/ssd{index}"},
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


def _class(name: str, provisioner: str, parameters: dict[str, str] | None = None) -> Raw:
    body: Raw = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
        "reclaimPolicy": "Delete",
    }
    if parameters:
        body["parameters"] = parameters
    return body


def cluster_objects() -> list[Raw]:
    """Everything that exists before the first pod arrives."""
    objects: list[Raw] = [*storage_crds()]
    objects.append(_class("local-nvme", "kubernetes.io/no-provisioner"))
    objects.append(
        _class(
            "replicated",
            "replicated.volsched.io",
            {"numberOfReplicas": "3", "dataLocality": "best-effort", "diskSelector": "hdd"},
        )
    )
    objects.append(
        _class(
            "replicated-local",
            "replicated.volsched.io",
            {"numberOfReplicas": "1", "dataLocality": "strict-local", "diskSelector": "ssd"},
        )
    )
    for zone_index, zone in enumerate(ZONES):
        for slot in range(1, 4):
            name = f"node-{zone[-1]}{slot}"
            objects.append(_node(name, zone))
            objects.append(_storage_node(name))
            if slot == 1 or zone_index == 0:
                objects.append(_local_pv(name, 0, 100))
                objects.append(_local_pv(name, 1, 200))
    objects.append({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "shop"}})
    return objects


def _claim(namespace: str, name: str, storage_class: str, size: str) -> Raw:
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


def _pod(
    namespace: str,
    name: str,
    cpu: str,
    memory: str,
    claims: list[str],
    labels: dict[str, str] | None = None,
) -> Raw:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "labels": {"app": name.rsplit("-", 1)[0], **(labels or {})},
        },
        "spec": {
            "schedulerName": "volsched",
            "containers": [
                {
                    "name": "main",
                    "image": "registry.example/demo:1",
                    "resources": {"requests": {"cpu": cpu, "memory": memory}},
                }
            ],
            "volumes": [
                {"name": f"data{i}", "persistentVolumeClaim": {"claimName": claim}}
                for i, claim in enumerate(claims)
            ],
        },
    }


def arrivals() -> list[tuple[float, list[Raw]]]:
    """(seconds after start, objects to create): claims with their pods."""
    waves: list[tuple[float, list[Raw]]] = []
    for index in range(3):
        claim = f"data-postgres-{index}"
        waves.append(
            (
                0.3 * index,
                [
                    _claim("shop", claim, "replicated", "50Gi"),
                    _pod("shop", f"postgres-{index}", "2", "8Gi", [claim]),
                ],
            )
        )
    for index in range(3):
        claim = f"data-kafka-{index}"
        waves.append(
            (
                1.0 + 0.3 * index,
                [
                    _claim("shop", claim, "local-nvme", "80Gi"),
                    _pod("shop", f"kafka-{index}", "1", "4Gi", [claim]),
                ],
            )
        )
    waves.append(
        (
            2.0,
            [
                _claim("shop", "cache-redis-0", "replicated-local", "20Gi"),
                _pod(
                    "shop",
                    "redis-0",
                    "500m",
                    "2Gi",
                    ["cache-redis-0"],
                    {"volsched.io/locality": "strict"},
                ),
            ],
        )
    )
    for index in range(3):
        waves.append((2.2 + 0.2 * index, [_pod("shop", f"web-{index}", "500m", "512Mi", [])]))
    waves.append(
        (
            3.0,
            [
                _claim("shop", "data-warehouse-0", "replicated", "5Ti"),
                _pod("shop", "warehouse-0", "4", "16Gi", ["data-warehouse-0"]),
            ],
        )
    )
    return waves
