"""What the shadow has seen so far: comparisons counted by outcome, the reasons it would
have rejected the other scheduler's nodes, the latest differences, and its verdict on
the pods still pending — the JSON ``/shadow/report`` serves.

Bounded whatever the cluster does: counts are counters, the differences kept are the
latest ``RECENT_DIFFERENCES``, and a pending pod is held only until it is bound or gone.
"""

from __future__ import annotations

from collections import Counter, deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from volsched.scheduling.shadow.comparison import Comparison, Outcome

RECENT_DIFFERENCES = 100


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
        # Gap → how many: exact and bounded (a gap is a difference of weighted scores).
        self.score_gaps: Counter[int] = Counter()
        self.differences: deque[Comparison] = deque(maxlen=recent)
        self.pending: dict[str, PendingVerdict] = {}

    @property
    def compared(self) -> int:
        return sum(self.outcomes.values())

    def record(self, comparison: Comparison) -> None:
        self.outcomes[comparison.outcome] += 1
        self.by_scheduler[(comparison.scheduler_name, comparison.outcome)] += 1
        self.pending.pop(comparison.pod, None)
        if comparison.outcome in (Outcome.REJECTED, Outcome.UNSCHEDULABLE, Outcome.UNKNOWN_NODE):
            self.reasons.update(set(comparison.reasons))
        if comparison.outcome is Outcome.LOWER_SCORE and comparison.score_gap is not None:
            self.score_gaps[comparison.score_gap] += 1
        if not comparison.outcome.agrees:
            self.differences.append(comparison)

    def decided_pending(self, pod: str, verdict: PendingVerdict) -> None:
        self.pending[pod] = verdict

    def forget_pending(self, pod: str) -> None:
        self.pending.pop(pod, None)

    def report(self) -> dict[str, Any]:
        compared = self.compared
        agreeing = sum(count for outcome, count in self.outcomes.items() if outcome.agrees)
        placeable = sum(1 for verdict in self.pending.values() if verdict.node is not None)
        gaps = sorted(self.score_gaps.elements())
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
            "scoreGap": {
                "median": gaps[len(gaps) // 2] if gaps else None,
                "max": gaps[-1] if gaps else None,
            },
            "pending": {
                "placeable": placeable,
                "unschedulable": len(self.pending) - placeable,
            },
            "differences": [comparison.as_json() for comparison in self.differences],
        }
