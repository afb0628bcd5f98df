"""CheckNodeUnschedulable: cordoned nodes (``spec.unschedulable``) take no new pods.

A pod that tolerates the ``node.kubernetes.io/unschedulable:NoSchedule`` taint (the one the
node lifecycle controller puts on cordoned nodes) is let through, as upstream does, so
DaemonSet-like pods can still land on a cordoned node.
"""

from __future__ import annotations

from cache.cluster import ClusterCache
from cache.node_info import NodeInfo
from cache.objects.core import Pod, Taint
from scheduling.framework.cycle_state import CycleState
from scheduling.framework.status import Status, unresolvable

REASON = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
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
