"""EqualPriority: the legacy priority that gives every node the same score."""

from __future__ import annotations

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState


class EqualPriority:
    """Score 1 for every node, as the legacy EqualPriorityMap (no normalization)."""

    name = "EqualPriority"

    def __init__(self, cluster: ClusterCache) -> None:
        self.cluster = cluster

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        return 1
