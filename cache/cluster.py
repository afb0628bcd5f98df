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

from volsched.cache.node_info import NodeInfo
from volsched.cache.node_table import NodeTable
from volsched.cache.objects.core import Node, Pod
from volsched.cache.objects.meta import is_older_version
from volsched.cache.objects.storage import StorageClass
from volsched.cache.plain_kinds import PlainKinds
from volsched.cache.pod_placement import PodPlacement
from volsched.cache.storage_systems import STORAGE_KINDS, StorageObjects
from volsched.cache.volume_objects import VolumeObjects


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

    The state lives in parts, each with its own module: the nodes (``NodeTable``), the
    pods and their placement with the assume layer for pods (``PodPlacement``), PVs and
    claims (``VolumeObjects``), the storage systems (``StorageObjects``) and the kinds kept
    as sent (``PlainKinds``). Here are the dispatch by kind, the change counters, and
    the parts' maps under the names scheduling reads them by (the same objects, so no
    lookup through a part on the hot path).
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
        self.volume_objects = VolumeObjects()
        self.pv_index = self.volume_objects.pv_index
        self.pvs = self.volume_objects.pvs
        self.pvcs = self.volume_objects.pvcs
        self.plain = PlainKinds()
        self.storage_classes = self.plain.storage_classes
        self.csi_nodes = self.plain.csi_nodes
        self.csi_drivers = self.plain.csi_drivers
        self.csi_capacities = self.plain.csi_capacities
        self.services = self.plain.services
        self.namespaces = self.plain.namespaces
        self.workload_sets = self.plain.workload_sets
        self.priority_classes = self.plain.priority_classes
        self.disruption_budgets = self.plain.disruption_budgets
        self.device_classes = self.plain.device_classes
        self.resource_claims = self.plain.resource_claims
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
            self.plain.put(kind, obj)
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
            self.plain.remove(kind, key)

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
        if kind in STORAGE_KINDS:
            return self.storage.store(kind).get(key)
        return self.plain.get(kind, key)

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
        if kind in STORAGE_KINDS:
            return iter(self.storage.store(kind).items())
        return self.plain.items(kind)

    def objects(self, kind: str) -> Iterator[Any]:
        if kind == "Node":
            return (info.node for info in self.nodes.values())
        if kind == "Pod":
            return iter(self.pods.values())
        if kind == "PersistentVolume":
            return self.pvs.values()
        if kind == "PersistentVolumeClaim":
            return self.pvcs.values()
        if kind in STORAGE_KINDS:
            return iter(self.storage.store(kind).values())
        return self.plain.values(kind)

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
        return self.volume_objects.pvs_prebound_to(claim_key)

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
