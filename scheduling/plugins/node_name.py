"""HostName: a pod that names its node (``spec.nodeName``) fits only that node."""

from __future__ import annotations

from collections.abc import Collection

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.events import ADD, NODE, ClusterEventWithHint, on
from volsched.scheduling.framework.status import SKIP, SUCCESS, Status, unresolvable

REASON = "node(s) didn't match the requested node name"
_REJECTED = unresolvable(REASON)


class NodeName:
    """Filter; UnschedulableAndUnresolvable because no eviction changes a node's name."""

    name = "NodeName"

    def __init__(self, cluster: ClusterCache) -> None:
        self.cluster = cluster

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[Collection[str] | None, Status]:
        """Nothing to check on any node for a pod that names none."""
        return None, (SUCCESS if pod.node_name else SKIP)

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """Upstream's: only a node added (the one named) can help."""
        return (on(NODE, ADD),)

    def filter_key(self, state: CycleState, pod: Pod) -> str:
        """NodeLocalFilter: the node's name and the one the pod names."""
        return pod.node_name

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        wanted = pod.node_name
        if wanted and wanted != node.name:
            return _REJECTED
        return None
