"""PrioritizeVolumes: volsched's storage preference, the node whose chosen PVs fit the
pod's claims most tightly.

Packing a claim into the smallest PV that holds it keeps the large PVs for the claims
that need them, so fewer claims later stay pending for lack of a fitting PV. kube-scheduler
1.36 has no such score (its VolumeBinding scores only behind the StorageCapacityScoring
gate, and then prefers the emptiest fit), so this is a plugin of its own with its own
name: in volsched's default profile, and in a KubeSchedulerConfiguration profile only
when enabled there. Claims to provision score 0, so a node with a pre-provisioned PV that
fits wins over provisioning.
"""

from __future__ import annotations

from collections.abc import Sequence

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.status import SKIP, SUCCESS, Status
from volsched.scheduling.plugins.volume_binding import NAME as VOLUME_BINDING
from volsched.scheduling.plugins.volume_binding import VolumeBindingState
from volsched.scheduling.volumes.matching import claim_request
from volsched.scheduling.volumes.scoring import (
    DEFAULT_SHAPE,
    ShapePoint,
    class_score,
    scale_shape,
    volume_score,
)


class PrioritizeVolumes:
    name = "PrioritizeVolumes"

    def __init__(self, cluster: ClusterCache, shape: Sequence[ShapePoint] = DEFAULT_SHAPE) -> None:
        self.cluster = cluster
        self.shape = scale_shape(shape)

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        """Nothing to rank without a PV chosen for some node (VolumeBinding's filter
        records the choices; without it, or without claims, there are none)."""
        data: VolumeBindingState | None = state.read(VOLUME_BINDING)
        if data is None or not any(volumes.static_bindings for volumes in data.by_node.values()):
            return SKIP
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        data: VolumeBindingState | None = state.read(VOLUME_BINDING)
        volumes = data.by_node.get(node.name) if data is not None else None
        if volumes is None or not volumes.static_bindings:
            return 0
        if len(volumes.static_bindings) == 1:
            # One class, one PV: the average of one score is that score.
            only = volumes.static_bindings[0]
            return class_score(self.shape, claim_request(only.claim), only.pv.capacity)
        return volume_score(self.shape, volumes.static_by_class())
