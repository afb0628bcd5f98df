"""The cycle runner: upstream's message format, first-rejecting predicate, pre-filter
narrowing, kube-scheduler's node sampling and a reproducible tie-break."""

from __future__ import annotations

import random
from collections.abc import Collection

import pytest

from tests.support import cluster, node, pod
from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.profile import Predicate, Priority, Profile
from volsched.scheduling.framework.runner import (
    Scheduler,
    fit_error_message,
    num_feasible_nodes_to_find,
)
from volsched.scheduling.framework.status import SUCCESS, Status, error, unschedulable


class RejectNodes:
    """A predicate rejecting the named nodes with a given reason (test double)."""

    def __init__(self, name: str, reasons: dict[str, tuple[str, ...]]) -> None:
        self.name = name
        self.reasons = reasons
        self.calls: list[str] = []

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        self.calls.append(node.name)
        if node.name in self.reasons:
            return unschedulable(*self.reasons[node.name])
        return None


class Narrow:
    name = "Narrow"

    def __init__(self, nodes: Collection[str] | None) -> None:
        self.nodes = nodes

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[Collection[str] | None, Status]:
        return self.nodes, SUCCESS

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        return None


class Broken:
    name = "Broken"

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        return error("disk on fire")


class ByName:
    """Scores nodes by a fixed table (test double)."""

    name = "ByName"

    def __init__(self, table: dict[str, int]) -> None:
        self.table = table

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        return self.table.get(node.name, 0)


def small_cluster(count: int = 3) -> ClusterCache:
    return cluster(*[node(f"n{i}") for i in range(1, count + 1)], pod("p"))


def test_histogram_message_is_sorted_and_counts_each_reason() -> None:
    filtered = {
        "a": ["Insufficient cpu", "Insufficient memory"],
        "b": ["Insufficient cpu"],
        "c": ["x"],
    }
    assert (
        fit_error_message(3, "", filtered)
        == "0/3 nodes are available: 1 Insufficient memory, 1 x, 2 Insufficient cpu."
    )
    assert (
        fit_error_message(2, "pre-filter says no", {})
        == "0/2 nodes are available: pre-filter says no."
    )


def test_first_rejecting_predicate_wins_and_later_ones_do_not_run() -> None:
    cache = small_cluster()
    first = RejectNodes("First", {"n1": ("reason one",)})
    second = RejectNodes("Second", {"n1": ("reason two",), "n2": ("reason two",)})
    profile = Profile([Predicate("First", first), Predicate("Second", second)], [])
    decision = Scheduler(cache, profile, random.Random(0)).schedule(cache.pending["default/p"])
    assert decision.node == "n3"
    assert decision.filtered == {"n1": ["reason one"], "n2": ["reason two"]}
    assert decision.rejected_by == {"n1": "First", "n2": "Second"}
    assert "n1" not in second.calls


def test_pre_filter_narrowing_marks_the_other_nodes() -> None:
    cache = small_cluster()
    profile = Profile([Predicate("Narrow", Narrow({"n2"}))], [])
    decision = Scheduler(cache, profile, random.Random(0)).schedule(cache.pending["default/p"])
    assert decision.node == "n2"
    assert decision.filtered == {
        "n1": ["node(s) didn't satisfy plugin(s) [Narrow]"],
        "n3": ["node(s) didn't satisfy plugin(s) [Narrow]"],
    }


def test_pre_filter_narrowing_to_nothing() -> None:
    cache = small_cluster()
    profile = Profile([Predicate("Narrow", Narrow(set()))], [])
    decision = Scheduler(cache, profile, random.Random(0)).schedule(cache.pending["default/p"])
    assert decision.message == "0/3 nodes are available: node(s) didn't satisfy plugin Narrow."


def test_filter_error_is_a_scheduler_error_with_upstream_text() -> None:
    cache = small_cluster()
    profile = Profile([Predicate("Broken", Broken())], [])
    decision = Scheduler(cache, profile, random.Random(0)).schedule(cache.pending["default/p"])
    assert decision.node is None
    assert decision.error == 'running "Broken" filter plugin: disk on fire'
    assert "default/p" in cache.pending


def test_weighted_scores_and_assumption() -> None:
    cache = small_cluster()
    profile = Profile([], [Priority("ByName", ByName({"n1": 10, "n2": 30, "n3": 20}), 3)])
    decision = Scheduler(cache, profile, random.Random(0)).schedule(cache.pending["default/p"])
    assert decision.scores == {"n1": 30, "n2": 90, "n3": 60}
    assert decision.node == "n2"
    assert "default/p" in cache.nodes["n2"].pods
    assert "default/p" not in cache.pending


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_ties_are_broken_by_the_seeded_rng_reproducibly(seed: int) -> None:
    results = set()
    for _ in range(3):
        cache = small_cluster()
        profile = Profile([], [Priority("ByName", ByName({}), 1)])
        decision = Scheduler(cache, profile, random.Random(seed)).schedule(
            cache.pending["default/p"]
        )
        results.add(decision.node)
    assert len(results) == 1


@pytest.mark.parametrize(
    ("percentage", "nodes", "expected"),
    [
        (0, 50, 50),
        (0, 100, 100),
        (0, 1000, 420),
        (0, 5000, 500),
        (0, 6000, 300),
        (0, 20000, 1000),
        (100, 5000, 5000),
        (1, 5000, 100),
    ],
)
def test_num_feasible_nodes_to_find(percentage: int, nodes: int, expected: int) -> None:
    assert num_feasible_nodes_to_find(percentage, nodes) == expected


def test_sampling_stops_early_and_rotates_the_start() -> None:
    cache = cluster(*[node(f"n{i:03d}") for i in range(200)], pod("a"), pod("b"))
    profile = Profile([], [])
    scheduler = Scheduler(cache, profile, random.Random(0))
    first = scheduler.schedule(cache.pending["default/a"])
    assert len(first.evaluated) == 100
    second = scheduler.schedule(cache.pending["default/b"])
    assert second.evaluated[0] == "n100"
