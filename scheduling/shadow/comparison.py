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

Every comparison also says which plugins make the difference, and a ``cause``:

- ``storage-preference``: only volsched's own storage plugins (PrioritizeVolumes,
  VolumeLocality, StorageNodeReady) prefer or require another node — a deliberate
  difference;
- ``rejected``: a filter kube-scheduler also runs rules their node out (``rejectedBy``
  names it; on the same cluster that points at a fidelity bug or at state the other
  scheduler did not have);
- ``fidelity``: the plugins kube-scheduler also runs, summed, score our node above
  theirs — on the cluster it decided on, kube-scheduler would have scored them so too,
  so this is a difference for volsched to fix (or a cluster the shadow saw differently);
- ``tie-break``: the two nodes score the same (``tied``);
- ``none`` for an agreement, ``unknown`` where there is nothing to attribute (an error,
  a node volsched does not know).
"""

from __future__ import annotations

from collections.abc import Container, Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from volsched.scheduling.framework.runner import Decision

REASON_UNKNOWN_NODE = 'node "{node}" not found'
# volsched's own plugins, which kube-scheduler does not run.
STORAGE_PLUGINS = frozenset({"PrioritizeVolumes", "VolumeLocality", "StorageNodeReady"})


class Cause(StrEnum):
    NONE = "none"
    STORAGE_PREFERENCE = "storage-preference"
    REJECTED = "rejected"
    FIDELITY = "fidelity"
    TIE_BREAK = "tie-break"
    UNKNOWN = "unknown"


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
    cause: Cause = Cause.NONE
    # The filter that rules their node out (its policy name), when one does.
    rejected_by: str = ""
    # Each plugin's weighted score on our node and on theirs, when both were scored, and
    # the plugins whose scores differ between the two.
    our_scores: tuple[tuple[str, int], ...] = ()
    their_scores: tuple[tuple[str, int], ...] = ()
    differing: tuple[str, ...] = ()
    # For a pod whose claims both schedulers served with existing PVs: the capacity
    # each choice leaves stranded beyond the requests, in bytes (theirs, ours).
    stranded: tuple[int, int] | None = None
    # For a pod with replicated volumes: how many have no healthy replica on each
    # scheduler's node (theirs, ours).
    off_node: tuple[int, int] | None = None

    def as_json(self) -> dict[str, object]:
        body: dict[str, object] = {
            "pod": self.pod,
            "schedulerName": self.scheduler_name,
            "theirNode": self.their_node,
            "ourNode": self.our_node,
            "outcome": str(self.outcome),
            "cause": str(self.cause),
            "reasons": list(self.reasons),
            "scoreGap": self.score_gap,
            "message": self.message,
        }
        if self.rejected_by:
            body["rejectedBy"] = self.rejected_by
        if self.stranded is not None:
            body["strandedBytes"] = {"theirs": self.stranded[0], "ours": self.stranded[1]}
        if self.off_node is not None:
            body["volumesOffNode"] = {"theirs": self.off_node[0], "ours": self.off_node[1]}
        if self.our_scores or self.their_scores or self.differing:
            body["ourScores"] = dict(self.our_scores)
            body["theirScores"] = dict(self.their_scores)
            body["differingPlugins"] = list(self.differing)
        return body


def _weighted(decision: Decision, node: str, weights: Mapping[str, int]) -> dict[str, int]:
    parts = decision.score_parts.get(node, {})
    return {name: score * weights.get(name, 1) for name, score in parts.items()}


def _attributed(
    decision: Decision, ours: str, theirs: str, weights: Mapping[str, int]
) -> dict[str, Any]:
    """Both nodes' weighted plugin scores, the plugins that differ, and the cause of a
    difference in score."""
    our_scores = _weighted(decision, ours, weights)
    their_scores = _weighted(decision, theirs, weights)
    differing = tuple(
        name for name in our_scores if our_scores.get(name, 0) != their_scores.get(name, 0)
    )
    # The part of the gap kube-scheduler's own plugins make: when it favours our node,
    # kube-scheduler scoring the same cluster would have too (fidelity); when it does
    # not, volsched's storage plugins alone make the difference.
    shared_gap = sum(
        our_scores.get(name, 0) - their_scores.get(name, 0)
        for name in differing
        if name not in STORAGE_PLUGINS
    )
    if not differing:
        cause = Cause.TIE_BREAK
    elif shared_gap > 0:
        cause = Cause.FIDELITY
    else:
        cause = Cause.STORAGE_PREFERENCE
    return {
        "our_scores": tuple(our_scores.items()),
        "their_scores": tuple(their_scores.items()),
        "differing": differing,
        "cause": cause,
    }


def compare(
    decision: Decision,
    their_node: str,
    known_nodes: Container[str],
    weights: Mapping[str, int] | None = None,
) -> Comparison:
    """The outcome of ``decision`` (made over every node, without reserving) against
    ``their_node``, attributed to plugins with the profile's ``weights`` (policy name →
    weight)."""
    pod = decision.pod
    weights = weights or {}

    def outcome(
        kind: Outcome, reasons: tuple[str, ...] = (), gap: int | None = None, **more: Any
    ) -> Comparison:
        return Comparison(
            pod=pod.meta.key,
            scheduler_name=pod.scheduler_name,
            their_node=their_node,
            our_node=decision.node,
            outcome=kind,
            reasons=reasons,
            score_gap=gap,
            message=(decision.message or "") if decision.node is None else "",
            **more,
        )

    def rejected(kind: Outcome, reasons: tuple[str, ...]) -> Comparison:
        by = decision.rejected_by.get(their_node, "")
        if not by and decision.pre_filter_rejection is not None:
            by = decision.pre_filter_rejection[0]
        cause = Cause.STORAGE_PREFERENCE if by in STORAGE_PLUGINS else Cause.REJECTED
        return outcome(kind, reasons, cause=cause, rejected_by=by)

    if decision.error is not None:
        return outcome(Outcome.ERROR, cause=Cause.UNKNOWN)
    if their_node not in known_nodes:
        unknown = (REASON_UNKNOWN_NODE.format(node=their_node),)
        return outcome(
            Outcome.UNSCHEDULABLE if decision.node is None else Outcome.UNKNOWN_NODE,
            unknown,
            cause=Cause.UNKNOWN,
        )
    if decision.node is None:
        # A pre-filter that rules out every node names no node: its message is the reason.
        reasons = decision.filtered.get(their_node) or [decision.message or "unschedulable"]
        return rejected(Outcome.UNSCHEDULABLE, tuple(reasons))
    if their_node == decision.node:
        return outcome(Outcome.AGREED, gap=0)
    if their_node in decision.filtered:
        return rejected(Outcome.REJECTED, tuple(decision.filtered[their_node]))
    ours = decision.scores.get(decision.node, 0)
    theirs = decision.scores.get(their_node)
    if theirs is None:
        # Not evaluated: only a cycle that stopped early leaves a node unjudged, and the
        # shadow evaluates every node. Said as what it is rather than guessed at.
        return outcome(
            Outcome.ERROR, (f"node {their_node} was not evaluated",), cause=Cause.UNKNOWN
        )
    gap = ours - theirs
    kind = Outcome.TIED if gap <= 0 else Outcome.LOWER_SCORE
    attributed = _attributed(decision, decision.node, their_node, weights)
    if kind is Outcome.TIED:
        attributed["cause"] = Cause.TIE_BREAK
    return outcome(kind, gap=gap, **attributed)
