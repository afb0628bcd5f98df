"""CheckNodeUnschedulable: cordoned nodes (``spec.unschedulable``) take no new pods.

A pod that tolerates the ``node.kubernetes.io/unschedulable:NoSchedule`` taint (the one the
node lifecycle controller puts on cordoned nodes) is let through, as upstream does, so
DaemonSet-like pods can still land on a cordoned node.
"""

from __future__ import annotations

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import TAINT_EFFECT_NO_SCHEDULE, Node, Pod, Taint
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.events import (
    ADD,
    NODE,
    UPDATE_NODE_TAINT,
    ClusterEventWithHint,
    on,
)
from volsched.scheduling.framework.status import Status, unresolvable

REASON = "node(s) were unschedulable"
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", TAINT_EFFECT_NO_SCHEDULE)
_REJECTED = unresolvable(REASON)


class NodeUnschedulable:
    """Filter; UnschedulableAndUnresolvable because evicting pods does not uncordon."""

    name = "NodeUnschedulable"

    def __init__(self, cluster: ClusterCache) -> None:
        self.cluster = cluster

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """Upstream's: a node added schedulable, or uncordoned. (The pod's own new
        toleration needs no event: a rejected pod that changes is always retried.)"""
        return (on(NODE, ADD | UPDATE_NODE_TAINT, self.after_node_change),)

    def after_node_change(self, pod: Pod, old: Node | None, new: Node | None) -> bool:
        if new is None or new.unschedulable:
            return False
        return old is None or old.unschedulable

    def filter_key(self, state: CycleState, pod: Pod) -> bool:
        """NodeLocalFilter: the node's cordon, and whether the pod tolerates it."""
        return any(toleration.tolerates(UNSCHEDULABLE_TAINT) for toleration in pod.tolerations)

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        if not node.node.unschedulable:
            return None
        for toleration in pod.tolerations:
            if toleration.tolerates(UNSCHEDULABLE_TAINT):
                return None
        return _REJECTED
