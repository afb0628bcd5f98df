"""Which candidate node a preemption uses: upstream's pickOneNodeForPreemption.

Criteria in order, each only breaking the ties of the one before: fewest
PodDisruptionBudget violations; the lowest priority among the most important victims;
the smallest sum of victim priorities (each shifted by 2^31, so that fewer victims weigh
more than negative priorities); the fewest victims; the latest start among the most
important victims; then the first candidate.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from volsched.cache.objects.core import Pod
from volsched.scheduling.preemption.victims import Candidate, start_time

PRIORITY_SHIFT = 2**31
MIN_CANDIDATE_NODES_PERCENTAGE = 10
MIN_CANDIDATE_NODES_ABSOLUTE = 100


def candidates_wanted(
    potential_nodes: int,
    percentage: int = MIN_CANDIDATE_NODES_PERCENTAGE,
    absolute: int = MIN_CANDIDATE_NODES_ABSOLUTE,
) -> int:
    """How many candidate nodes the dry run looks for before it stops (upstream's
    calculateNumCandidates: ``percentage`` % of the nodes, at least ``absolute``, at
    most all; DefaultPreemptionArgs, 10 and 100 by default)."""
    wanted = potential_nodes * percentage // 100
    return min(max(wanted, absolute), potential_nodes)


def _earliest_start_of_most_important(
    victims: Candidate, priority_of: Callable[[Pod], int]
) -> float:
    top = max(priority_of(pod) for pod in victims.pods)
    return min(start_time(pod) for pod in victims.pods if priority_of(pod) == top)


def pick_one_node(
    candidates: Sequence[Candidate], priority_of: Callable[[Pod], int]
) -> Candidate | None:
    if not candidates:
        return None
    for candidate in candidates:
        if not candidate.pods:
            return candidate

    criteria: list[Callable[[Candidate], float]] = [
        lambda c: -c.pdb_violations,
        lambda c: -max(priority_of(pod) for pod in c.pods),
        lambda c: -sum(priority_of(pod) + PRIORITY_SHIFT for pod in c.pods),
        lambda c: -len(c.pods),
        lambda c: _earliest_start_of_most_important(c, priority_of),
    ]
    remaining = list(candidates)
    for criterion in criteria:
        scores = [criterion(candidate) for candidate in remaining]
        best = max(scores)
        remaining = [c for c, score in zip(remaining, scores, strict=True) if score == best]
        if len(remaining) == 1:
            break
    return remaining[0]
