"""Invariants of preemption over generated nodes: a victim always has a lower priority
than the preemptor, and when evicting only pods no PodDisruptionBudget protects would
make room on some node, no protected pod is evicted."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import cluster, node
from tests.unit.preemption.builders import budget, preemptor, running, scheduler_for
from volsched.scheduling.preemption.post_filter import Preemptor

Raw = dict[str, Any]
GUARDED = {"app": "guarded"}
PREEMPTOR_PRIORITY = 50

running_pod = st.tuples(
    st.sampled_from([-5, 0, 10, 49, 50, 51, 100]),  # priority, equal to the preemptor's too
    st.integers(min_value=1, max_value=4),  # cpu
    st.booleans(),  # protected by a budget that allows no disruption
)
node_pods = st.lists(running_pod, min_size=0, max_size=5)


@settings(max_examples=150, deadline=None)
@given(
    nodes=st.lists(node_pods, min_size=1, max_size=3),
    want_cpu=st.integers(min_value=1, max_value=6),
)
def test_preemption_respects_priority_and_budgets(
    nodes: list[list[tuple[int, int, bool]]], want_cpu: int
) -> None:
    capacity = 8
    objects: list[Raw] = [budget("guard", GUARDED, 0)]
    for index, pods in enumerate(nodes):
        name = f"n{index}"
        objects.append(node(name, cpu=str(capacity)))
        used = 0
        for number, (priority, cpu, protected) in enumerate(pods):
            if used + cpu > capacity:
                continue  # a running node is never over-committed
            used += cpu
            labels = GUARDED if protected else {"app": "free"}
            objects.append(running(f"{name}-p{number}", name, priority, str(cpu), labels=labels))
    objects.append(preemptor(priority=PREEMPTOR_PRIORITY, cpu=str(want_cpu)))
    cache = cluster(*objects)
    scheduler = scheduler_for(cache)
    decision = scheduler.find_node(cache.pending["default/high"])
    if decision.node is not None:
        return
    outcome = Preemptor(scheduler).post_filter(decision)
    assert outcome is not None
    for victim in outcome.victims:
        assert (victim.priority or 0) < PREEMPTOR_PRIORITY
    respecting_choice_exists = any(
        capacity
        - sum(
            int(pod.requests.get("cpu", 0)) // 1000
            for pod in info.pods.values()
            if (pod.priority or 0) >= PREEMPTOR_PRIORITY or pod.labels == GUARDED
        )
        >= want_cpu
        for info in cache.nodes.values()
    )
    if respecting_choice_exists:
        assert outcome.node is not None
        assert all(victim.labels != GUARDED for victim in outcome.victims)
