"""DynamicResources: a pod that asks for ResourceClaims is not placed by volsched.

kube-scheduler (1.34+) runs DynamicResources in its default profile: it allocates the
devices of a pod's ResourceClaims on the node it picks. volsched does not allocate
devices, and a pod bound without its claims allocated would never start on its node:
such a pod is left pending with one clear reason instead, and every other pod goes
through as upstream's plugin lets it (its PreFilter skips a pod without claims). The
plugin is in volsched's default profile, as upstream's is, and configurations naming it
(as every configuration kube-scheduler writes out does) load.
"""

from __future__ import annotations

from collections.abc import Collection

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.events import ClusterEventWithHint
from volsched.scheduling.framework.status import SKIP, Status, unresolvable

REASON = "volsched does not allocate dynamic resources (the pod has ResourceClaims)"
_REJECTED = unresolvable(REASON)


class DynamicResources:
    name = "DynamicResources"

    def __init__(self, cluster: ClusterCache) -> None:
        self.cluster = cluster

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[Collection[str] | None, Status]:
        return None, (_REJECTED if pod.resource_claims else SKIP)

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """No cluster event makes volsched allocate a claim: nothing moves such a pod."""
        return ()

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        return _REJECTED if pod.resource_claims else None
