"""WaitForFirstConsumer provisioning of Longhorn volumes, decided with the pod.

For an unbound claim of a ``driver.longhorn.io`` class, a node can take the pod only if
Longhorn's replica scheduler — as volsched implements it, with the cluster's Longhorn
Settings and disks — could place every replica of the new volume with that node as the
volume's node (for ``strict-local``: a fitting disk on that very node).  volsched never
creates Longhorn's replicas: the plan it keeps is not a ``ReplicaPlan``, so the binding
cycle writes nothing for it and Longhorn places the replicas itself once the claim is
provisioned.  The space a committed plan takes is held (and its replicas assumed, so
pods decided next see them) until Longhorn's Volume for the claim appears, from when
Longhorn's own disk status counts it.  Parameters left out of the class take Longhorn's defaults from its Settings
(``default-replica-count``, ``default-data-locality``), as Longhorn's CSI driver does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from volsched.cache.cluster import AssumedReplica
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.longhorn import CSI_DRIVER
from volsched.cache.objects.storage import PersistentVolumeClaim, StorageClass
from volsched.scheduling.replicas import VolumePlacement, place_for_new_volume
from volsched.scheduling.replicas.longhorn_settings import (
    default_data_locality,
    default_replica_count,
    settings_with_longhorn,
)
from volsched.scheduling.storage_placement import ReplicaContext, class_parameters, new_volume_name

LONGHORN_PROVISIONER = CSI_DRIVER


@dataclass(frozen=True, slots=True)
class LonghornPlan:
    """Where Longhorn could put the new volume's replicas if the pod lands on ``node``;
    shown to users, never written."""

    node: str
    size: int
    placement: VolumePlacement

    def describe(self) -> dict[str, Any]:
        placed = self.placement.placed
        return {"replicas": [{"node": p.node, "disk": p.disk} for p in placed]}


class LonghornProvisioner:
    """CheckVolumeBinding's provisioning check for Longhorn classes."""

    def __init__(self, context: ReplicaContext) -> None:
        self.context = context
        self._held: dict[str, tuple[LonghornPlan, list[AssumedReplica]]] = {}

    def _settle(self) -> None:
        """Hand back what Longhorn now counts: the held plans whose Volume exists."""
        volumes = self.context.cluster.storage.volumes
        for name in [name for name in self._held if name in volumes]:
            plan, assumed = self._held.pop(name)
            self.context.release(plan.placement, assumed)

    def check(
        self,
        claim: PersistentVolumeClaim,
        storage_class: StorageClass,
        node: NodeInfo,
        earlier: Sequence[object] = (),
    ) -> tuple[bool, tuple[str, ...], object]:
        self._settle()
        values = self.context.cluster.longhorn_settings()
        params = class_parameters(
            storage_class, default_replica_count(values), default_data_locality(values)
        )
        size = claim.request or 0
        placement = place_for_new_volume(
            size,
            params.replicas,
            params.locality,
            params.node_selector,
            params.disk_selector,
            node.name,
            self.context.view(),
            settings_with_longhorn(self.context.settings, values),
            self.context.scheduled,
            volume_name=new_volume_name(claim),
        )
        if placement.unplaced:
            return False, placement.reasons, None
        return True, (), LonghornPlan(node.name, size, placement)

    def commit(self, plan: object) -> None:
        assert isinstance(plan, LonghornPlan)
        for p in plan.placement.placed:
            self.context.scheduled.add(p.node, p.disk, plan.size)
        assumed = self.context.commit(plan.placement, synced=True, size=plan.size)
        self._held[plan.placement.volume] = (plan, assumed)

    def release(self, plan: object) -> None:
        assert isinstance(plan, LonghornPlan)
        held = self._held.get(plan.placement.volume)
        if held is None or held[0] is not plan:
            return
        del self._held[plan.placement.volume]
        self.context.release(plan.placement, held[1])

    def done(self, plan: object) -> None:
        """Bound: the hold stays until Longhorn's own Volume appears (it is what keeps
        the next pod from counting the same disks free), and is dropped then."""
