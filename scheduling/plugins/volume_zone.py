"""NoVolumeZoneConflict: bound PVs labelled with a zone or region keep the pod there.

Upstream's VolumeZone plugin: the PreFilter collects the zone/region labels of the PVs
bound to the pod's claims (values may list several zones joined by ``__``); a node that
carries none of the topology labels is accepted (single-zone clusters), otherwise each
PV label must be matched by the node, the beta label falling back to the GA one.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import (
    LABEL_FAILURE_DOMAIN_BETA_REGION,
    LABEL_FAILURE_DOMAIN_BETA_ZONE,
    LABEL_TOPOLOGY_REGION,
    LABEL_TOPOLOGY_ZONE,
    Pod,
)
from volsched.cache.objects.storage import PersistentVolume, PersistentVolumeClaim, StorageClass
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.events import (
    ADD,
    NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    STORAGE_CLASS,
    UPDATE,
    UPDATE_NODE_LABEL,
    ClusterEventWithHint,
    on,
)
from volsched.scheduling.framework.status import SKIP, SUCCESS, Status, unresolvable
from volsched.scheduling.volumes.claims import claim_not_found, uses_claim

NAME = "VolumeZone"
REASON_CONFLICT = "node(s) had no available volume zone"
TOPOLOGY_LABELS = (
    LABEL_FAILURE_DOMAIN_BETA_ZONE,
    LABEL_FAILURE_DOMAIN_BETA_REGION,
    LABEL_TOPOLOGY_ZONE,
    LABEL_TOPOLOGY_REGION,
)
_GA_LABEL = {
    LABEL_FAILURE_DOMAIN_BETA_ZONE: LABEL_TOPOLOGY_ZONE,
    LABEL_FAILURE_DOMAIN_BETA_REGION: LABEL_TOPOLOGY_REGION,
}


@dataclass(frozen=True, slots=True)
class _Topology:
    key: str
    values: frozenset[str]


class VolumeZone:
    name = NAME

    def __init__(self, cluster: ClusterCache) -> None:
        self.cluster = cluster

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """Upstream's: a waiting class added, a node added or relabelled, the pod's claim
        added or bound, a volume added or its zone labels changed."""
        return (
            on(STORAGE_CLASS, ADD, self.after_storage_class_added),
            on(NODE, ADD | UPDATE_NODE_LABEL),
            on(PERSISTENT_VOLUME_CLAIM, ADD | UPDATE, self.after_claim_change),
            on(PERSISTENT_VOLUME, ADD | UPDATE, self.after_volume_change),
        )

    def after_storage_class_added(
        self, pod: Pod, old: StorageClass | None, new: StorageClass | None
    ) -> bool:
        return new is not None and new.wait_for_first_consumer

    def after_claim_change(
        self, pod: Pod, old: PersistentVolumeClaim | None, new: PersistentVolumeClaim | None
    ) -> bool:
        return uses_claim(pod, new)

    def after_volume_change(
        self, pod: Pod, old: PersistentVolume | None, new: PersistentVolume | None
    ) -> bool:
        if old is None or new is None:
            return True
        return any(old.meta.labels.get(k) != new.meta.labels.get(k) for k in TOPOLOGY_LABELS)

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[Collection[str] | None, Status]:
        topologies: list[_Topology] = []
        for claim_name in pod.claim_names():
            claim = self.cluster.pvcs.get_api(f"{pod.namespace}/{claim_name}")
            if claim is None:
                return None, unresolvable(claim_not_found(claim_name))
            if not claim.volume_name:
                if not claim.class_name:
                    return None, unresolvable(
                        "PersistentVolumeClaim had no pv name and storageClass name"
                    )
                storage_class = self.cluster.storage_classes.get(claim.class_name)
                if storage_class is None:
                    return None, unresolvable(
                        f'storageclass.storage.k8s.io "{claim.class_name}" not found'
                    )
                if storage_class.wait_for_first_consumer:
                    continue
                return None, unresolvable("PersistentVolume had no name")
            pv = self.cluster.pvs.get(claim.volume_name)
            if pv is None:
                return None, unresolvable(f'persistentvolume "{claim.volume_name}" not found')
            for key in TOPOLOGY_LABELS:
                value = pv.meta.labels.get(key)
                if value:
                    topologies.append(_Topology(key, frozenset(value.split("__"))))
        if not topologies:
            return None, SKIP
        state.write(NAME, topologies)
        return None, SUCCESS

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        topologies: list[_Topology] | None = state.read(NAME)
        if not topologies:
            return None
        labels = node.node.meta.labels
        if not any(key in labels for key in TOPOLOGY_LABELS):
            return None
        for topology in topologies:
            value = labels.get(topology.key)
            if value is None:
                value = labels.get(_GA_LABEL.get(topology.key, ""))
            if value is None or value not in topology.values:
                return unresolvable(REASON_CONFLICT)
        return None
