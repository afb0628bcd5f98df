"""The outcome of one scheduling cycle, and how a rejection is written into it.

What a cycle returns is everything a user may ask about the decision: the chosen node,
or upstream's "0/N nodes are available" message with the per-node reasons, and the
weighted score of every feasible node.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.profile import Predicate
from volsched.scheduling.framework.scoring import Scored
from volsched.scheduling.framework.status import Code, Status

# A node whose objects no plugin could read (a damaged stored view): passed over, never a
# reason for the whole cycle to fail.
REASON_UNREADABLE = "node(s) could not be evaluated"


@dataclass(slots=True)
class Decision:
    """The outcome of one cycle.

    ``filtered`` maps each rejected node to its reasons and ``rejected_by`` to the
    predicate (policy name) that rejected it; ``scores`` holds the weighted totals of the
    feasible nodes and ``score_parts`` each priority's normalized score (before weight).
    ``error`` is set for an internal failure (SchedulerError), ``message`` whenever the
    pod was not placed.
    """

    pod: Pod
    node: str | None = None
    message: str | None = None
    error: str | None = None
    filtered: dict[str, list[str]] = field(default_factory=dict)
    rejected_by: dict[str, str] = field(default_factory=dict)
    # What the Score phase worked out, in the order of the feasible nodes: ``scores``
    # and ``priority_scores`` are built from it when first read (the explain and
    # decisions pages, extenders), never by the loop itself.
    scored: Scored | None = None
    _scores: dict[str, int] | None = None
    _priority_scores: dict[str, list[int]] | None = None
    # The nodes the filters were run on, in order (``evaluated`` names them): kept as
    # the nodes, since naming 500 of them costs more than the cycle's lookups.
    evaluated_nodes: list[NodeInfo] = field(default_factory=list)
    state: CycleState = field(default_factory=CycleState)
    unresolvable: bool = False
    failed_plugins: set[str] = field(default_factory=set)
    rejected_plugin: dict[str, str] = field(default_factory=dict)
    # Rejected nodes whose failure no eviction can fix (UnschedulableAndUnresolvable).
    unresolvable_nodes: set[str] = field(default_factory=set)
    # A PreFilter rejected the pod before any node was looked at: (the predicate's
    # policy name, its reason), which every node's row shows.
    pre_filter_rejection: tuple[str, str] | None = None
    # Nodes passed over because a plugin could not read them: node → what went wrong.
    unreadable: dict[str, str] = field(default_factory=dict)
    # The nodes every filter passed (``find_feasible``), and how many were considered.
    feasible: list[NodeInfo] = field(default_factory=list)
    total_nodes: int = 0
    # When ``feasible`` is one window of the cluster's node list (every node walked
    # fits): that list, the feasible list, and where the window starts. The Score
    # phase then reads its kept rows as slices, as long as both lists are the same.
    feasible_window: tuple[list[NodeInfo], list[NodeInfo], int] | None = None

    # (extension point, start ns, end ns): what tracing shows; never read by a decision.
    phases: list[tuple[str, int, int]] = field(default_factory=list)

    def forget_diagnosis(self) -> None:
        """Drop what explains the choice (per-node reasons and scores), keeping what
        the binding needs: the pod, the node and the cycle state to undo it."""
        self.filtered = {}
        self.rejected_by = {}
        self.rejected_plugin = {}
        self.unresolvable_nodes = set()
        self.evaluated_nodes = []
        self.scored = None
        self.feasible_window = None
        self._scores = None
        self._priority_scores = None
        self.feasible = []

    @property
    def scores(self) -> dict[str, int]:
        """The weighted total of each feasible node (with the extenders' scores)."""
        if self._scores is None:
            scored = self.scored
            self._scores = (
                {} if scored is None else dict(zip(scored.names(), scored.totals, strict=True))
            )
        return self._scores

    @scores.setter
    def scores(self, totals: dict[str, int]) -> None:
        self._scores = totals

    @property
    def priority_scores(self) -> dict[str, list[int]]:
        """Each priority's normalized scores, in the order of ``scores``."""
        if self._priority_scores is None:
            scored = self.scored
            self._priority_scores = {} if scored is None else scored.by_priority()
        return self._priority_scores

    @property
    def evaluated(self) -> list[str]:
        return [info.name for info in self.evaluated_nodes]

    @property
    def score_parts(self) -> dict[str, dict[str, int]]:
        """Per feasible node, each priority's normalized score (before its weight)."""
        parts: dict[str, dict[str, int]] = {name: {} for name in self.scores}
        for priority, values in self.priority_scores.items():
            for name, value in zip(self.scores, values, strict=True):
                parts[name][priority] = value
        return parts

    def reject(self, node: str, predicate: Predicate, status: Status) -> None:
        """A filter rejected the node: its reasons, and who rejected it."""
        self.filtered[node] = list(status.reasons)
        self.rejected_by[node] = predicate.policy_name
        self.rejected_plugin[node] = predicate.plugin.name
        self.failed_plugins.add(predicate.plugin.name)
        if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            self.unresolvable_nodes.add(node)

    def pass_over(self, node: str, exc: Exception) -> None:
        """No plugin could read the node: it is left out, and the decision says why."""
        self.filtered[node] = [REASON_UNREADABLE]
        self.rejected_by[node] = REASON_UNREADABLE
        self.unresolvable_nodes.add(node)
        self.unreadable[node] = f"{type(exc).__name__}: {exc}"

    def fail(self, message: str) -> None:
        """An internal error (upstream's SchedulerError): the pod is retried after backoff."""
        self.error = message
        self.message = message


def fit_error_message(
    all_nodes: int, pre_filter_message: str, filtered: dict[str, list[str]]
) -> str:
    """Upstream's FitError text: the pre-filter message, or the sorted reason histogram."""
    message = f"0/{all_nodes} nodes are available:"
    if pre_filter_message:
        return f"{message} {pre_filter_message}."
    counts: dict[str, int] = {}
    for reasons in filtered.values():
        for reason in reasons:
            counts[reason] = counts.get(reason, 0) + 1
    histogram = sorted(f"{count} {reason}" for reason, count in counts.items())
    if histogram:
        message += " " + ", ".join(histogram) + "."
    return message
