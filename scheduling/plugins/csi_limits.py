"""MaxCSIVolumeCountPred: a node attaches at most ``allocatable.count`` volumes per CSI
driver, as its CSINode says.

Upstream's NodeVolumeLimits (CSI) rule: the pod's volumes are identified by driver and
volume handle (a bound claim's CSI PV) or, for a claim not bound yet, by its class's
provisioner and the claim's own name; volumes already used by pods on the node are not
counted twice; the node is rejected when, for some driver, attached + new exceeds the
limit.
"""

from __future__ import annotations

from collections.abc import Collection

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.cache.objects.storage import PersistentVolumeClaim
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.events import (
    ADD,
    CSI_NODE,
    DELETE,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    ClusterEventWithHint,
    on,
)
from volsched.scheduling.framework.status import SKIP, SUCCESS, Status, unschedulable
from volsched.scheduling.volumes.claims import uses_claim

NAME = "NodeVolumeLimits"
REASON_MAX_VOLUME_COUNT = "node(s) exceed max volume count"


class CSILimits:
    name = NAME

    def __init__(self, cluster: ClusterCache) -> None:
        self.cluster = cluster

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """Upstream's: a CSINode added (its limits), a placed pod with volumes deleted,
        the pod's claim added."""
        return (
            on(CSI_NODE, ADD),
            on(POD, DELETE, self.after_pod_deleted),
            on(PERSISTENT_VOLUME_CLAIM, ADD, self.after_claim_added),
        )

    def after_pod_deleted(self, pod: Pod, old: Pod | None, new: Pod | None) -> bool:
        return old is not None and bool(old.node_name) and bool(old.claim_names())

    def after_claim_added(
        self, pod: Pod, old: PersistentVolumeClaim | None, new: PersistentVolumeClaim | None
    ) -> bool:
        return uses_claim(pod, new)

    def _volumes(self, pod: Pod) -> dict[str, str]:
        """unique volume id → driver, for the pod's CSI volumes that can be identified."""
        result: dict[str, str] = {}
        cluster = self.cluster
        for claim_name in pod.claim_names():
            claim = cluster.pvcs.get(f"{pod.namespace}/{claim_name}")
            if claim is None:
                continue
            driver = handle = ""
            pv = cluster.pvs.get(claim.volume_name) if claim.volume_name else None
            if pv is not None:
                driver, handle = pv.csi_driver, pv.csi_handle
            elif claim.class_name:
                storage_class = cluster.storage_classes.get(claim.class_name)
                if storage_class is not None:
                    driver, handle = storage_class.provisioner, f"claim:{claim.key}"
            if driver and handle:
                result[f"{driver}/{handle}"] = driver
        return result

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[Collection[str] | None, Status]:
        volumes = self._volumes(pod)
        if not volumes:
            return None, SKIP
        state.write(NAME, volumes)
        return None, SUCCESS

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        new_volumes: dict[str, str] | None = state.read(NAME)
        if not new_volumes:
            return None
        csi_node = self.cluster.csi_nodes.get(node.name)
        if csi_node is None:
            return None
        limits = {
            name: driver.allocatable_count
            for name, driver in csi_node.drivers.items()
            if driver.allocatable_count is not None
        }
        if not limits or not any(driver in limits for driver in new_volumes.values()):
            return None
        attached: dict[str, str] = {}
        for existing in node.pods.values():
            if existing.meta.key != pod.meta.key and existing.volumes:
                attached.update(self._volumes(existing))
        fresh = {vid: driver for vid, driver in new_volumes.items() if vid not in attached}
        attached_count: dict[str, int] = {}
        for driver in attached.values():
            attached_count[driver] = attached_count.get(driver, 0) + 1
        new_count: dict[str, int] = {}
        for driver in fresh.values():
            new_count[driver] = new_count.get(driver, 0) + 1
        for driver, count in new_count.items():
            limit = limits.get(driver)
            if limit is not None and attached_count.get(driver, 0) + count > limit:
                return unschedulable(REASON_MAX_VOLUME_COUNT)
        return None
