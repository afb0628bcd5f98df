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
from volsched.cache.node_changes import NodeChanges
from volsched.cache.node_info import NodeInfo, zone_key
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
from volsched.cache.pod_index import PodIndex
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
    """Informer objects plus assumed changes, with the indexes scheduling needs."""

    def __init__(self) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        # Placed pods by label, nodes with affinity pods (kept by NodeInfo).
        self.pod_index = PodIndex()
        # Every node change, by name, for the scheduler's verdicts kept per pod shape.
        self.node_changes = NodeChanges()
        # Bumped when a node comes, goes or changes labels (not on status updates).
        self.node_labels_generation = 0
        self.nodes_with_affinity_pods = self.pod_index.nodes_with_affinity_pods
        self.pods: dict[str, Pod] = {}
        self.pending: dict[str, Pod] = {}
        self.assumed_pods: dict[str, str] = {}
        # Node name -> keys of the pods placed there (bound or assumed, not terminal),
        # whether or not the node is known yet: a node that arrives after its pods (a
        # relist lists pods and nodes at once) takes them without a scan of every pod.
        self._placement: defaultdict[str, dict[str, None]] = defaultdict(dict)
        # Bound pods the informer has not confirmed yet, and when to stop waiting.
        self.assumed_expiry: dict[str, float] = {}
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
        self._node_order: list[NodeInfo] | None = None
        # How many nodes list each image name in status.images (ImageLocality's spread;
        # kube-scheduler's cache keeps the same image states).
        self.image_nodes: dict[str, int] = {}
        # Each image name's size as first seen on a node that lists it, kept while any
        # node does: kube-scheduler's cache scores every node with this one size.
        self.image_sizes: dict[str, int] = {}
        self.generation = 0
        # Bumped when anything the replica scheduler reads changes (nodes, storage
        # nodes, replicas), so its derived view is rebuilt only then.
        self.storage_generation = 0

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
            return True
        handler = getattr(self, f"_upsert_{kind}", None)
        if handler is not None:
            handler(obj)
            return True
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
            return
        handler = getattr(self, f"_delete_{kind}", None)
        if handler is not None:
            handler(key)
            return
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

    def _count_images(self, images: dict[str, int], change: int) -> None:
        counts = self.image_nodes
        sizes = self.image_sizes
        for image, size in images.items():
            count = counts.get(image, 0) + change
            if count > 0:
                counts[image] = count
                sizes.setdefault(image, size)
            else:
                counts.pop(image, None)
                sizes.pop(image, None)

    def _upsert_Node(self, node: Node) -> None:
        self.storage_generation += 1
        info = self.nodes.get(node.meta.name)
        old_images = info.node.images if info is not None else {}
        if old_images != node.images:
            self._count_images(old_images, -1)
            self._count_images(node.images, 1)
        if info is None or info.node.meta.labels != node.meta.labels:
            self.node_labels_generation += 1
        if info is None:
            info = NodeInfo(node, self.pod_index, self.node_changes)
            self.nodes[node.meta.name] = info
            self._node_order = None
            for key in self._placement.get(node.meta.name, ()):
                info.add_pod(self.pods[key])
        else:
            if info.zone != zone_key(node.meta.labels):
                self._node_order = None
            info.set_node(node)
        self.pv_index.upsert_node(node.meta.name, node.meta.labels)

    def _delete_Node(self, name: str) -> None:
        self.storage_generation += 1
        info = self.nodes.pop(name, None)
        if info is not None:
            self._count_images(info.node.images, -1)
            self._node_order = None
            self.node_labels_generation += 1
            self.pod_index.node_removed(info)
        self.pv_index.delete_node(name)

    def _placed_on(self, pod: Pod) -> str:
        if pod.terminal:
            return ""
        return pod.node_name or self.assumed_pods.get(pod.meta.key, "")

    def _placement_of(self, key: str) -> str:
        pod = self.pods.get(key)
        return self._placed_on(pod) if pod is not None else ""

    def _placed(self, key: str, before: str) -> None:
        """Keep ``_placement`` right after a change that may have moved pod ``key``
        (placed on ``before`` until then)."""
        after = self._placement_of(key)
        if after == before:
            return
        if before:
            placed = self._placement[before]
            placed.pop(key, None)
            if not placed:
                del self._placement[before]
        if after:
            self._placement[after][key] = None

    def _upsert_Pod(self, pod: Pod) -> None:
        key = pod.meta.key
        before = self._placement_of(key)
        self._put_pod(key, pod)
        self._placed(key, before)

    def _put_pod(self, key: str, pod: Pod) -> None:
        old = self.pods.get(key)
        if old is not None:
            old_node = self._placed_on(old)
            if old_node and old_node in self.nodes:
                self.nodes[old_node].remove_pod(key)
        if pod.node_name and key in self.assumed_pods:
            # The binding is confirmed: the informer copy takes over from the assumption.
            del self.assumed_pods[key]
            self.assumed_expiry.pop(key, None)
        self.pods[key] = pod
        node = self._placed_on(pod)
        if node and node in self.nodes:
            self.nodes[node].add_pod(pod)
        if not pod.node_name and not pod.terminal and key not in self.assumed_pods:
            self.pending[key] = pod
        else:
            self.pending.pop(key, None)

    def _delete_Pod(self, key: str) -> None:
        before = self._placement_of(key)
        self._drop_pod(key)
        self._placed(key, before)

    def _drop_pod(self, key: str) -> None:
        old = self.pods.pop(key, None)
        self.pending.pop(key, None)
        self.assumed_pods.pop(key, None)
        self.assumed_expiry.pop(key, None)
        if old is None:
            return
        for info in self.nodes.values() if not old.node_name else [self.nodes.get(old.node_name)]:
            if info is not None and key in info.pods:
                info.remove_pod(key)

    def _delete_PersistentVolume(self, name: str) -> None:
        self.pvs.informer_delete(name)

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

    def _delete_PersistentVolumeClaim(self, key: str) -> None:
        self.pvcs.informer_delete(key)

    # -- queries ---------------------------------------------------------------------

    def node_list(self) -> list[NodeInfo]:
        """Nodes interleaved across zones, as kube-scheduler's node tree lists them.

        Zones in name order, nodes by name inside a zone, then one node of each zone in
        turn, so that stopping early still sees every zone.
        """
        if self._node_order is None:
            zones: dict[str, list[NodeInfo]] = defaultdict(list)
            for name in sorted(self.nodes):
                info = self.nodes[name]
                zones[info.zone].append(info)
            ordered: list[NodeInfo] = []
            columns = [zones[zone] for zone in sorted(zones)]
            depth = max((len(column) for column in columns), default=0)
            for index in range(depth):
                for column in columns:
                    if index < len(column):
                        ordered.append(column[index])
            self._node_order = ordered
        return self._node_order

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

    # -- the assume layer for pods ---------------------------------------------------

    def assume_pod(self, pod: Pod, node_name: str) -> None:
        """Count a pod on a node before its binding is confirmed."""
        key = pod.meta.key
        if key in self.assumed_pods:
            self.forget_pod(key)  # one assumption per pod: never counted on two nodes
        before = self._placement_of(key)
        self.assumed_pods[key] = node_name
        self.pending.pop(key, None)
        self.pods.setdefault(key, pod)
        info = self.nodes.get(node_name)
        if info is not None:
            info.add_pod(pod)
        self._placed(key, before)
        self.generation += 1

    def finish_binding(self, key: str, expires_at: float) -> None:
        """The pod's binding was written; keep the assumption until the informer shows
        the pod bound, or until ``expires_at`` (kube-scheduler's assumed-pod TTL)."""
        if key in self.assumed_pods:
            self.assumed_expiry[key] = expires_at

    def expire_assumed(self, now: float) -> list[tuple[str, str]]:
        """Forget assumed pods whose binding was never confirmed in time; returns each
        one's key and the node it was assumed on."""
        expired = [key for key, deadline in self.assumed_expiry.items() if deadline <= now]
        forgotten = []
        for key in expired:
            del self.assumed_expiry[key]
            node_name = self.assumed_pods.get(key, "")
            self.forget_pod(key)
            forgotten.append((key, node_name))
        return forgotten

    def forget_pod(self, key: str) -> None:
        """Undo ``assume_pod`` (the binding failed): the pod is pending again."""
        before = self._placement_of(key)
        node_name = self.assumed_pods.pop(key, None)
        self.assumed_expiry.pop(key, None)
        if node_name is None:
            return
        info = self.nodes.get(node_name)
        if info is not None:
            info.remove_pod(key)
        pod = self.pods.get(key)
        if pod is not None and not pod.node_name and not pod.terminal:
            self.pending[key] = pod
        self._placed(key, before)
        self.generation += 1
