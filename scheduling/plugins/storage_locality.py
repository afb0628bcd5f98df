"""Pod locality for volsched's replicated volumes (Ondat semantics).

A pod whose claims are backed by replicated volumes should run where its data is:

- ``StorageNodeReady`` (filter): the node runs the storage and can serve it — it has a
  ready StorageNode that is not storage-cordoned, not draining and not compute-only;
- ``CheckVolumeLocality`` (filter, pods labelled ``strict``): the node holds a replica of
  every replicated volume the pod already has;
- ``VolumeLocality`` (score): per volume 15 on the primary replica's node, 10 on another
  replica's, 5 where there is none, 1 where the replica there holds no healthy data or
  the volume is faulted; the mean over the pod's volumes, rounded half away from zero,
  ×10 — what kube-scheduler adds for an Ondat-style extender at weight 1.

A replica holds healthy data when it has not failed, is in sync (for Longhorn: healthy
once, ``healthyAt`` set) and, while its volume is attached, runs. That is so whatever the
volume's robustness: a degraded volume's healthy replica is exactly where its pod should
run, and only its failed, stopped or rebuilding replicas score 1.

The pod's label ``volsched.io/locality`` (or ``storageos.com/locality``; ours wins)
is ``preferred`` (the default) or ``strict``.

Longhorn volumes (``driver.longhorn.io``) are served the same way from Longhorn's own
objects: Longhorn has no primary replica, so every node of a replica holding healthy data
earns the replica points; a ``strict-local`` volume makes the pod strict, as Longhorn can
then serve the volume only on its replica's node.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.cache.objects.longhorn import CSI_DRIVER as LONGHORN_DRIVER
from volsched.cache.objects.replicated import CSI_DRIVER as REPLICATED_DRIVER
from volsched.cache.objects.replicated import (
    DATA_LOCALITY_STRICT_LOCAL,
    ROBUSTNESS_DEGRADED,
    ROBUSTNESS_HEALTHY,
    Replica,
    StorageNode,
    Volume,
)
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.events import (
    ADD,
    ALL,
    NODE,
    REPLICA,
    STORAGE_NODE,
    UPDATE_NODE_CONDITION,
    VOLUME,
    ClusterEventWithHint,
    on,
)
from volsched.scheduling.framework.status import SKIP, SUCCESS, Status, unresolvable
from volsched.scheduling.go_arithmetic import round_half_away

STORAGE_DRIVERS = (REPLICATED_DRIVER, LONGHORN_DRIVER)
LOCALITY_LABEL = "volsched.io/locality"
LEGACY_LOCALITY_LABEL = "storageos.com/locality"
REASON_NOT_STORAGE_NODE = "node(s) were not ready storage nodes"
REASON_NO_LOCAL_REPLICA = "node(s) didn't have a replica of the pod's strict-locality volumes"

PRIMARY_POINTS = 15
REPLICA_POINTS = 10
REMOTE_POINTS = 5
UNHEALTHY_POINTS = 1
EXTENDER_SCALE = 10


@dataclass(slots=True)
class _VolumeCopies:
    """Where one volume's replicas are: node → points a pod earns running there."""

    name: str
    points_by_node: dict[str, int] = field(default_factory=dict)


@dataclass(slots=True)
class _PodStorage:
    volumes: list[_VolumeCopies]
    strict: bool


def locality_mode(pod: Pod) -> str:
    labels = pod.meta.labels
    value = labels.get(LOCALITY_LABEL, labels.get(LEGACY_LOCALITY_LABEL, "preferred"))
    return "strict" if value == "strict" else "preferred"


def storage_node_serves(cluster: ClusterCache, node: NodeInfo) -> bool:
    storage: StorageNode | None = cluster.storage.storage_nodes.get(node.name)
    return (
        storage is not None
        and storage.ready
        and node.node.ready
        and storage.allow_scheduling
        and not storage.eviction_requested
        and not storage.compute_only
    )


def pod_storage(cluster: ClusterCache, pod: Pod) -> _PodStorage | None:
    """The pod's replicated volumes and where their copies are; None for other pods."""
    uses_storage = False
    strict_local = False
    volumes: list[_VolumeCopies] = []
    for claim_name in pod.claim_names():
        claim = cluster.pvcs.get(f"{pod.namespace}/{claim_name}")
        if claim is None:
            continue
        pv = cluster.pvs.get(claim.volume_name) if claim.volume_name else None
        if pv is not None and pv.csi_driver in STORAGE_DRIVERS:
            uses_storage = True
            volumes.append(_copies(cluster, pv.csi_handle))
            volume = cluster.storage.volumes.get(pv.csi_handle)
            strict_local |= volume is not None and volume.data_locality == (
                DATA_LOCALITY_STRICT_LOCAL
            )
        elif pv is None and claim.class_name:
            storage_class = cluster.storage_classes.get(claim.class_name)
            if storage_class is not None and storage_class.provisioner in STORAGE_DRIVERS:
                uses_storage = True
    if not uses_storage:
        return None
    return _PodStorage(volumes, strict_local or locality_mode(pod) == "strict")


# The robustness under which a volume's replicas are judged one by one. A faulted volume
# has no replica longhorn-manager counts as healthy and active (its isAutoSalvageNeeded,
# controller/volume_controller.go), or its engine died: no copy is known good until one
# is salvaged, so every replica's node scores 1. "unknown" (an attached volume whose
# engine state is unknown, or a volsched Volume whose agent has not reported yet) says
# nothing either, and scores the same. A detached Longhorn volume reports "unknown" too;
# cache.objects.longhorn reads that one as healthy, as its data is intact.
JUDGED_ROBUSTNESS = (ROBUSTNESS_HEALTHY, ROBUSTNESS_DEGRADED)


def holds_healthy_data(replica: Replica, volume: Volume) -> bool:
    """Whether the pod finds good data on this replica's node.

    longhorn-manager's notion of a healthy replica (``IsAvailableHealthyReplica`` in
    datastore/longhorn.go): not failed (no ``failedAt``) and healthy once (``healthyAt``,
    set when the engine first had it read-write, cleared when a failed replica is reused
    for a rebuild) — volsched's Replicas say the same with ``failedAt`` and ``synced``.
    While the volume is attached the replica must also run: a stopped or starting one
    is not part of the engine. A detached volume runs no replica at all, and its stopped
    replicas keep its data.
    """
    if replica.failed or not replica.synced:
        return False
    return replica.running or not volume.attached


def _copies(cluster: ClusterCache, volume_name: str) -> _VolumeCopies:
    copies = _VolumeCopies(volume_name)
    volume = cluster.storage.volumes.get(volume_name)
    judged = volume is not None and volume.robustness in JUDGED_ROBUSTNESS
    points = copies.points_by_node
    for replica in cluster.replicas_by_volume.get(volume_name, {}).values():
        if not replica.node_id or replica.meta.deletion_timestamp is not None:
            continue
        if volume is None or not judged or not holds_healthy_data(replica, volume):
            earned = UNHEALTHY_POINTS
        else:
            earned = PRIMARY_POINTS if replica.primary else REPLICA_POINTS
        current = points.get(replica.node_id)
        # A node with a broken copy scores low even if another copy there is fine.
        points[replica.node_id] = earned if current is None else min(current, earned)
    for assumed in cluster.assumed_replicas.get(volume_name, ()):
        # Placed by volsched this cycle: in sync only if the volume had no data yet.
        earned = REPLICA_POINTS if assumed.synced and judged else UNHEALTHY_POINTS
        current = points.get(assumed.node)
        points[assumed.node] = earned if current is None else min(current, earned)
    return copies


class StorageNodeReady:
    name = "StorageNodeReady"

    def __init__(self, cluster: ClusterCache) -> None:
        self.cluster = cluster

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """A node added or back to Ready; a storage node (volsched's or Longhorn's)
        added, ready again, uncordoned or no longer draining."""
        return (on(NODE, ADD | UPDATE_NODE_CONDITION), on(STORAGE_NODE, ALL))

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[Collection[str] | None, Status]:
        storage = pod_storage(self.cluster, pod)
        if storage is None:
            return None, SKIP
        state.write(self.name, storage)
        return None, SUCCESS

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        if state.read(self.name) is None or storage_node_serves(self.cluster, node):
            return None
        return unresolvable(REASON_NOT_STORAGE_NODE)


class VolumeLocality:
    """``CheckVolumeLocality`` as a filter (strict pods only) and ``VolumeLocality`` as a
    score; one plugin, as both read the same per-pod replica map."""

    name = "VolumeLocality"

    def __init__(self, cluster: ClusterCache) -> None:
        self.cluster = cluster

    def _storage(self, state: CycleState, pod: Pod) -> _PodStorage | None:
        key = f"{self.name}/storage"
        cached = state.read(key)
        if cached is None:
            cached = pod_storage(self.cluster, pod) or False
            state.write(key, cached)
        return cached or None

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """Where the replicas are: replicas, volumes and storage nodes (volsched's or
        Longhorn's) changing."""
        return (on(REPLICA, ALL), on(VOLUME, ALL), on(STORAGE_NODE, ALL))

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[Collection[str] | None, Status]:
        storage = self._storage(state, pod)
        if storage is None or not storage.strict or not storage.volumes:
            return None, SKIP
        return None, SUCCESS

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        storage = self._storage(state, pod)
        if storage is None or not storage.strict:
            return None
        for volume in storage.volumes:
            if node.name not in volume.points_by_node:
                # No eviction brings a replica here: unresolvable, like volume reasons.
                return unresolvable(REASON_NO_LOCAL_REPLICA)
        return None

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        """Nothing to rank for a pod without replicated volumes (every node scores 0)."""
        storage = self._storage(state, pod)
        return SKIP if storage is None or not storage.volumes else SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        storage = self._storage(state, pod)
        if storage is None or not storage.volumes:
            return 0
        total = sum(v.points_by_node.get(node.name, REMOTE_POINTS) for v in storage.volumes)
        return round_half_away(total, len(storage.volumes)) * EXTENDER_SCALE
