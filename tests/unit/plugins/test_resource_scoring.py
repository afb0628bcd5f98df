"""NodeResourcesFit's scoring strategies: MostAllocated, RequestedToCapacityRatio and the
default LeastAllocated over configured resources and weights.

The rows follow the cases of upstream's most_allocated_test.go and
requested_to_capacity_ratio_test.go (differently sized nodes, weights, requests at
capacity, best-effort pods counted with non-zero defaults, extended resources the pod
does not ask for left out, the ratio's rounding and its zero-score rule), in our own
numbers; the comments give the arithmetic.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import cluster, node, parse, pod
from tests.unit.plugins.test_node_resources import containers, scores
from volsched.scheduling.plugins.node_resources import LeastAllocated
from volsched.scheduling.plugins.resource_scoring import (
    LEAST_ALLOCATED,
    MOST_ALLOCATED,
    REQUESTED_TO_CAPACITY_RATIO,
    ResourceAllocationScore,
    ScoringStrategy,
)
from volsched.scheduling.volumes.scoring import ShapePoint

Raw = dict[str, Any]
GPU = "example.com/gpu"
CPU_MEMORY = (("cpu", 1), ("memory", 1))
WITH_GPU = (("cpu", 1), ("memory", 1), (GPU, 1))
THREE_CPU_5000MI = containers({"cpu": "1", "memory": "2000Mi"}, {"cpu": "2", "memory": "3000Mi"})


def run(
    strategy: ScoringStrategy,
    nodes: list[Raw],
    incoming: Raw,
    existing: list[Raw] | None = None,
) -> list[int]:
    cache = cluster(*nodes, *(existing or []))
    plugin = ResourceAllocationScore(cache, strategy)
    incoming_pod = parse(pod("p", spec=incoming))
    with_pre_score = scores(plugin, incoming_pod, cache)
    assert scores(plugin, incoming_pod, cache, pre_score=False) == with_pre_score
    return with_pre_score


@pytest.mark.parametrize(
    ("resources", "nodes", "existing", "incoming", "expected"),
    [
        # n1: cpu 3/4 -> 75, memory 5000/10000 -> 50: (75 + 50) // 2 = 62;
        # n2: cpu 3/8 -> 37, memory 50: 87 // 2 = 43.
        pytest.param(
            CPU_MEMORY,
            [node("n1", "4", "10000Mi"), node("n2", "8", "10000Mi")],
            [],
            THREE_CPU_5000MI,
            [62, 43],
            id="nothing scheduled, differently sized nodes",
        ),
        # memory weighs 3: n1 (75 + 3 * 50) // 4 = 56; n2 (37 + 150) // 4 = 46.
        pytest.param(
            (("memory", 3), ("cpu", 1)),
            [node("n1", "4", "10000Mi"), node("n2", "8", "10000Mi")],
            [],
            THREE_CPU_5000MI,
            [56, 46],
            id="weighted resources",
        ),
        # The pod fills n1's cpu: 100 and memory 4000/8000 -> 50: 75; n2 cpu 3/6 -> 50 and
        # memory 4000/4000 -> 100: 75.
        pytest.param(
            CPU_MEMORY,
            [node("n1", "3", "8000Mi"), node("n2", "6", "4000Mi")],
            [],
            containers({"cpu": "3", "memory": "4000Mi"}),
            [75, 75],
            id="requests equal to the node's capacity",
        ),
        # Best-effort pods count 100m / 200Mi: n1 holds two, so cpu 300m of 250m is capped
        # at 100 and memory 600Mi of 1000Mi is 60: 80; the empty n2: 40 and 20: 30.
        pytest.param(
            CPU_MEMORY,
            [node("n1", "250m", "1000Mi"), node("n2", "250m", "1000Mi")],
            [
                pod("e1", node_name="n1", spec=containers({})),
                pod("e2", node_name="n1", spec=containers({})),
            ],
            containers({}),
            [80, 30],
            id="best-effort pods, non-zero requests",
        ),
        # The pod asks for no GPU: the GPU on n2 says nothing, both nodes 50.
        pytest.param(
            WITH_GPU,
            [node("n1", "6", "10000Mi"), node("n2", "6", "10000Mi", extra={GPU: "4"})],
            [],
            THREE_CPU_5000MI,
            [50, 50],
            id="an extended resource the pod does not request is left out",
        ),
        # One GPU: n1 1/2 -> 50, n2 1/8 -> 12: (50 + 50 + 50) // 3 = 50, (50 + 50 + 12) // 3 = 37.
        pytest.param(
            WITH_GPU,
            [
                node("n1", "6", "10000Mi", extra={GPU: "2"}),
                node("n2", "6", "10000Mi", extra={GPU: "8"}),
            ],
            [],
            containers(
                {"cpu": "1", "memory": "2000Mi"}, {"cpu": "2", "memory": "3000Mi", GPU: "1"}
            ),
            [50, 37],
            id="an extended resource the pod requests counts",
        ),
        # A node without a resource leaves it out of its own average.
        pytest.param(
            ((GPU, 2), ("cpu", 1), ("memory", 1)),
            [node("n1", "6", "10000Mi"), node("n2", "6", "10000Mi", extra={GPU: "4"})],
            [],
            containers({"cpu": "3", "memory": "4000Mi", GPU: "1"}),
            [45, 35],
            id="a node without the resource",
        ),
    ],
)
def test_most_allocated(
    resources: tuple[tuple[str, int], ...],
    nodes: list[Raw],
    existing: list[Raw],
    incoming: Raw,
    expected: list[int],
) -> None:
    # Last row, n2: GPU 1/4 -> 25 weighted 2, cpu 50, memory 40: (50 + 50 + 40) // 4 = 35.
    assert run(ScoringStrategy(MOST_ALLOCATED, resources), nodes, incoming, existing) == expected


RISING = (ShapePoint(0, 0), ShapePoint(100, 10))
FALLING = (ShapePoint(0, 10), ShapePoint(100, 0))


@pytest.mark.parametrize(
    ("shape", "nodes", "incoming", "expected"),
    [
        # Rising shape: cpu 75, memory 50 -> 62.5, rounded half away from zero: 63
        # (MostAllocated truncates the same numbers to 62).
        pytest.param(
            RISING,
            [node("n1", "4", "10000Mi")],
            THREE_CPU_5000MI,
            [63],
            id="the average is rounded",
        ),
        # Falling shape: cpu 25, memory 50 -> 37.5 -> 38.
        pytest.param(
            FALLING,
            [node("n1", "4", "10000Mi")],
            THREE_CPU_5000MI,
            [38],
            id="falling shape",
        ),
        # An explicit zero memory request scores 0 on a rising shape, and a resource that
        # scores 0 is left out of the average: cpu 75 alone.
        pytest.param(
            RISING,
            [node("n1", "4", "10000Mi")],
            containers({"cpu": "3", "memory": "0"}),
            [75],
            id="a resource scoring zero is left out",
        ),
        # Over-committed cpu scores as 100 % utilization: 10 on the falling shape -> 0 and
        # is left out; memory 1000/10000 -> 90.
        pytest.param(
            FALLING,
            [node("n1", "2", "10000Mi")],
            containers({"cpu": "3", "memory": "1000Mi"}),
            [90],
            id="requests beyond capacity",
        ),
        # Three points: 50 % maps to 10 (scaled 100); 75 % halfway down to 5 -> 75.
        pytest.param(
            (ShapePoint(0, 0), ShapePoint(50, 10), ShapePoint(100, 5)),
            [node("n1", "4", "4000Mi")],
            containers({"cpu": "3", "memory": "2000Mi"}),
            [88],
            id="a peaked shape",
        ),
    ],
)
def test_requested_to_capacity_ratio(
    shape: tuple[ShapePoint, ...], nodes: list[Raw], incoming: Raw, expected: list[int]
) -> None:
    # Peaked row: cpu 75 % -> 100 + (50 - 100) * 25 // 50 = 75, memory 50 % -> 100:
    # (75 + 100) / 2 = 87.5 -> 88.
    strategy = ScoringStrategy(REQUESTED_TO_CAPACITY_RATIO, CPU_MEMORY, shape)
    assert run(strategy, nodes, incoming) == expected


@settings(max_examples=60, deadline=None)
@given(
    capacities=st.lists(st.tuples(st.integers(0, 16), st.integers(0, 64)), min_size=1, max_size=4),
    placed=st.lists(st.tuples(st.integers(0, 3), st.integers(0, 4), st.integers(0, 8))),
    wanted=st.tuples(st.integers(0, 4), st.integers(0, 8)),
)
def test_least_allocated_strategy_is_the_legacy_priority(
    capacities: list[tuple[int, int]],
    placed: list[tuple[int, int, int]],
    wanted: tuple[int, int],
) -> None:
    """The default strategy scores exactly as LeastRequestedPriority always has."""
    nodes = [node(f"n{i}", str(cpu), f"{gi}Gi") for i, (cpu, gi) in enumerate(capacities)]
    existing = [
        pod(f"e{i}", node_name=f"n{where % len(nodes)}", spec=containers(_requests(cpu, gi)))
        for i, (where, cpu, gi) in enumerate(placed)
    ]
    cache = cluster(*nodes, *existing)
    incoming = parse(pod("p", spec=containers(_requests(*wanted))))
    strategy = ResourceAllocationScore(cache, ScoringStrategy(LEAST_ALLOCATED))
    assert scores(strategy, incoming, cache) == scores(LeastAllocated(cache), incoming, cache)


def _requests(cpu: int, gi: int) -> dict[str, str]:
    return {
        name: value for name, value in (("cpu", str(cpu)), ("memory", f"{gi}Gi")) if value[0] != "0"
    }


def test_profiles_with_other_strategies_never_share_a_remembered_score() -> None:
    """Two profiles of one daemon score the same nodes of the same cache: a node
    remembers scores per pod shape, and each strategy must get its own."""
    nodes = [node("n1", "4", "10000Mi"), node("n2", "8", "10000Mi")]
    incoming = parse(pod("p", spec=THREE_CPU_5000MI))
    strategies = [
        ScoringStrategy(LEAST_ALLOCATED, CPU_MEMORY),
        ScoringStrategy(LEAST_ALLOCATED, (("cpu", 3), ("memory", 1))),
        ScoringStrategy(MOST_ALLOCATED, CPU_MEMORY),
    ]
    alone = []
    for strategy in strategies:
        own = cluster(*nodes)
        alone.append(scores(ResourceAllocationScore(own, strategy), incoming, own))
    shared = cluster(*nodes)
    together = [scores(ResourceAllocationScore(shared, s), incoming, shared) for s in strategies]
    assert together == alone
    assert alone[0] != alone[1]
