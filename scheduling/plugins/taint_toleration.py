"""PodToleratesNodeTaints and TaintTolerationPriority (upstream's TaintToleration).

The filter rejects a node with a ``NoSchedule`` or ``NoExecute`` taint the pod does not
tolerate; the score counts the ``PreferNoSchedule`` taints it does not tolerate and
normalizes in reverse, so the node with the fewest wins.

The rejection reads ``node(s) had untolerated taint(s)``, as kube-scheduler 1.36 words it:
the FailedScheduling message counts nodes per reason, so one wording for every taint keeps
the count per message whole.
"""

from __future__ import annotations

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import (
    TAINT_EFFECT_NO_EXECUTE,
    TAINT_EFFECT_NO_SCHEDULE,
    TAINT_EFFECT_PREFER_NO_SCHEDULE,
    Node,
    Pod,
    Taint,
    Toleration,
)
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.events import (
    ADD,
    NODE,
    UPDATE_NODE_TAINT,
    ClusterEventWithHint,
    on,
)
from volsched.scheduling.framework.interfaces import MAX_NODE_SCORE
from volsched.scheduling.framework.status import SUCCESS, Status, unresolvable
from volsched.scheduling.plugins.normalize import default_normalize, normalized

_HARD_EFFECTS = (TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_NO_EXECUTE)


REASON_UNTOLERATED = "node(s) had untolerated taint(s)"


def untolerated_hard_taint(pod: Pod, node: NodeInfo) -> Taint | None:
    """The first NoSchedule / NoExecute taint of the node the pod does not tolerate."""
    tolerations = pod.tolerations
    for taint in node.node.taints:
        if taint.effect not in _HARD_EFFECTS:
            continue
        if not any(toleration.tolerates(taint) for toleration in tolerations):
            return taint
    return None


class TaintToleration:
    """Filter + score. A rejection is UnschedulableAndUnresolvable: evictions do not
    remove taints."""

    name = "TaintToleration"

    def __init__(self, cluster: ClusterCache) -> None:
        self.cluster = cluster
        self._score_key = f"PreScore{self.name}"

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """Upstream's: a node added, or its taints changed, may now be tolerated."""
        return (on(NODE, ADD | UPDATE_NODE_TAINT, self.after_node_change),)

    def after_node_change(self, pod: Pod, old: Node | None, new: Node | None) -> bool:
        """Only a change from untolerated to tolerated helps."""
        if new is None or untolerated_hard_taint(pod, NodeInfo(new)) is not None:
            return False
        return old is None or untolerated_hard_taint(pod, NodeInfo(old)) is not None

    def filter_key(self, state: CycleState, pod: Pod) -> tuple[Toleration, ...]:
        """NodeLocalFilter: the node's taints and the pod's tolerations."""
        return pod.tolerations

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        taint = untolerated_hard_taint(pod, node)
        return None if taint is None else unresolvable(REASON_UNTOLERATED)

    @staticmethod
    def _prefer_no_schedule_tolerations(pod: Pod) -> tuple[Toleration, ...]:
        # An empty effect tolerates every effect, PreferNoSchedule included.
        return tuple(
            t for t in pod.tolerations if t.effect in ("", TAINT_EFFECT_PREFER_NO_SCHEDULE)
        )

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        state.write(self._score_key, self._prefer_no_schedule_tolerations(pod))
        return SUCCESS

    def score_key(self, state: CycleState, pod: Pod) -> tuple[Toleration, ...]:
        """NodeLocalScore: the node's taints and the pod's PreferNoSchedule tolerations."""
        tolerations: tuple[Toleration, ...] | None = state.read(self._score_key)
        return tolerations if tolerations is not None else self._prefer_no_schedule_tolerations(pod)

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        return self.score_nodes(state, pod, [node])[0]

    def score_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[int]:
        """Intolerable PreferNoSchedule taints per node; most nodes have no taint."""
        tolerations: tuple[Toleration, ...] | None = state.read(self._score_key)
        if tolerations is None:
            tolerations = self._prefer_no_schedule_tolerations(pod)
        count = self._intolerable
        return [count(node, tolerations) if node.node.taints else 0 for node in nodes]

    @staticmethod
    def _intolerable(node: NodeInfo, tolerations: tuple[Toleration, ...]) -> int:
        count = 0
        for taint in node.node.taints:
            if taint.effect != TAINT_EFFECT_PREFER_NO_SCHEDULE:
                continue
            if not any(toleration.tolerates(taint) for toleration in tolerations):
                count += 1
        return count

    def normalize(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> None:
        default_normalize(scores, MAX_NODE_SCORE, reverse=True)

    def normalize_scores(self, state: CycleState, pod: Pod, scores: list[int]) -> list[int]:
        return normalized(scores, MAX_NODE_SCORE, reverse=True)
