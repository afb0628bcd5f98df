"""Replica placement joined to pod scheduling.

``ReplicaContext`` keeps the replica scheduler's view of the cluster cache (rebuilt only
when nodes, storage nodes or replicas change) and the disk space this scheduler has
promised but the storage agent has not reported yet. On top of it:

- ``place_volumes`` places the missing replicas of existing Volumes (name order) and
  assumes the placements, so pods decided next see where their data will be;
- ``ReplicatedProvisioner`` is the provisioning check of CheckVolumeBinding for claims of
  a ``replicated.volsched.io`` WaitForFirstConsumer class: a node can take the pod only
  if every replica of the new volume can be placed with that node as the volume's node
  (a pod's later claims counting the space its earlier ones would take there); the
  placement is committed with the pod's reservation and released with it.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from volsched.cache.cluster import AssumedReplica, ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.fields import shown
from volsched.cache.objects.longhorn import is_longhorn
from volsched.cache.objects.replicated import (
    CSI_DRIVER,
    DATA_LOCALITIES,
    DATA_LOCALITY_STRICT_LOCAL,
    Volume,
)
from volsched.cache.objects.storage import PersistentVolumeClaim, StorageClass
from volsched.scheduling.replicas import (
    ReplicaCluster,
    ReplicaSchedulingSettings,
    ScheduledSpace,
    VolumePlacement,
    place_for_new_volume,
    schedule_volume,
)
from volsched.scheduling.volumes.provisioning import ProvisionError

REPLICATED_PROVISIONER = CSI_DRIVER


def placement_json(placement: VolumePlacement) -> dict[str, Any]:
    return {
        "volume": placement.volume,
        "placed": [{"node": p.node, "disk": p.disk} for p in placement.placed],
        "unplaced": placement.unplaced,
        "message": placement.message,
    }


def new_volume_name(claim: PersistentVolumeClaim) -> str:
    """The name the provisioner gives a claim's volume: ``pvc-<claim uid>``.

    A hand-written snapshot may leave the uid out; the claim's namespace and name then
    stand in for it, so two such claims never share a volume (and its replicas).
    """
    return f"pvc-{claim.meta.uid or f'{claim.namespace}.{claim.meta.name}'}"


class ReplicaContext:
    def __init__(
        self,
        cluster: ClusterCache,
        settings: ReplicaSchedulingSettings,
        clock: Callable[[], float],
    ) -> None:
        self.cluster = cluster
        self.settings = settings
        self.clock = clock
        self.scheduled = ScheduledSpace()
        self._view: ReplicaCluster | None = None
        self._view_generation = -1
        # Bytes promised to disks by placements, until the storage agent counts them.
        self._promises: dict[tuple[str, str, str], int] = {}

    def view(self) -> ReplicaCluster:
        if self._view is None or self._view_generation != self.cluster.storage_generation:
            self.settle()
            cluster = self.cluster
            self._view = ReplicaCluster(
                cluster.objects("Node"),
                cluster.storage.storage_nodes.values(),
                cluster.storage.replicas.values(),
            )
            self._view_generation = cluster.storage_generation
        return self._view

    def commit(self, placement: VolumePlacement, synced: bool, size: int) -> list[AssumedReplica]:
        """Assume the placement (pods decided next see it) and remember the bytes it
        promised, which ``self.scheduled`` already holds."""
        assumed = [
            AssumedReplica(placement.volume, p.node, p.disk, synced) for p in placement.placed
        ]
        self.cluster.assume_replicas(assumed)
        for p in placement.placed:
            key = (placement.volume, p.node, p.disk)
            self._promises[key] = self._promises.get(key, 0) + size
        return assumed

    def release(self, placement: VolumePlacement, assumed: list[AssumedReplica]) -> None:
        """Take back a placement that will not happen (its pod was not bound)."""
        for p in placement.placed:
            size = self._promises.pop((placement.volume, p.node, p.disk), 0)
            if size:
                self.scheduled.add(p.node, p.disk, -size)
        self.cluster.forget_replicas(assumed)

    def settle(self) -> int:
        """Hand back the promises the storage agent now counts itself.

        A promise is settled once its Replica object exists and the StorageNode's status
        was written after it (resource versions are one global sequence): from then on
        the disk's ``storageScheduled`` includes it, and keeping the promise would count
        the replica twice. Returns how many promises were settled.
        """
        settled = 0
        storage_nodes = self.cluster.storage.storage_nodes
        for key in list(self._promises):
            volume, node, disk = key
            storage = storage_nodes.get(node)
            if storage is None:
                continue
            for replica in self.cluster.replicas_by_volume.get(volume, {}).values():
                if (
                    replica.node_id == node
                    and replica.disk_id == disk
                    and storage.meta.resource_version > replica.meta.resource_version
                ):
                    self.scheduled.add(node, disk, -self._promises.pop(key))
                    held = self.cluster.assumed_replicas.get(volume)
                    if held:
                        held[:] = [a for a in held if (a.node, a.disk) != (node, disk)]
                    settled += 1
                    break
        return settled

    def place_volumes(self) -> list[dict[str, Any]]:
        """Place the missing replicas of every existing Volume, in name order."""
        results = []
        volumes: dict[str, Volume] = self.cluster.storage.volumes
        now = self.clock()
        for name in sorted(volumes):
            volume = volumes[name]
            if is_longhorn(volume):
                continue  # Longhorn places its own replicas; volsched only reads them.
            placement = schedule_volume(volume, self.view(), self.settings, now, self.scheduled)
            if placement is None:
                continue
            # schedule_volume has already counted the bytes in self.scheduled.
            self.commit(placement, synced=volume.actual_size == 0, size=volume.size)
            results.append(placement_json(placement))
        return results


@dataclass(frozen=True, slots=True)
class ReplicaPlan:
    """Where a new volume's replicas go if the pod lands on ``node``.

    ``shared`` marks a claim another pod already provisioned on this node in this
    scheduler's assume layer: the pod follows that placement and holds nothing itself.
    """

    node: str
    size: int
    placement: VolumePlacement
    shared: bool = False

    def describe(self) -> dict[str, Any]:
        return {"replicas": [{"node": p.node, "disk": p.disk} for p in self.placement.placed]}


@dataclass(frozen=True, slots=True)
class _Parameters:
    replicas: int
    locality: str
    node_selector: tuple[str, ...]
    disk_selector: tuple[str, ...]


def _tags(text: str) -> tuple[str, ...]:
    return tuple(tag.strip() for tag in text.split(",") if tag.strip())


def class_parameters(
    storage_class: StorageClass, default_replicas: int = 3, default_locality: str = "disabled"
) -> _Parameters:
    """Longhorn-style string parameters of a replicated StorageClass, validated; a
    parameter left out takes the given default (Longhorn's comes from its Settings)."""
    params = storage_class.parameters
    name = storage_class.meta.name
    text = params.get("numberOfReplicas", str(default_replicas))
    # ASCII digits of an int64, as Go's strconv reads them: Python's ``int`` also takes
    # " 3" and "٣", and a text of thousands of digits went whole into the pod's event.
    if not (text.isascii() and text.isdigit() and len(text) <= 18):
        raise ProvisionError(
            f'StorageClass "{name}" parameter numberOfReplicas: {shown(text)} is not an integer'
        )
    replicas = int(text)
    if replicas < 1:
        raise ProvisionError(f'StorageClass "{name}" parameter numberOfReplicas: must be >= 1')
    locality = params.get("dataLocality", default_locality)
    if locality not in DATA_LOCALITIES:
        raise ProvisionError(
            f'StorageClass "{name}" parameter dataLocality: {locality!r} is not one of '
            + ", ".join(DATA_LOCALITIES)
        )
    if locality == DATA_LOCALITY_STRICT_LOCAL and replicas != 1:
        raise ProvisionError(
            f'StorageClass "{name}": dataLocality strict-local needs numberOfReplicas "1"'
        )
    return _Parameters(
        replicas,
        locality,
        _tags(params.get("nodeSelector", "")),
        _tags(params.get("diskSelector", "")),
    )


class ReplicatedProvisioner:
    """CheckVolumeBinding's provisioning check for volsched's replicated storage."""

    def __init__(self, context: ReplicaContext) -> None:
        self.context = context
        self._held: dict[int, list[AssumedReplica]] = {}
        # Committed plans by volume name, for pods that share a claim being provisioned.
        self._committed: dict[str, ReplicaPlan] = {}

    def _space_for(self, earlier: Sequence[object]) -> ScheduledSpace:
        """The pass's space, plus what the pod's earlier claims on this node would take:
        claims are checked one at a time and committed only when the pod is reserved."""
        plans = [plan for plan in earlier if isinstance(plan, ReplicaPlan) and not plan.shared]
        if not plans:
            return self.context.scheduled
        space = self.context.scheduled.copy()
        for plan in plans:
            for p in plan.placement.placed:
                space.add(p.node, p.disk, plan.size)
        return space

    def check(
        self,
        claim: PersistentVolumeClaim,
        storage_class: StorageClass,
        node: NodeInfo,
        earlier: Sequence[object] = (),
    ) -> tuple[bool, tuple[str, ...], object]:
        params = class_parameters(storage_class)
        size = claim.request or 0
        context = self.context
        volume_name = new_volume_name(claim)
        committed = self._committed.get(volume_name)
        if committed is not None and committed.node == node.name:
            # The claim is already being provisioned here for another pod (its selected
            # node is this one): placing its replicas again would promise the space twice.
            return True, (), ReplicaPlan(node.name, committed.size, committed.placement, True)
        space = self._space_for(earlier)
        placement = place_for_new_volume(
            size,
            params.replicas,
            params.locality,
            params.node_selector,
            params.disk_selector,
            node.name,
            context.view(),
            context.settings,
            space,
            volume_name=volume_name,
        )
        if placement.unplaced:
            return False, placement.reasons, None
        return True, (), ReplicaPlan(node.name, size, placement)

    def commit(self, plan: object) -> None:
        assert isinstance(plan, ReplicaPlan)
        if plan.shared:
            return
        self._committed[plan.placement.volume] = plan
        for p in plan.placement.placed:
            self.context.scheduled.add(p.node, p.disk, plan.size)
        self._held[id(plan)] = self.context.commit(plan.placement, synced=True, size=plan.size)

    def release(self, plan: object) -> None:
        assert isinstance(plan, ReplicaPlan)
        held = self._forget(plan)
        if held is not None:
            self.context.release(plan.placement, held)

    def done(self, plan: object) -> None:
        """Bound: the plan leaves the bookkeeping, its promise stays with the context
        until the storage agent counts the replicas (``ReplicaContext.settle``)."""
        assert isinstance(plan, ReplicaPlan)
        self._forget(plan)

    def _forget(self, plan: ReplicaPlan) -> list[AssumedReplica] | None:
        held = self._held.pop(id(plan), None)
        if held is not None and self._committed.get(plan.placement.volume) is plan:
            del self._committed[plan.placement.volume]
        return held
