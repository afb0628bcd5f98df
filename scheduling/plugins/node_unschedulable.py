"""CheckNodeUnschedulable: cordoned nodes (``spec.unschedulable``) take no new pods.

A pod that tolerates the ``node.kubernetes.io/unschedulable:NoSchedule`` taint (the one the
node lifecycle controller puts on cordoned nodes) is let through, as upstream does, so
DaemonSet-like pods can still land on a cordoned node.
"""

from __future__ import annotations

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import TAINT_EFFECT_NO_SCHEDULE, Pod, Taint
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.status import Status, unresolvable

REASON = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", TAINT_EFFECT_NO_SCHEDULE)
_REJECTED = unresolvable(REASON)


class NodeUnschedulable:
    """Filter; UnschedulableAndUnresolvable because evicting pods does not uncordon."""

    name = "NodeUnschedulable"

    def __init__(self, cluster: ClusterCache) -> None:
        self.cluster = cluster

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        if not node.node.unschedulable:
            return None
        for toleration in pod.tolerations:
            if toleration.tolerates(UNSCHEDULABLE_TAINT):
                return None
        return _REJECTED
