"""A small cluster language for preemption tests: nodes, running pods with a priority and
a start time, the pending preemptor, and budgets; decided through the default policy."""

from __future__ import annotations

import random
from typing import Any

from tests.support import cluster, meta, pod
from volsched.cache.cluster import ClusterCache
from volsched.scheduling.framework.runner import Scheduler
from volsched.scheduling.policy import default_policy
from volsched.scheduling.preemption.post_filter import Preemption, Preemptor
from volsched.scheduling.profile_builder import PluginFactory, build_profile
from volsched.scheduling.scheduler_config import default_profile

Raw = dict[str, Any]


def running(
    name: str,
    node_name: str,
    priority: int,
    cpu: str = "1",
    started: str = "2026-01-01T00:00:00Z",
    labels: dict[str, str] | None = None,
    claims: list[str] | None = None,
) -> Raw:
    raw = pod(name, cpu=cpu, node_name=node_name, priority=priority, labels=labels, claims=claims)
    raw["status"] = {"phase": "Running", "startTime": started}
    return raw


def preemptor(name: str = "high", priority: int = 100, cpu: str = "1", **spec: Any) -> Raw:
    return pod(name, cpu=cpu, priority=priority, spec=spec or None)


def budget(
    name: str, selector: dict[str, str], allowed: int, disrupted: tuple[str, ...] = ()
) -> Raw:
    return {
        "kind": "PodDisruptionBudget",
        "metadata": meta(name, "default"),
        "spec": {"selector": {"matchLabels": selector}},
        "status": {
            "disruptionsAllowed": allowed,
            "disruptedPods": {name: "2026-01-01T00:00:00Z" for name in disrupted},
        },
    }


def scheduler_for(cache: ClusterCache, kube_scheduler_profile: bool = False) -> Scheduler:
    """The legacy Policy's defaults, or kube-scheduler's default profile (with
    InterPodAffinity and PodTopologySpread)."""
    policy = (
        default_profile(with_storage=False).policy
        if kube_scheduler_profile
        else default_policy(with_storage=False)
    )
    return Scheduler(cache, build_profile(policy, PluginFactory(cache)), random.Random(0))


def preempt(
    *objects: Raw, pending: str = "default/high", kube_scheduler_profile: bool = False
) -> Preemption:
    """Decide the pending pod; it must fail filtering; return the PostFilter outcome."""
    cache = cluster(*objects)
    scheduler = scheduler_for(cache, kube_scheduler_profile)
    decision = scheduler.find_node(cache.pending[pending])
    assert decision.node is None, f"{pending} fits on {decision.node} without preemption"
    outcome = Preemptor(scheduler).post_filter(decision)
    assert outcome is not None
    return outcome
