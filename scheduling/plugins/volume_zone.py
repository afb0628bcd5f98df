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
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.status import SKIP, SUCCESS, Status, unresolvable
from volsched.scheduling.volumes.claims import claim_not_found

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
