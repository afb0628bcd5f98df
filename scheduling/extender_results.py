"""What HTTP extenders answer, folded into a decision: upstream's
findNodesThatPassExtenders and the extender half of prioritizeNodes, without the I/O.

The daemon asks the extenders (it does the waiting) between ``Scheduler.find_feasible``
and ``Scheduler.select``; these functions apply each answer to the decision, so the
rules are tested on plain data.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping

from volsched.scheduling.framework.interfaces import MAX_NODE_SCORE
from volsched.scheduling.framework.runner import Decision, fit_error_message

# k8s.io/kube-scheduler/extender/v1: an extender scores nodes 0..10.
MAX_EXTENDER_PRIORITY = 10


def apply_filter_result(
    decision: Decision,
    extender: str,
    kept: Collection[str],
    failed: Mapping[str, str],
    failed_and_unresolvable: Mapping[str, str],
) -> None:
    """One extender's filter answer: the feasible nodes it did not keep are rejected
    with its reason. A node in ``failed_and_unresolvable`` is one no eviction can help
    (preemption passes it over), and that map wins over ``failed``; a node dropped
    without any reason is unresolvable too, as upstream treats a node with no status.
    When nothing is left the decision carries upstream's "0/N nodes are available"."""
    keep = set(kept)
    for info in decision.feasible:
        name = info.name
        if name in keep:
            continue
        if name in failed_and_unresolvable:
            decision.filtered[name] = [failed_and_unresolvable[name]]
            decision.unresolvable_nodes.add(name)
        elif name in failed:
            decision.filtered[name] = [failed[name]]
        else:
            decision.filtered[name] = []
            decision.unresolvable_nodes.add(name)
        decision.rejected_by[name] = extender
    decision.feasible = [info for info in decision.feasible if info.name in keep]
    if not decision.feasible:
        decision.message = fit_error_message(decision.total_nodes, "", decision.filtered)


def failed_cycle(decision: Decision, message: str) -> None:
    """An extender error that is not ignorable: the pod's cycle fails with it (the
    pod's SchedulerError, retried after backoff)."""
    decision.feasible = []
    decision.error = decision.message = message


def combined_scores(answers: Iterable[tuple[Iterable[tuple[str, int]], int]]) -> dict[str, int]:
    """Each extender's (host, score) list with its weight → what it adds to each node's
    total: score × weight, scaled from the extender range (0–10) to the scheduler's
    (0–100), summed over the extenders, as upstream's prioritizeNodes does."""
    scale = MAX_NODE_SCORE // MAX_EXTENDER_PRIORITY
    totals: dict[str, int] = {}
    for scores, weight in answers:
        for host, score in scores:
            totals[host] = totals.get(host, 0) + score * weight * scale
    return totals
