"""Deciding every pending pod of a snapshot, in queue order, each decision assumed before
the next: what ``volsched simulate`` and ``volsched explain`` show.

A pod that fits nowhere goes through preemption, completed at once: its victims leave
the snapshot and the pod is decided again, its nominated node first, so the pods after
it see the victims gone."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.runner import Decision, Scheduler
from volsched.scheduling.plugins.volume_binding import assumed_volumes
from volsched.scheduling.preemption.post_filter import Preemption, Preemptor
from volsched.scheduling.queue_order import in_queue_order
from volsched.scheduling.storage_placement import ReplicaContext, ReplicaPlan, placement_json


@dataclass(slots=True)
class PodOutcome:
    decision: Decision
    volumes: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Set when the pod found no node: the PostFilter's outcome, and the failed cycle
    # that led to it (``decision`` is then the cycle after the victims left).
    preemption: Preemption | None = None
    filter_decision: Decision | None = None

    @property
    def pod(self) -> Pod:
        return self.decision.pod


def claim_outcomes(decision: Decision) -> dict[str, dict[str, Any]]:
    """The claims this decision binds statically or provisions, by claim name."""
    assumed = assumed_volumes(decision.state)
    if assumed is None:
        return {}
    result: dict[str, dict[str, Any]] = {}
    for binding in assumed.bindings:
        result[binding.claim.name] = {"volume": binding.pv.meta.name}
    for claim in assumed.provisions:
        entry: dict[str, Any] = {"provision": True}
        plan = assumed.plans.get(claim.key)
        describe = getattr(plan, "describe", None)
        if callable(describe):
            entry.update(describe())
        result[claim.name] = entry
    return dict(sorted(result.items()))


def pending_pods(cluster: ClusterCache, scheduler_name: str | None) -> list[Pod]:
    pods = [
        pod
        for pod in cluster.pending.values()
        if scheduler_name is None or pod.scheduler_name == scheduler_name
    ]
    return in_queue_order(cluster, pods)


def decide_with_preemption(scheduler: Scheduler, preemptor: Preemptor, pod: Pod) -> PodOutcome:
    decision = scheduler.schedule(pod)
    if decision.node is not None:
        return PodOutcome(decision, claim_outcomes(decision))
    preemption = preemptor.post_filter(decision)
    if preemption is None or preemption.node is None:
        return PodOutcome(decision, claim_outcomes(decision), preemption)
    for victim in preemption.victims:
        scheduler.cluster.delete("Pod", victim.meta.key)
    # The daemon's path: the nominated node first (Scheduler.schedule), then anywhere.
    again = scheduler.schedule(pod, nominated_node=preemption.node)
    return PodOutcome(again, claim_outcomes(again), preemption, decision)


@dataclass(slots=True)
class SimulationResult:
    pods: list[PodOutcome]
    volumes: list[dict[str, Any]]


def scheduler_for(schedulers: Scheduler | Mapping[str, Scheduler], pod: Pod) -> Scheduler:
    """The profile serving the pod's schedulerName; the first profile decides a pod that
    names none of them (a snapshot asks what volsched would do with every pod)."""
    if isinstance(schedulers, Scheduler):
        return schedulers
    return schedulers.get(pod.scheduler_name) or next(iter(schedulers.values()))


def simulate(
    cluster: ClusterCache,
    scheduler: Scheduler | Mapping[str, Scheduler],
    replicas: ReplicaContext | None,
    scheduler_name: str | None = None,
) -> SimulationResult:
    """Existing volumes' missing replicas first, then every pending pod in queue order;
    a volume provisioned for a pod is listed right after that pod's decision. With several
    profiles (by scheduler name), each pod is decided by its own."""
    volumes = replicas.place_volumes() if replicas is not None else []
    outcomes = []
    preemptors: dict[int, Preemptor] = {}
    for pod in pending_pods(cluster, scheduler_name):
        chosen = scheduler_for(scheduler, pod)
        held = chosen.profile.hold(pod)
        if held is not None:
            # PreEnqueue: never attempted, takes nothing, touches no volume.
            outcomes.append(PodOutcome(Decision(pod, message=held.message)))
            continue
        preemptor = preemptors.get(id(chosen))
        if preemptor is None:
            preemptor = preemptors[id(chosen)] = Preemptor(chosen)
        outcome = decide_with_preemption(chosen, preemptor, pod)
        decision = outcome.decision
        outcomes.append(outcome)
        assumed = assumed_volumes(decision.state)
        if assumed is None:
            continue
        for claim in assumed.provisions:
            plan = assumed.plans.get(claim.key)
            # A claim shared with an earlier pod was listed after that pod.
            if isinstance(plan, ReplicaPlan) and not plan.shared:
                volumes.append(placement_json(plan.placement))
    return SimulationResult(outcomes, volumes)
