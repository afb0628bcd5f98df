"""What the shadow has seen so far: comparisons counted by outcome, the reasons it would
have rejected the other scheduler's nodes, the latest differences, and its verdict on
the pods still pending — the JSON ``/shadow/report`` serves.

Bounded whatever the cluster does: counts are counters, the differences kept are the
latest ``RECENT_DIFFERENCES``, and a pending pod is held only until it is bound or gone.
A report costs the same after three comparisons or three million: the median gap is
walked over the distinct gaps, and the pending pods listed are the latest
``PENDING_LISTED``.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from volsched.scheduling.shadow.comparison import Comparison, Outcome
from volsched.scheduling.shadow.savings import StorageSavings

RECENT_DIFFERENCES = 100
# The pending pods whose verdicts the report lists (the most recently decided).
PENDING_LISTED = 100


@dataclass(frozen=True, slots=True)
class PendingVerdict:
    """volsched's latest word on a pod the other scheduler has not bound yet."""

    node: str | None
    message: str = ""


class ShadowTally:
    def __init__(self, scheduler_names: Iterable[str], recent: int = RECENT_DIFFERENCES) -> None:
        self.scheduler_names = tuple(scheduler_names)
        self.outcomes: Counter[Outcome] = Counter()
        self.by_scheduler: Counter[tuple[str, Outcome]] = Counter()
        self.reasons: Counter[str] = Counter()
        self.causes: Counter[str] = Counter()
        # Stranded capacity, volumes off the pod's node, claim pods pending for volumes.
        self.storage = StorageSavings()
        # Gap → how many: exact and bounded (a gap is a difference of weighted scores).
        self.score_gaps: Counter[int] = Counter()
        self.differences: deque[Comparison] = deque(maxlen=recent)
        # Insertion order is decision order: a pod decided again moves to the end.
        self.pending: dict[str, PendingVerdict] = {}
        self._placeable = 0

    @property
    def compared(self) -> int:
        return sum(self.outcomes.values())

    def record(self, comparison: Comparison) -> None:
        self.outcomes[comparison.outcome] += 1
        self.by_scheduler[(comparison.scheduler_name, comparison.outcome)] += 1
        self.causes[str(comparison.cause)] += 1
        self.storage.record(comparison.stranded, comparison.off_node)
        self.forget_pending(comparison.pod)
        if comparison.outcome in (Outcome.REJECTED, Outcome.UNSCHEDULABLE, Outcome.UNKNOWN_NODE):
            self.reasons.update(set(comparison.reasons))
        if comparison.outcome is Outcome.LOWER_SCORE and comparison.score_gap is not None:
            self.score_gaps[comparison.score_gap] += 1
        if not comparison.outcome.agrees:
            self.differences.append(comparison)

    def decided_pending(self, pod: str, verdict: PendingVerdict) -> None:
        self.forget_pending(pod)
        self.pending[pod] = verdict
        self._placeable += verdict.node is not None

    def forget_pending(self, pod: str) -> None:
        self.storage.pending_for_volumes.pop(pod, None)
        old = self.pending.pop(pod, None)
        if old is not None:
            self._placeable -= old.node is not None

    def _median_gap(self) -> int | None:
        """The median of every gap counted, walked over the distinct gaps (a few hundred
        at most) rather than expanded over every comparison ever made."""
        total = self.score_gaps.total()
        if not total:
            return None
        middle = total // 2
        seen = 0
        for gap in sorted(self.score_gaps):
            seen += self.score_gaps[gap]
            if seen > middle:
                return gap
        return None  # not reached: the counts add up to total

    def _pending_listed(self) -> list[dict[str, Any]]:
        listed = []
        for pod in reversed(self.pending):
            verdict = self.pending[pod]
            entry: dict[str, Any] = {"pod": pod, "node": verdict.node}
            if verdict.message:
                entry["message"] = verdict.message
            listed.append(entry)
            if len(listed) == PENDING_LISTED:
                break
        return listed

    def report(self) -> dict[str, Any]:
        compared = self.compared
        agreeing = sum(count for outcome, count in self.outcomes.items() if outcome.agrees)
        placeable = self._placeable
        return {
            "schedulerNames": list(self.scheduler_names),
            "compared": compared,
            "outcomes": {str(outcome): self.outcomes[outcome] for outcome in Outcome},
            "agreementRatio": round(agreeing / compared, 4) if compared else None,
            "bySchedulerName": {
                name: {
                    str(outcome): self.by_scheduler[(name, outcome)]
                    for outcome in Outcome
                    if self.by_scheduler[(name, outcome)]
                }
                for name in sorted({name for name, _ in self.by_scheduler})
            },
            "rejectionReasons": dict(self.reasons.most_common()),
            # Why each comparison came out as it did (see ``comparison.Cause``).
            "causes": dict(self.causes.most_common()),
            "storage": self.storage.report(),
            "scoreGap": {
                "median": self._median_gap(),
                "max": max(self.score_gaps) if self.score_gaps else None,
            },
            "pending": {
                "placeable": placeable,
                "unschedulable": len(self.pending) - placeable,
                # The latest verdicts, newest first, at most PENDING_LISTED of them.
                "pods": self._pending_listed(),
            },
            "differences": [comparison.as_json() for comparison in self.differences],
        }
