"""The two-layer cluster cache the scheduler reads.

Layer 1 is what the API server said (filled by the daemon's watchers, or by a snapshot in
``simulate``). Layer 2 is what this scheduler assumed on top: pods placed on nodes, PVs
given a claimRef, claims given a selected node (see ``volsched.cache.assumed`` for the rules).
Reads return the assumed copy unless the API server has since sent something newer.

Everything is indexed for the questions a scheduling cycle asks: the nodes in a stable
zone-interleaved order, each node's pods and requests, the PVs a node can reach per
StorageClass, the PVs pre-bound to a claim.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from volsched.cache.assumed import AssumeCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.node_table import NodeTable
from volsched.cache.objects.core import Node, Pod
from volsched.cache.objects.meta import is_older_version
from volsched.cache.objects.policy import PodDisruptionBudget
from volsched.cache.objects.storage import (
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from volsched.cache.objects.workloads import Namespace, PriorityClass, Service, WorkloadSet
from volsched.cache.pod_placement import PodPlacement
from volsched.cache.pv_index import PersistentVolumeIndex
from volsched.cache.storage_systems import STORAGE_KINDS, StorageObjects


@dataclass(frozen=True, slots=True)
class AssumedReplica:
    """A replica placement this scheduler decided and the storage agent has not created.

    ``synced`` is true for the replicas of a brand-new (empty) volume and false for a new
    copy of a volume that holds data, which must rebuild before it can serve.
    """

    volume: str
    node: str
    disk: str
    synced: bool


class ClusterCache:
    """Informer objects plus assumed changes, with the indexes scheduling needs.

    The nodes (``NodeTable``), the pods and their placement with the assume layer for
    pods (``PodPlacement``) and the storage systems (``StorageObjects``) live in parts
    of their own; their maps are kept here under the names scheduling reads them by
    (the same objects, so no lookup through a part on the hot path).
    """

    def __init__(self) -> None:
        self.node_table = NodeTable()
        self.nodes = self.node_table.nodes
        self.pod_index = self.node_table.pod_index
        self.node_changes = self.node_table.node_changes
        self.nodes_with_affinity_pods = self.pod_index.nodes_with_affinity_pods
        self.image_nodes = self.node_table.image_nodes
        self.image_sizes = self.node_table.image_sizes
        self.placement = PodPlacement(self.nodes)
        self.pods = self.placement.pods
        self.pending = self.placement.pending
        self.assumed_pods = self.placement.assumed_pods
        self.assumed_expiry = self.placement.assumed_expiry
        self.pv_index = PersistentVolumeIndex()
        self._claim_pvs: dict[str, set[str]] = defaultdict(set)
        self.pvs: AssumeCache[PersistentVolume] = AssumeCache("PersistentVolume", self._pv_changed)
        self.pvcs: AssumeCache[PersistentVolumeClaim] = AssumeCache("PersistentVolumeClaim")
        self.storage_classes: dict[str, StorageClass] = {}
        self.csi_nodes: dict[str, CSINode] = {}
        self.csi_drivers: dict[str, CSIDriver] = {}
        self.csi_capacities: dict[str, CSIStorageCapacity] = {}
        self.services: dict[str, Service] = {}
        self.namespaces: dict[str, Namespace] = {}
        self.workload_sets: dict[tuple[str, str], WorkloadSet] = {}
        self.priority_classes: dict[str, PriorityClass] = {}
        self.disruption_budgets: dict[str, PodDisruptionBudget] = {}
        # Kinds registered by name only (see ``cache.objects.registry.register``).
        self.custom: dict[str, dict[str, Any]] = defaultdict(dict)
        # volsched's and Longhorn's storage objects, each in the store of its owner.
        self.storage = StorageObjects()
        self.replicas_by_volume = self.storage.replicas_by_volume
        self.assumed_replicas: dict[str, list[AssumedReplica]] = defaultdict(list)
        self.generation = 0
        # Bumped when anything the replica scheduler reads changes (nodes, storage
        # nodes, replicas), so its derived view is rebuilt only then.
        self.storage_generation = 0

    @property
    def node_labels_generation(self) -> int:
        """Bumped when a node comes, goes or changes labels (not on status updates)."""
        return self.node_table.labels_generation

    # -- ingestion -------------------------------------------------------------------

    def upsert(self, kind: str, obj: Any) -> bool:
        """Apply an add or update of one object from the API server (layer 1). False
        when the cache already holds a newer revision: an event that arrives late (the
        watch behind a write's own answer) changes nothing."""
        if kind == "PersistentVolume":
            return self.pvs.informer_upsert(obj.meta.name, obj) and self._changed()
        if kind == "PersistentVolumeClaim":
            return self.pvcs.informer_upsert(obj.meta.key, obj) and self._changed()
        held = self.get(kind, obj.meta.key)
        if held is not None and is_older_version(
            obj.meta.resource_version, held.meta.resource_version
        ):
            return False
        self.generation += 1
        if kind in STORAGE_KINDS:
            self.storage_generation += 1
            self.storage.upsert(kind, obj)
        elif kind == "Node":
            self._upsert_node(obj)
        elif kind == "Pod":
            self.placement.upsert(obj)
        else:
            store = self._simple_store(kind)
            store[
                obj.meta.key if kind not in ("ReplicaSet", "StatefulSet") else (kind, obj.meta.key)
            ] = obj
        return True

    def _changed(self) -> bool:
        self.generation += 1
        return True

    def delete(self, kind: str, key: str) -> None:
        """Apply a deletion from the API server."""
        self.generation += 1
        if kind in STORAGE_KINDS:
            self.storage_generation += 1
            self.storage.delete(kind, key)
        elif kind == "Node":
            self._delete_node(key)
        elif kind == "Pod":
            self.placement.delete(key)
        elif kind == "PersistentVolume":
            self.pvs.informer_delete(key)
        elif kind == "PersistentVolumeClaim":
            self.pvcs.informer_delete(key)
        else:
            store = self._simple_store(kind)
            store.pop(key if kind not in ("ReplicaSet", "StatefulSet") else (kind, key), None)

    def _simple_store(self, kind: str) -> dict[Any, Any]:
        stores: dict[str, dict[Any, Any]] = {
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
        }
        if kind in stores:
            return stores[kind]
        if kind in STORAGE_KINDS:
            return self.storage.store(kind)
        return self.custom[kind]

    def _upsert_node(self, node: Node) -> None:
        self.storage_generation += 1
        added = self.node_table.upsert(node)
        if added is not None:
            self.placement.node_added(added)
        self.pv_index.upsert_node(node.meta.name, node.meta.labels)

    def _delete_node(self, name: str) -> None:
        self.storage_generation += 1
        self.node_table.delete(name)
        self.pv_index.delete_node(name)

    def _pv_changed(self, old: PersistentVolume | None, new: PersistentVolume | None) -> None:
        if old is not None and old.claim_ref is not None:
            ref = old.claim_ref
            self._claim_pvs[f"{ref.namespace}/{ref.name}"].discard(old.meta.name)
        if new is None:
            if old is not None:
                self.pv_index.delete_pv(old.meta.name)
            return
        if new.claim_ref is not None:
            ref = new.claim_ref
            self._claim_pvs[f"{ref.namespace}/{ref.name}"].add(new.meta.name)
        self.pv_index.upsert_pv(new)

    def get(self, kind: str, key: str) -> Any:
        if kind == "Node":
            info = self.nodes.get(key)
            return info.node if info else None
        if kind == "Pod":
            return self.pods.get(key)
        if kind == "PersistentVolume":
            return self.pvs.get(key)
        if kind == "PersistentVolumeClaim":
            return self.pvcs.get(key)
        if kind in ("ReplicaSet", "StatefulSet"):
            return self.workload_sets.get((kind, key))
        return self._simple_store(kind).get(key)

    def informer_items(self, kind: str) -> Iterator[tuple[str, Any]]:
        """Layer 1 of one kind by key: what the API server said, without assumptions."""
        if kind == "Node":
            return ((name, info.node) for name, info in self.nodes.items())
        if kind == "Pod":
            return iter(self.pods.items())
        if kind == "PersistentVolume":
            return self.pvs.api_items()
        if kind == "PersistentVolumeClaim":
            return self.pvcs.api_items()
        if kind in ("ReplicaSet", "StatefulSet"):
            return ((key, w) for (k, key), w in self.workload_sets.items() if k == kind)
        return iter(self._simple_store(kind).items())

    def objects(self, kind: str) -> Iterator[Any]:
        if kind == "Node":
            return (info.node for info in self.nodes.values())
        if kind == "Pod":
            return iter(self.pods.values())
        if kind == "PersistentVolume":
            return self.pvs.values()
        if kind == "PersistentVolumeClaim":
            return self.pvcs.values()
        if kind in ("ReplicaSet", "StatefulSet"):
            return (w for (k, _), w in self.workload_sets.items() if k == kind)
        return iter(self._simple_store(kind).values())

    # -- storage systems -------------------------------------------------------------

    def longhorn_settings(self) -> dict[str, str]:
        """Longhorn's Settings by name (``storage-over-provisioning-percentage`` → "100")."""
        return self.storage.longhorn_settings()

    def assume_replicas(self, placements: list[AssumedReplica]) -> None:
        for placement in placements:
            self.assumed_replicas[placement.volume].append(placement)
        self.generation += 1

    def forget_replicas(self, placements: list[AssumedReplica]) -> None:
        for placement in placements:
            held = self.assumed_replicas.get(placement.volume)
            if held and placement in held:
                held.remove(placement)
        self.generation += 1

    # -- queries ---------------------------------------------------------------------

    def node_list(self) -> list[NodeInfo]:
        """Nodes interleaved across zones, as kube-scheduler's node tree lists them."""
        return self.node_table.node_list()

    def pvs_prebound_to(self, claim_key: str) -> set[str]:
        """PVs whose (latest) claimRef names this claim."""
        return self._claim_pvs.get(claim_key) or set()

    def default_storage_class(self) -> StorageClass | None:
        """The default class as the admission plugin picks it: newest, then by name."""
        defaults = [sc for sc in self.storage_classes.values() if sc.is_default]
        if not defaults:
            return None
        defaults.sort(key=lambda sc: (-sc.meta.creation_timestamp, sc.meta.name))
        return defaults[0]

    def pod_priority(self, pod: Pod) -> int:
        if pod.priority is not None:
            return pod.priority
        if pod.priority_class_name:
            pc = self.priority_classes.get(pod.priority_class_name)
            if pc is not None:
                return pc.value
        for pc in self.priority_classes.values():
            if pc.global_default:
                return pc.value
        return 0

    # -- the assume layer for pods (see ``PodPlacement``) ----------------------------

    def assume_pod(self, pod: Pod, node_name: str) -> None:
        """Count a pod on a node before its binding is confirmed."""
        self.placement.assume(pod, node_name)
        self.generation += 1

    def finish_binding(self, key: str, expires_at: float) -> None:
        """The pod's binding was written; keep the assumption until the informer shows
        the pod bound, or until ``expires_at`` (kube-scheduler's assumed-pod TTL)."""
        self.placement.finish_binding(key, expires_at)

    def expire_assumed(self, now: float) -> list[tuple[str, str]]:
        """Forget assumed pods whose binding was never confirmed in time; returns each
        one's key and the node it was assumed on."""
        forgotten = self.placement.expire(now)
        self.generation += len(forgotten)
        return forgotten

    def forget_pod(self, key: str) -> None:
        """Undo ``assume_pod`` (the binding failed): the pod is pending again."""
        if self.placement.forget(key):
            self.generation += 1
