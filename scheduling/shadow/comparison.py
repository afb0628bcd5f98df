"""One pod, two schedulers: volsched's decision against the node another scheduler bound
the pod to.

The decision is made over every node (``Scheduler.find_node(pod, only=all nodes)``), so
the other scheduler's node was always filtered and, if it passed, scored on the same
scale as volsched's own choice. The outcome is one of:

- ``agreed``: the same node;
- ``tied``: another node, but one volsched scores as high as its own — volsched breaks
  ties at random, so the same cluster could have gone either way;
- ``lower_score``: a node volsched would accept, scored lower (``score_gap`` > 0 is our
  score of our node minus our score of theirs);
- ``rejected``: a node volsched's filters rule out; ``reasons`` are the filter's reason
  strings (upstream's wording, as in a FailedScheduling event);
- ``unschedulable``: volsched would place the pod nowhere, yet it was bound;
- ``unknown_node``: a node volsched's cache does not hold;
- ``error``: volsched's cycle failed for this pod (a plugin could not read an object).
"""

from __future__ import annotations

from collections.abc import Container
from dataclasses import dataclass
from enum import StrEnum

from volsched.scheduling.framework.runner import Decision

REASON_UNKNOWN_NODE = 'node "{node}" not found'


class Outcome(StrEnum):
    AGREED = "agreed"
    TIED = "tied"
    LOWER_SCORE = "lower_score"
    REJECTED = "rejected"
    UNSCHEDULABLE = "unschedulable"
    UNKNOWN_NODE = "unknown_node"
    ERROR = "error"

    @property
    def agrees(self) -> bool:
        """Whether volsched would be as content with the other scheduler's node."""
        return self in (Outcome.AGREED, Outcome.TIED)


@dataclass(frozen=True, slots=True)
class Comparison:
    pod: str
    scheduler_name: str
    their_node: str
    our_node: str | None
    outcome: Outcome
    # Why volsched rules their node out (rejected, unschedulable, unknown_node).
    reasons: tuple[str, ...] = ()
    # Our score of our node minus our score of theirs, when both passed our filters.
    score_gap: int | None = None
    # volsched's own message when it places the pod nowhere (upstream's FitError text).
    message: str = ""

    def as_json(self) -> dict[str, object]:
        return {
            "pod": self.pod,
            "schedulerName": self.scheduler_name,
            "theirNode": self.their_node,
            "ourNode": self.our_node,
            "outcome": str(self.outcome),
            "reasons": list(self.reasons),
            "scoreGap": self.score_gap,
            "message": self.message,
        }


def compare(decision: Decision, their_node: str, known_nodes: Container[str]) -> Comparison:
    """The outcome of ``decision`` (made over every node, without reserving) against
    ``their_node``."""
    pod = decision.pod

    def outcome(kind: Outcome, reasons: tuple[str, ...] = (), gap: int | None = None) -> Comparison:
        return Comparison(
            pod=pod.meta.key,
            scheduler_name=pod.scheduler_name,
            their_node=their_node,
            our_node=decision.node,
            outcome=kind,
            reasons=reasons,
            score_gap=gap,
            message=(decision.message or "") if decision.node is None else "",
        )

    if decision.error is not None:
        return outcome(Outcome.ERROR)
    if their_node not in known_nodes:
        unknown = (REASON_UNKNOWN_NODE.format(node=their_node),)
        return outcome(
            Outcome.UNSCHEDULABLE if decision.node is None else Outcome.UNKNOWN_NODE, unknown
        )
    if decision.node is None:
        # A pre-filter that rules out every node names no node: its message is the reason.
        reasons = decision.filtered.get(their_node) or [decision.message or "unschedulable"]
        return outcome(Outcome.UNSCHEDULABLE, tuple(reasons))
    if their_node == decision.node:
        return outcome(Outcome.AGREED, gap=0)
    if their_node in decision.filtered:
        return outcome(Outcome.REJECTED, tuple(decision.filtered[their_node]))
    ours = decision.scores.get(decision.node, 0)
    theirs = decision.scores.get(their_node)
    if theirs is None:
        # Not evaluated: only a cycle that stopped early leaves a node unjudged, and the
        # shadow evaluates every node. Said as what it is rather than guessed at.
        return outcome(Outcome.ERROR, (f"node {their_node} was not evaluated",))
    gap = ours - theirs
    return outcome(Outcome.TIED if gap <= 0 else Outcome.LOWER_SCORE, gap=gap)
