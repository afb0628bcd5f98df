"""The local PersistentVolume the benchmarks make: a path on one node, reachable from
that node only (node affinity on its hostname), as the local-static-provisioner makes
them."""

from __future__ import annotations

from typing import Any

HOSTNAME = "kubernetes.io/hostname"


def local_pv_manifest(
    name: str,
    node: str,
    size_gi: int,
    storage_class: str,
    path: str,
    labels: dict[str, str] | None = None,
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": dict(labels or {})},
        "spec": {
            "capacity": {"storage": f"{size_gi}Gi"},
            "accessModes": ["ReadWriteOnce"],
            "volumeMode": "Filesystem",
            "persistentVolumeReclaimPolicy": "Retain",
            "storageClassName": storage_class,
            "local": {"path": path},
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {"key": HOSTNAME, "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                }
            },
        },
    }
