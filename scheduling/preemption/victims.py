"""Choosing the fewest, least important pods to evict from one node.

Upstream's SelectVictimsOnNode: take every lower-priority pod off a copy of the node; if
the pod still does not fit, no eviction on this node helps. Otherwise put the pods back
one by one, most important first — those whose eviction would break a
PodDisruptionBudget before the others — keeping each one that still lets the pod fit.
Whatever could not be put back is the victim list.

Volumes need no special case: the filters read bound PVs from the claims, not from the
pods, so a victim's PV stays bound to its claim and is never counted as freed.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.cache.objects.policy import PodDisruptionBudget
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.pod_changes import add_pod, remove_pod
from volsched.scheduling.framework.profile import Profile
from volsched.scheduling.framework.status import Code, Status
from volsched.scheduling.preemption.nominated import clone_node

REASON_NO_VICTIMS = "No preemption victims found for incoming pod"

# Runs every filter of the profile on a node state with its cycle state; None when the
# pod fits.
FitCheck = Callable[[NodeInfo, CycleState], Status | None]


@dataclass(frozen=True, slots=True)
class PodChanges:
    """Tells the preemptor's PreFilter states of the pods the dry run takes off a node
    and puts back (upstream's removePod / addPod in SelectVictimsOnNode)."""

    profile: Profile
    pod: Pod

    def removed(self, state: CycleState, victim: Pod, node: NodeInfo) -> None:
        remove_pod(self.profile, state, self.pod, victim, node)

    def added(self, state: CycleState, victim: Pod, node: NodeInfo) -> None:
        add_pod(self.profile, state, self.pod, victim, node)


@dataclass(frozen=True, slots=True)
class Candidate:
    """A node preemption could clear (upstream's candidate): the pods to evict from it,
    most important first, and how many of them break a PodDisruptionBudget."""

    node: str
    pods: tuple[Pod, ...]
    pdb_violations: int


def start_time(pod: Pod) -> float:
    """A pod that has not started counts as starting now, i.e. after every started one."""
    return pod.start_time if pod.start_time is not None else math.inf


def importance_key(pod: Pod, priority_of: Callable[[Pod], int]) -> tuple[int, float]:
    """Upstream's MoreImportantPod as a sort key: higher priority, then older."""
    return (-priority_of(pod), start_time(pod))


def split_by_budget(
    pods: Sequence[Pod], budgets: Sequence[PodDisruptionBudget]
) -> tuple[list[Pod], list[Pod]]:
    """(violating, non-violating), each in the given order.

    Every pod spends one disruption of each budget protecting it (unless the budget has
    already counted it as disrupted); a pod that takes a budget below zero violates it.
    """
    allowed = [budget.disruptions_allowed for budget in budgets]
    violating: list[Pod] = []
    others: list[Pod] = []
    for pod in pods:
        violated = False
        for index, budget in enumerate(budgets):
            if not budget.protects(pod.namespace, pod.labels):
                continue
            if pod.name in budget.disrupted_pods:
                continue
            allowed[index] -= 1
            if allowed[index] < 0:
                violated = True
        (violating if violated else others).append(pod)
    return violating, others


def select_victims_on_node(
    info: NodeInfo,
    pod: Pod,
    priority_of: Callable[[Pod], int],
    budgets: Sequence[PodDisruptionBudget],
    fits: FitCheck,
    state: CycleState | None = None,
    changes: PodChanges | None = None,
) -> tuple[Candidate | None, Status | None]:
    """The victims on this node, or the status saying why preemption cannot help here.

    ``state`` is this node's own clone of the cycle state; with ``changes`` it follows
    every pod taken off the node and put back, so affinity and spread are judged on
    the node as the dry run left it."""
    cycle_state = state if state is not None else CycleState()
    own = priority_of(pod)
    lower = [other for other in info.pods.values() if priority_of(other) < own]
    if not lower:
        return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (REASON_NO_VICTIMS,))
    lower.sort(key=lambda other: importance_key(other, priority_of))
    removed = {other.meta.key for other in lower}
    node = clone_node(info, without=removed)
    if changes is not None:
        for other in lower:
            changes.removed(cycle_state, other, node)
    status = fits(node, cycle_state)
    if status is not None:
        return None, status
    violating, others = split_by_budget(lower, budgets)
    victims: list[Pod] = []
    violations = 0
    for group, counts in ((violating, True), (others, False)):
        for candidate in group:
            node.add_pod(candidate)
            if changes is not None:
                changes.added(cycle_state, candidate, node)
            if fits(node, cycle_state) is None:
                continue
            node.remove_pod(candidate.meta.key)
            if changes is not None:
                changes.removed(cycle_state, candidate, node)
            victims.append(candidate)
            violations += counts
    if not victims:
        message = f'expected at least one victim pod on node "{info.name}"'
        return None, Status(Code.ERROR, (message,))
    victims.sort(key=lambda other: importance_key(other, priority_of))
    return Candidate(info.name, tuple(victims), violations), None
