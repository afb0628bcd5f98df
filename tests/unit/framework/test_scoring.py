"""Choosing among the scored nodes: the highest total, ties at random and each tie
equally likely; and each priority's part worked out only when read."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from tests.support import cluster, node, pod
from volsched.scheduling.framework.runner import Scheduler
from volsched.scheduling.framework.scoring import best, score
from volsched.scheduling.profile_builder import PluginFactory, build_profile
from volsched.scheduling.scheduler_config import default_profile

BEST = [
    pytest.param(["a", "b", "c"], [10, 30, 20], {"b"}, id="one highest"),
    pytest.param(["a", "b", "c"], [30, 10, 30], {"a", "c"}, id="a tie among two"),
    pytest.param(["a"], [0], {"a"}, id="one node"),
    pytest.param(["a", "b"], [-5, -1], {"b"}, id="negative totals"),
]


@pytest.mark.parametrize(("names", "totals", "allowed"), BEST)
def test_the_best_node_is_one_of_the_highest(
    names: list[str], totals: list[int], allowed: set[str]
) -> None:
    picked = Counter(best(names, totals, random.Random(seed)) for seed in range(400))
    assert set(picked) == allowed
    # Each tie comes up about as often as the others (400 draws, two ties: ≥ 150 each).
    assert min(picked.values()) >= 400 // len(allowed) * 3 // 4


def test_a_single_best_node_does_not_draw_from_the_random_source() -> None:
    rng = random.Random(3)
    state = rng.getstate()
    assert best(["a", "b"], [1, 2], rng) == "b"
    assert rng.getstate() == state


def test_each_priority_part_is_worked_out_when_read_and_dropped_with_the_diagnosis() -> None:
    cache = cluster(node("a", cpu="2"), node("b", cpu="16"), pod("p", cpu="1"))
    profile = build_profile(default_profile(with_storage=False).policy, PluginFactory(cache))
    decision = Scheduler(cache, profile, random.Random(1)).schedule(cache.pending["default/p"])
    assert decision.node == "b"
    assert decision.scored is not None
    parts = decision.score_parts
    assert parts["b"]["NodeResourcesFit"] > parts["a"]["NodeResourcesFit"]
    weights = {p.policy_name: p.weight for p in profile.priorities}
    for name, total in decision.scores.items():
        assert total == sum(weights[p] * v for p, v in parts[name].items())
    decision.forget_diagnosis()
    assert decision.priority_scores == {} and decision.score_parts == {}


@pytest.mark.parametrize("start", [0, 7, 150, 199])
def test_the_filter_walk_visits_each_node_once_from_any_start(start: int) -> None:
    """200 nodes, 190 of them tainted: the walk from any start index goes round the
    whole list once (100 feasible nodes are wanted, only 10 exist) and finds each
    schedulable node exactly once."""
    taint = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
    nodes = [node(f"n{i:03}", taints=None if i % 20 == 0 else taint) for i in range(200)]
    cache = cluster(*nodes, pod("p", cpu="1"))
    profile = build_profile(default_profile(with_storage=False).policy, PluginFactory(cache))
    scheduler = Scheduler(cache, profile, random.Random(1))
    scheduler.next_start_node_index = start
    decision = scheduler.find_feasible(cache.pending["default/p"])
    assert sorted(info.name for info in decision.feasible) == [
        f"n{i:03}" for i in range(0, 200, 20)
    ]
    assert len(decision.evaluated) == 200 and len(set(decision.evaluated)) == 200
    assert decision.evaluated[0] == f"n{start:03}"


def test_scored_nodes_pick_as_the_names_would() -> None:
    """The loop picks from the scored nodes without naming them all; with the same
    random source it picks what ``best`` over the names picks."""
    cache = cluster(*(node(f"n{i}") for i in range(6)), pod("p", cpu="1"))
    profile = build_profile(default_profile(with_storage=False).policy, PluginFactory(cache))
    decision = Scheduler(cache, profile, random.Random(1)).find_feasible(cache.pending["default/p"])
    scored = score(profile.score_steps, decision.state, decision.pod, decision.feasible)
    for totals in ([5, 9, 9, 1, 9, 0], [1, 2, 3, 4, 5, 6], [7] * 6):
        scored.totals = totals
        for seed in range(20):
            assert scored.best(random.Random(seed)) == best(
                scored.names(), totals, random.Random(seed)
            )


def test_a_walk_narrowed_by_prefilter_moves_the_start_on_over_the_whole_cluster() -> None:
    """Upstream advances nextStartNodeIndex by the nodes a walk looked at, modulo every
    node: a pod narrowed to one node (DaemonSet-style matchFields) moves the next walk's
    start by one, rather than sending it back to the first node."""
    nodes = [node(f"n{i}") for i in range(10)]
    pinned = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": ["n7"]}
                            ]
                        }
                    ]
                }
            }
        }
    }
    cache = cluster(*nodes, pod("pinned", spec=pinned), pod("free"))
    profile = build_profile(default_profile(with_storage=False).policy, PluginFactory(cache))
    scheduler = Scheduler(cache, profile, random.Random(1))
    scheduler.next_start_node_index = 3
    assert scheduler.find_feasible(cache.pending["default/pinned"]).evaluated == ["n7"]
    assert scheduler.next_start_node_index == 4
    assert scheduler.find_feasible(cache.pending["default/free"]).evaluated[0] == "n4"
