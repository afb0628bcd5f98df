"""The kinds the cache keeps as the API server sent them: one map each, no index.

StorageClasses, CSI objects, Services, Namespaces, ReplicaSets and StatefulSets,
PriorityClasses, PodDisruptionBudgets, dynamic resource allocation's DeviceClasses and
ResourceClaims, and any kind registered by name only: nothing is
assumed over them and nothing is derived from them at ingestion, so a plain map per kind
is all they need. ReplicaSets and StatefulSets share one map (selector spreading reads
both), keyed by kind and key so the two never collide.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from typing import Any

from volsched.cache.objects.dra import DeviceClass, ResourceClaim
from volsched.cache.objects.policy import PodDisruptionBudget
from volsched.cache.objects.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    StorageClass,
)
from volsched.cache.objects.workloads import Namespace, PriorityClass, Service, WorkloadSet

WORKLOAD_KINDS = ("ReplicaSet", "StatefulSet")


class PlainKinds:
    """One map per kind, read and written by kind name."""

    def __init__(self) -> None:
        self.storage_classes: dict[str, StorageClass] = {}
        self.csi_nodes: dict[str, CSINode] = {}
        self.csi_drivers: dict[str, CSIDriver] = {}
        self.csi_capacities: dict[str, CSIStorageCapacity] = {}
        self.services: dict[str, Service] = {}
        self.namespaces: dict[str, Namespace] = {}
        self.workload_sets: dict[tuple[str, str], WorkloadSet] = {}
        self.priority_classes: dict[str, PriorityClass] = {}
        self.disruption_budgets: dict[str, PodDisruptionBudget] = {}
        self.device_classes: dict[str, DeviceClass] = {}
        self.resource_claims: dict[str, ResourceClaim] = {}
        # Kinds registered by name only (see ``cache.objects.registry.register``).
        self.custom: dict[str, dict[str, Any]] = defaultdict(dict)
        self._stores: dict[str, dict[Any, Any]] = {
            "StorageClass": self.storage_classes,
            "CSINode": self.csi_nodes,
            "CSIDriver": self.csi_drivers,
            "CSIStorageCapacity": self.csi_capacities,
            "Service": self.services,
            "Namespace": self.namespaces,
            "ReplicaSet": self.workload_sets,
            "StatefulSet": self.workload_sets,
            "PriorityClass": self.priority_classes,
            "PodDisruptionBudget": self.disruption_budgets,
            "DeviceClass": self.device_classes,
            "ResourceClaim": self.resource_claims,
        }

    def _store(self, kind: str) -> dict[Any, Any]:
        store = self._stores.get(kind)
        return self.custom[kind] if store is None else store

    def put(self, kind: str, obj: Any) -> None:
        key = obj.meta.key
        self._store(kind)[key if kind not in WORKLOAD_KINDS else (kind, key)] = obj

    def remove(self, kind: str, key: str) -> None:
        self._store(kind).pop(key if kind not in WORKLOAD_KINDS else (kind, key), None)

    def get(self, kind: str, key: str) -> Any:
        return self._store(kind).get(key if kind not in WORKLOAD_KINDS else (kind, key))

    def items(self, kind: str) -> Iterator[tuple[str, Any]]:
        if kind in WORKLOAD_KINDS:
            return ((key, w) for (k, key), w in self.workload_sets.items() if k == kind)
        return iter(self._store(kind).items())

    def values(self, kind: str) -> Iterator[Any]:
        if kind in WORKLOAD_KINDS:
            return (w for (k, _), w in self.workload_sets.items() if k == kind)
        return iter(self._store(kind).values())
