"""One small protocol per extension point; a plugin implements only what it needs.

Plugins get what they read (the cluster cache, their typed arguments) when built, and
per cycle the pod, the cycle state and the node being judged.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable
from typing import Protocol, runtime_checkable

from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.events import ClusterEventWithHint
from volsched.scheduling.framework.status import Status

# The highest score a node can get from one priority after normalization (kube-scheduler's
# framework.MaxNodeScore); a priority's weight multiplies it.
MAX_NODE_SCORE = 100


@runtime_checkable
class PreEnqueuePlugin(Protocol):
    name: str

    def pre_enqueue(self, pod: Pod) -> str | None:
        """Why the pod may not be attempted yet (None: it may); see ``pre_enqueue``."""


@runtime_checkable
class PreFilterPlugin(Protocol):
    name: str

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[Collection[str] | None, Status]:
        """Compute per-cycle data once; may narrow the candidate nodes (None = all)."""


@runtime_checkable
class PreFilterExtensions(Protocol):
    """A PreFilter whose state counts pods (kube-scheduler's PreFilterExtensions): the
    state is brought up to date when a pod is added to or removed from a node, so that
    filtering sees the node as the preemption dry run or the nominated-pods pass made
    it. Called only on a cloned state, and only when the plugin's PreFilter ran (a
    skipped plugin is not asked)."""

    name: str

    def add_pod(self, state: CycleState, pod: Pod, added: Pod, node: NodeInfo) -> None: ...

    def remove_pod(self, state: CycleState, pod: Pod, removed: Pod, node: NodeInfo) -> None: ...


@runtime_checkable
class FilterPlugin(Protocol):
    name: str

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        """None when the node fits; a rejection with upstream's reasons otherwise."""


@runtime_checkable
class ScreeningFilter(Protocol):
    """A filter that can name, per cycle, the nodes it may accept: it certainly rejects
    every other node, so the walk need not ask it there (see ``Framework.screen``)."""

    name: str

    def screen(self, state: CycleState, pod: Pod) -> Collection[str] | None:
        """The nodes it may accept (None: it cannot tell for this pod)."""


@runtime_checkable
class NodeLocalFilter(Protocol):
    """A filter whose verdict on a node follows from the pod's ``filter_key`` and what
    the node's ``NodeInfo`` holds: the node's object, its pods, their requests and
    ports. Any change there empties the node's memo, so the runner may remember the
    verdicts of all such filters together, per node and pod shape, and judge the next
    pod of that shape with one lookup. A key of None: not this pod (read per cycle)."""

    name: str

    def filter_key(self, state: CycleState, pod: Pod) -> Hashable | None: ...


@runtime_checkable
class NodeLocalScore(Protocol):
    """The same for a score before normalization: ``score_key`` (asked after PreScore)
    and the node's ``NodeInfo`` decide the raw score, nothing else in the cluster."""

    name: str

    def score_key(self, state: CycleState, pod: Pod) -> Hashable | None: ...


@runtime_checkable
class PreScorePlugin(Protocol):
    name: str

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status: ...


@runtime_checkable
class ScorePlugin(Protocol):
    name: str

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        """A raw score; ``normalize`` (if any) brings the scores to 0..MAX_NODE_SCORE."""


@runtime_checkable
class BatchScorePlugin(Protocol):
    name: str

    def score_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[int]:
        """``score`` for each node, in order: one call per cycle instead of one per node,
        for the plugins whose per-node work is smaller than a Python call."""


@runtime_checkable
class NormalizeScorePlugin(Protocol):
    name: str

    def normalize(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> None: ...


@runtime_checkable
class ListNormalizeScorePlugin(Protocol):
    """``normalize`` on the scores as a list in the nodes' order: the cycle holds them
    so, and a mapping of 500 nodes built and read back per pod costs more than the
    rescaling. A plugin with both is asked this one."""

    name: str

    def normalize_scores(self, state: CycleState, pod: Pod, scores: list[int]) -> list[int]: ...


@runtime_checkable
class ReservePlugin(Protocol):
    name: str

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        """Record the decision in the assume layer so the next pod sees it."""

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """Undo ``reserve``; must be safe to call after a partial or failed reserve."""


@runtime_checkable
class PostFilterPlugin(Protocol):
    """A PostFilter that runs before preemption (upstream's DynamicResources): its reason
    leads the PostFilter text, and an ERROR status ends the PostFilter with no
    preemption, as kube-scheduler's RunPostFilterPlugins does."""

    name: str

    def post_filter(self, state: CycleState, pod: Pod) -> Status: ...


@runtime_checkable
class PostBindPlugin(Protocol):
    name: str

    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """The pod is bound: drop what was kept only to undo ``reserve``."""


@runtime_checkable
class EnqueueExtensions(Protocol):
    """A plugin that can reject a pod says which cluster events can make such a pod
    schedulable (kube-scheduler's ``EventsToRegister``); the scheduling queue's table is
    built from these. A filter that declares nothing is retried on every event."""

    name: str

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]: ...
