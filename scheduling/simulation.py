"""Deciding every pending pod of a snapshot, in queue order, each decision assumed before
the next: what ``volsched simulate`` and ``volsched explain`` show."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.runner import Decision, Scheduler
from volsched.scheduling.plugins.scheduling_gates import MESSAGE as GATED_MESSAGE
from volsched.scheduling.plugins.scheduling_gates import is_gated
from volsched.scheduling.plugins.volume_binding import assumed_volumes
from volsched.scheduling.queue_order import in_queue_order
from volsched.scheduling.storage_placement import ReplicaContext, ReplicaPlan, placement_json


@dataclass(slots=True)
class PodOutcome:
    decision: Decision
    volumes: dict[str, dict[str, Any]] = field(default_factory=dict)

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
    for pod in pending_pods(cluster, scheduler_name):
        if is_gated(pod):
            # PreEnqueue: never attempted, takes nothing, touches no volume.
            outcomes.append(PodOutcome(Decision(pod, message=GATED_MESSAGE)))
            continue
        decision = scheduler_for(scheduler, pod).schedule(pod)
        outcomes.append(PodOutcome(decision, claim_outcomes(decision)))
        assumed = assumed_volumes(decision.state)
        if assumed is None:
            continue
        for claim in assumed.provisions:
            plan = assumed.plans.get(claim.key)
            # A claim shared with an earlier pod was listed after that pod.
            if isinstance(plan, ReplicaPlan) and not plan.shared:
                volumes.append(placement_json(plan.placement))
    return SimulationResult(outcomes, volumes)
