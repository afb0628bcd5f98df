"""DynamicResources: a pod that asks for ResourceClaims is not placed by volsched.

kube-scheduler (1.34+) runs DynamicResources in its default profile: it allocates the
devices of a pod's ResourceClaims on the node it picks. volsched does not allocate
devices, and a pod bound without its claims allocated would never start on its node:
such a pod is left pending with one clear reason instead, and every other pod goes
through as upstream's plugin lets it (its PreFilter skips a pod without claims). The
plugin is in volsched's default profile, as upstream's is, and configurations naming it
(as every configuration kube-scheduler writes out does) load.

Its PostFilter runs before DefaultPreemption, as upstream orders them, and its words lead
the PostFilter text: ``no new claims to deallocate`` for a pod without claims, and
``not found`` — an internal error that stops the PostFilter there, so nothing is
preempted — when an earlier PreFilter rejected the pod before this one ran, exactly as
kube-scheduler 1.36 reports both.
"""

from __future__ import annotations

from collections.abc import Collection

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.events import ClusterEventWithHint
from volsched.scheduling.framework.status import SKIP, Code, Status, unresolvable

REASON = "volsched does not allocate dynamic resources (the pod has ResourceClaims)"
_REJECTED = unresolvable(REASON)
# Upstream's PostFilter texts: no claim to free for a pod without claims, nothing freed
# for one with claims (volsched allocates none, so none is ever held), and the cycle
# state's error when this plugin's PreFilter never ran.
REASON_NO_CLAIMS = "no new claims to deallocate"
REASON_STILL_NOT_SCHEDULABLE = "still not schedulable"
ERROR_NOT_FOUND = "not found"
_STATE = "PreFilterDynamicResources"


class DynamicResources:
    name = "DynamicResources"

    def __init__(self, cluster: ClusterCache) -> None:
        self.cluster = cluster

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[Collection[str] | None, Status]:
        # Written for every pod, as upstream does, so the PostFilter can tell a pod
        # without claims from a cycle that ended before this PreFilter.
        state.write(_STATE, bool(pod.resource_claims))
        return None, (_REJECTED if pod.resource_claims else SKIP)

    def post_filter(self, state: CycleState, pod: Pod) -> Status:
        has_claims: bool | None = state.read(_STATE)
        if has_claims is None:
            return Status(Code.ERROR, (ERROR_NOT_FOUND,), self.name)
        reason = REASON_STILL_NOT_SCHEDULABLE if has_claims else REASON_NO_CLAIMS
        return Status(Code.UNSCHEDULABLE, (reason,), self.name)

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """No cluster event makes volsched allocate a claim: nothing moves such a pod."""
        return ()

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        return _REJECTED if pod.resource_claims else None
