"""PodFitsResources, LeastRequestedPriority and BalancedResourceAllocation.

The score tables are upstream's examples (least_allocated_test.go,
balanced_allocation_test.go), recomputed here in the builders' units; the comments show
the arithmetic a user can redo by hand.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import cluster, node, parse, pod
from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.status import Code, Status, unresolvable, unschedulable
from volsched.scheduling.plugins.node_resources import (
    BalancedAllocation,
    LeastAllocated,
    NodeResourcesFit,
    is_scalar_resource,
)

Raw = dict[str, Any]


def containers(*requests: dict[str, str], init: tuple[dict[str, str], ...] = ()) -> Raw:
    """A pod spec whose containers request exactly ``requests`` (one dict per container)."""
    spec: Raw = {
        "containers": [
            {"name": f"c{index}", "resources": {"requests": wanted}}
            for index, wanted in enumerate(requests)
        ]
    }
    if init:
        spec["initContainers"] = [
            {"name": f"i{index}", "resources": {"requests": wanted}}
            for index, wanted in enumerate(init)
        ]
    return spec


def placed(name: str, node_name: str, *requests: dict[str, str]) -> Raw:
    return pod(name, node_name=node_name, spec=containers(*requests))


def fit(plugin: NodeResourcesFit, incoming: Pod, info: NodeInfo) -> Status | None:
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming)
    assert status.code is Code.SUCCESS
    return plugin.filter(state, incoming, info)


# -- PodFitsResources ------------------------------------------------------------------

SMALL_NODE = node(
    "n1",
    cpu="10m",
    memory="20",
    pods=32,
    extra={"ephemeral-storage": "20", "example.com/aaa": "5", "hugepages-2Mi": "5"},
)


@pytest.mark.parametrize(
    ("existing", "incoming", "expected"),
    [
        pytest.param([], containers({}), None, id="nothing requested fits an empty node"),
        pytest.param(
            [{"cpu": "10m", "memory": "20"}],
            containers({}),
            None,
            id="nothing requested fits a full node",
        ),
        pytest.param(
            [{"cpu": "5m", "memory": "5"}],
            containers({"cpu": "1m", "memory": "1"}),
            None,
            id="fits",
        ),
        pytest.param(
            [{"cpu": "5m", "memory": "19"}],
            containers({"cpu": "5m", "memory": "1"}),
            None,
            id="fits exactly",
        ),
        pytest.param(
            [{"cpu": "9m", "memory": "5"}],
            containers({"cpu": "2m", "memory": "1"}),
            unschedulable("Insufficient cpu"),
            id="too much cpu",
        ),
        pytest.param(
            [{"cpu": "5m", "memory": "19"}],
            containers({"cpu": "1m", "memory": "2"}),
            unschedulable("Insufficient memory"),
            id="too much memory",
        ),
        pytest.param(
            [{"cpu": "5m", "memory": "19"}],
            containers({"cpu": "6m", "memory": "2"}),
            unschedulable("Insufficient cpu", "Insufficient memory"),
            id="every failing resource is reported, cpu first",
        ),
        pytest.param(
            [{"cpu": "8m", "memory": "19"}],
            containers({"cpu": "1m", "memory": "1"}, init=({"cpu": "3m"},)),
            unschedulable("Insufficient cpu"),
            id="an init container's larger request counts",
        ),
        pytest.param(
            [{"ephemeral-storage": "10"}],
            containers({"ephemeral-storage": "11"}),
            unschedulable("Insufficient ephemeral-storage"),
            id="too much ephemeral storage",
        ),
        pytest.param(
            [{"example.com/aaa": "3"}],
            containers({"example.com/aaa": "3"}),
            unschedulable("Insufficient example.com/aaa"),
            id="too much of an extended resource",
        ),
        pytest.param(
            [],
            containers({"example.com/bbb": "1"}),
            unresolvable("Insufficient example.com/bbb"),
            id="an extended resource the node does not have",
        ),
        pytest.param(
            [{"hugepages-2Mi": "3"}],
            containers({"hugepages-2Mi": "3"}),
            unschedulable("Insufficient hugepages-2Mi"),
            id="too many hugepages",
        ),
        pytest.param(
            [],
            containers({"cpu": "11m", "example.com/bbb": "1", "example.com/aaa": "6"}),
            unresolvable(
                "Insufficient cpu", "Insufficient example.com/aaa", "Insufficient example.com/bbb"
            ),
            id="scalar resources after the built-in ones (by name); cpu beyond the node",
        ),
        pytest.param(
            [],
            containers({"storage": "100", "cpu": "0"}),
            None,
            id="a native resource the scheduler does not account is not checked",
        ),
    ],
)
def test_fit_reasons(
    existing: list[dict[str, str]], incoming: Raw, expected: Status | None
) -> None:
    objects = [SMALL_NODE] + [placed(f"e{i}", "n1", want) for i, want in enumerate(existing)]
    cache = cluster(*objects)
    status = fit(NodeResourcesFit(cache), parse(pod("p", spec=incoming)), cache.nodes["n1"])
    assert status == expected


@pytest.mark.parametrize(
    ("incoming", "reasons"),
    [
        pytest.param(containers({}), ("Too many pods",), id="too many pods, nothing requested"),
        pytest.param(
            containers({"cpu": "1m", "memory": "1"}),
            ("Too many pods",),
            id="too many pods, requests fit",
        ),
        pytest.param(
            containers({"cpu": "9m", "memory": "20"}),
            ("Too many pods", "Insufficient cpu", "Insufficient memory"),
            id="too many pods first, then every resource",
        ),
    ],
)
def test_fit_counts_pods(incoming: Raw, reasons: tuple[str, ...]) -> None:
    cache = cluster(
        node("n1", cpu="10m", memory="20", pods=1),
        placed("e0", "n1", {"cpu": "2m", "memory": "1"}),
    )
    status = fit(NodeResourcesFit(cache), parse(pod("p", spec=incoming)), cache.nodes["n1"])
    assert status is not None
    assert status.code is Code.UNSCHEDULABLE
    assert status.reasons == reasons


def test_fit_request_beyond_the_whole_node_is_unresolvable() -> None:
    cache = cluster(node("n1", cpu="2", memory="1Gi", pods=1), placed("e0", "n1", {"cpu": "1"}))
    plugin = NodeResourcesFit(cache)
    beyond = fit(plugin, parse(pod("p", spec=containers({"cpu": "3"}))), cache.nodes["n1"])
    assert beyond is not None
    assert beyond.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert beyond.reasons == ("Too many pods", "Insufficient cpu")
    # Too many pods alone, or a request the node could hold once emptied, stay resolvable.
    within = fit(plugin, parse(pod("q", spec=containers({"cpu": "2"}))), cache.nodes["n1"])
    assert within is not None
    assert within.code is Code.UNSCHEDULABLE
    assert within.reasons == ("Too many pods", "Insufficient cpu")


@pytest.mark.parametrize(
    ("ignored", "groups", "reasons"),
    [
        ((), (), ("Insufficient example.com/aaa", "Insufficient hugepages-2Mi")),
        (("example.com/aaa",), (), ("Insufficient hugepages-2Mi",)),
        ((), ("example.com",), ("Insufficient hugepages-2Mi",)),
    ],
)
def test_fit_ignored_resources(
    ignored: tuple[str, ...], groups: tuple[str, ...], reasons: tuple[str, ...]
) -> None:
    cache = cluster(SMALL_NODE)
    plugin = NodeResourcesFit(cache, ignored_resources=ignored, ignored_resource_groups=groups)
    incoming = parse(pod("p", spec=containers({"example.com/aaa": "6", "hugepages-2Mi": "6"})))
    status = fit(plugin, incoming, cache.nodes["n1"])
    assert status is not None
    assert status.reasons == reasons


def test_fit_cannot_ignore_hugepages() -> None:
    cache = cluster(SMALL_NODE)
    plugin = NodeResourcesFit(
        cache, ignored_resources=("hugepages-2Mi",), ignored_resource_groups=("hugepages-2Mi",)
    )
    incoming = parse(pod("p", spec=containers({"hugepages-2Mi": "6"})))
    status = fit(plugin, incoming, cache.nodes["n1"])
    assert status is not None
    assert status.reasons == ("Insufficient hugepages-2Mi",)


def test_fit_without_pre_filter_gives_the_same_answer() -> None:
    cache = cluster(SMALL_NODE, placed("e0", "n1", {"cpu": "9m"}))
    incoming = parse(pod("p", spec=containers({"cpu": "2m", "memory": "30"})))
    status = NodeResourcesFit(cache).filter(CycleState(), incoming, cache.nodes["n1"])
    assert status is not None
    assert status.reasons == ("Insufficient cpu", "Insufficient memory")


@pytest.mark.parametrize(
    ("resource", "scalar"),
    [
        ("example.com/gpu", True),
        ("nvidia.com/gpu", True),
        ("hugepages-1Gi", True),
        ("attachable-volumes-csi-x", True),
        ("kubernetes.io/something", True),
        ("storage", False),
        ("requests.example.com/gpu", False),
        ("Example.com/gpu", False),
        ("example.com/-gpu", False),
    ],
)
def test_scalar_resource_names(resource: str, scalar: bool) -> None:
    assert is_scalar_resource(resource) is scalar


RESOURCE_NAMES = ("cpu", "memory", "ephemeral-storage", "example.com/gpu", "hugepages-2Mi")
_amounts = st.integers(min_value=0, max_value=12)
_requests = st.dictionaries(st.sampled_from(RESOURCE_NAMES), _amounts, max_size=4)


def _quantities(requests: dict[str, int]) -> dict[str, str]:
    return {
        name: f"{amount}m" if name == "cpu" else str(amount) for name, amount in requests.items()
    }


@settings(max_examples=150, deadline=None)
@given(
    allocatable=st.fixed_dictionaries(
        {name: _amounts for name in RESOURCE_NAMES[:3]},
        optional={name: _amounts for name in RESOURCE_NAMES[3:]},
    ),
    max_pods=st.integers(min_value=0, max_value=6),
    pods=st.lists(
        st.tuples(st.lists(_requests, min_size=1, max_size=3), st.lists(_requests, max_size=2)),
        max_size=10,
    ),
)
def test_an_accepted_pod_never_overcommits_the_node(
    allocatable: dict[str, int],
    max_pods: int,
    pods: list[tuple[list[dict[str, int]], list[dict[str, int]]]],
) -> None:
    extra = {name: str(amount) for name, amount in allocatable.items() if name != "cpu"}
    extra.pop("memory")
    raw_node = node(
        "n1",
        cpu=f"{allocatable['cpu']}m",
        memory=str(allocatable["memory"]),
        pods=max_pods,
        extra=extra,
    )
    cache = cluster(raw_node)
    info = cache.nodes["n1"]
    plugin = NodeResourcesFit(cache)
    limits = info.node.allocatable
    for index, (main, init) in enumerate(pods):
        spec = containers(*map(_quantities, main), init=tuple(map(_quantities, init)))
        incoming = parse(pod(f"p{index}", spec=spec))
        if fit(plugin, incoming, info) is not None:
            continue
        info.add_pod(incoming)
        assert len(info.pods) <= limits["pods"]
        for resource, amount in info.requested.items():
            assert amount <= limits.get(resource, 0), resource


# -- LeastRequestedPriority ------------------------------------------------------------

TWO_CONTAINERS = containers({"cpu": "1000", "memory": "2000"}, {"cpu": "2000", "memory": "3000"})
NO_CONTAINERS: Raw = {"containers": []}


def scores(plugin: Any, incoming: Pod, cache: ClusterCache, pre_score: bool = True) -> list[int]:
    state = CycleState()
    infos = [cache.nodes[name] for name in sorted(cache.nodes)]
    if pre_score:
        status = plugin.pre_score(state, incoming, infos)
        assert status.code is Code.SUCCESS
    return [plugin.score(state, incoming, info) for info in infos]


@pytest.mark.parametrize(
    ("nodes", "existing", "incoming", "expected"),
    [
        pytest.param(
            [("4000", "10000"), ("4000", "10000")],
            [],
            NO_CONTAINERS,
            [100, 100],
            id="nothing scheduled, nothing requested",
        ),
        # cpu (4000 - 3000) * 100 // 4000 = 25, memory (10000 - 5000) * 100 // 10000 = 50:
        # (25 + 50) // 2 = 37; the larger node: (50 + 50) // 2 = 50.
        pytest.param(
            [("4000", "10000"), ("6000", "10000")],
            [],
            TWO_CONTAINERS,
            [37, 50],
            id="nothing scheduled, resources requested, differently sized nodes",
        ),
        pytest.param(
            [("4000", "10000"), ("4000", "10000")],
            [("n1", NO_CONTAINERS), ("n1", NO_CONTAINERS), ("n2", NO_CONTAINERS)],
            NO_CONTAINERS,
            [100, 100],
            id="no resources requested, pods scheduled",
        ),
        # Pods that omit memory count 200Mi each. n1: cpu 6 of 10 -> 40, memory 400Mi of
        # 20000Mi -> 98, (40 + 98) // 2 = 69; n2: 40 and 5200Mi -> 74, so 57.
        pytest.param(
            [("10", "20000Mi"), ("10", "20000Mi")],
            [
                ("n1", containers({"cpu": "3"})),
                ("n1", containers({"cpu": "3"})),
                ("n2", containers({"cpu": "3"})),
                ("n2", containers({"cpu": "3", "memory": "5000Mi"})),
            ],
            NO_CONTAINERS,
            [69, 57],
            id="no resources requested, pods scheduled with resources",
        ),
        # n1: cpu 6 of 10 -> 40, memory 5000Mi + 200Mi of 20000Mi -> 74: 57;
        # n2: cpu 40, memory 10000Mi of 20000Mi -> 50: 45.
        pytest.param(
            [("10", "20000Mi"), ("10", "20000Mi")],
            [
                ("n1", containers({"cpu": "3"})),
                ("n2", containers({"cpu": "3", "memory": "5000Mi"})),
            ],
            containers({"cpu": "1", "memory": "2000Mi"}, {"cpu": "2", "memory": "3000Mi"}),
            [57, 45],
            id="resources requested, pods scheduled with resources",
        ),
        # n2 has 50000Mi: memory 10000Mi -> 80, (40 + 80) // 2 = 60.
        pytest.param(
            [("10", "20000Mi"), ("10", "50000Mi")],
            [
                ("n1", containers({"cpu": "3"})),
                ("n2", containers({"cpu": "3", "memory": "5000Mi"})),
            ],
            containers({"cpu": "1", "memory": "2000Mi"}, {"cpu": "2", "memory": "3000Mi"}),
            [57, 60],
            id="resources requested, pods scheduled with resources, differently sized nodes",
        ),
        # cpu 6 of 4 scores 0; memory n1 400Mi of 10000Mi -> 96: 48; n2 5200Mi -> 48: 24.
        pytest.param(
            [("4", "10000Mi"), ("4", "10000Mi")],
            [
                ("n1", containers({"cpu": "3"})),
                ("n2", containers({"cpu": "3", "memory": "5000Mi"})),
            ],
            containers({"cpu": "3"}),
            [48, 24],
            id="requested resources exceed node capacity",
        ),
        pytest.param(
            [("0", "0"), ("0", "0")],
            [("n1", containers({"cpu": "3"})), ("n2", containers({"cpu": "3", "memory": "5000"}))],
            NO_CONTAINERS,
            [0, 0],
            id="zero node resources, pods scheduled with resources",
        ),
        # A best-effort container counts 100m and 200Mi: (3900 * 100 // 4000 = 97) and
        # ((8192 - 200) * 100 // 8192 = 97).
        pytest.param(
            [("4", "8Gi"), ("4", "0")],
            [],
            containers({}),
            [97, 97],
            id="best-effort pod; a node without memory is scored on cpu alone",
        ),
        # Upstream's exact case: an explicit memory request of 0 stays 0 for scoring.
        pytest.param(
            [("4000", "10000"), ("4000", "10000")],
            [
                ("n1", containers({"cpu": "3000", "memory": "0"})),
                ("n2", containers({"cpu": "3000", "memory": "5000"})),
            ],
            containers({"cpu": "3000", "memory": "0"}),
            [50, 25],
            id="explicit zero memory requests",
        ),
    ],
)
def test_least_allocated(
    nodes: list[tuple[str, str]],
    existing: list[tuple[str, Raw]],
    incoming: Raw,
    expected: list[int],
) -> None:
    objects = [node(f"n{i + 1}", cpu=cpu, memory=memory) for i, (cpu, memory) in enumerate(nodes)]
    objects += [
        pod(f"e{i}", node_name=where, spec=spec) for i, (where, spec) in enumerate(existing)
    ]
    cache = cluster(*objects)
    incoming_pod = parse(pod("p", spec=incoming))
    assert scores(LeastAllocated(cache), incoming_pod, cache) == expected
    assert scores(LeastAllocated(cache), incoming_pod, cache, pre_score=False) == expected


# -- BalancedResourceAllocation --------------------------------------------------------

CPU_AND_MEMORY = containers({"cpu": "1000m", "memory": "2000"}, {"cpu": "2000m", "memory": "3000"})
CPU_ONLY = containers({"cpu": "1000m", "memory": "0"}, {"cpu": "2000m", "memory": "0"})


# kube-scheduler 1.36 scores the change in balance: 50 + (50 + after - before) / 2, where
# a balance is int((1 - std) * 100) over the requested/allocatable fractions. Each row
# gives the balance before -> after the pod.
@pytest.mark.parametrize(
    ("nodes", "existing", "incoming", "expected"),
    [
        # n1: cpu 3000/4000 = .75, memory 5000/10000 = .5: 100 -> 87, 50 + 37 / 2 = 68;
        # n2: cpu 3000/6000 = .5 = memory: 100 -> 100, 75.
        pytest.param(
            [("4000m", "10000"), ("6000m", "10000")],
            [],
            CPU_AND_MEMORY,
            [68, 75],
            id="nothing scheduled, resources requested, differently sized nodes",
        ),
        # n1: cpu .3 and memory 0 (std .15) -> cpu .6, memory .25 (std .175): 85 -> 82, 73;
        # n2: cpu .3, memory .25 -> .6 and .5: 97 -> 95, 74.
        pytest.param(
            [("10000m", "20000"), ("10000m", "20000")],
            [("n1", CPU_ONLY), ("n2", CPU_AND_MEMORY)],
            CPU_AND_MEMORY,
            [73, 74],
            id="resources requested, pods scheduled with resources",
        ),
        # n2: cpu .3, memory 5000/50000 = .1 -> .6 and .2: 90 -> 80, 70.
        pytest.param(
            [("10000m", "20000"), ("10000m", "50000")],
            [("n1", CPU_ONLY), ("n2", CPU_AND_MEMORY)],
            CPU_AND_MEMORY,
            [73, 70],
            id="resources requested, pods scheduled with resources, differently sized nodes",
        ),
        # n1 full of cpu, the pod brings the memory: 50 -> 100, the highest score; n2
        # empty, the pod brings only memory: 100 -> 50, the lowest.
        pytest.param(
            [("6000m", "10000"), ("6000m", "10000")],
            [("n1", containers({"cpu": "6000m", "memory": "0"}))],
            containers({"cpu": "0", "memory": "10000"}),
            [100, 50],
            id="the pod evens a node out or unbalances an empty one",
        ),
        # n1: cpu .5, memory 0 -> 1 and 0: 75 -> 50, 62; n2: .5 and .5 -> 1 and .5:
        # 100 -> 75, 62.
        pytest.param(
            [("6000m", "10000"), ("6000m", "10000")],
            [("n1", CPU_ONLY), ("n2", CPU_AND_MEMORY)],
            CPU_ONLY,
            [62, 62],
            id="requested resources at node capacity",
        ),
        # Fractions are capped at 1: cpu 9000/6000 counts as 1, as in the row above.
        pytest.param(
            [("6000m", "10000"), ("6000m", "10000")],
            [("n1", CPU_ONLY), ("n2", CPU_AND_MEMORY)],
            containers({"cpu": "6000m"}),
            [62, 62],
            id="requests beyond capacity are capped",
        ),
        # A node without memory leaves one fraction: no deviation before or after, 75.
        pytest.param(
            [("4000m", "0"), ("4000m", "10000")],
            [],
            CPU_AND_MEMORY,
            [75, 68],
            id="a resource the node lacks is left out",
        ),
    ],
)
def test_balanced_allocation(
    nodes: list[tuple[str, str]],
    existing: list[tuple[str, Raw]],
    incoming: Raw,
    expected: list[int],
) -> None:
    objects = [node(f"n{i + 1}", cpu=cpu, memory=memory) for i, (cpu, memory) in enumerate(nodes)]
    objects += [
        pod(f"e{i}", node_name=where, spec=spec) for i, (where, spec) in enumerate(existing)
    ]
    cache = cluster(*objects)
    incoming_pod = parse(pod("p", spec=incoming))
    assert scores(BalancedAllocation(cache), incoming_pod, cache) == expected
    # Upstream's "if PreScore not called" variant computes the same scores.
    assert scores(BalancedAllocation(cache), incoming_pod, cache, pre_score=False) == expected


@pytest.mark.parametrize(
    "incoming",
    [
        pytest.param(NO_CONTAINERS, id="no containers"),
        pytest.param(containers({}), id="a container without requests"),
        pytest.param(containers({"cpu": "0", "ephemeral-storage": "1Gi"}), id="no cpu or memory"),
    ],
)
def test_balanced_allocation_skips_best_effort_pods(incoming: Raw) -> None:
    cache = cluster(node("n1"), placed("e0", "n1", {"cpu": "1"}))
    plugin = BalancedAllocation(cache)
    best_effort = parse(pod("p", spec=incoming))
    assert plugin.pre_score(CycleState(), best_effort, [cache.nodes["n1"]]).code is Code.SKIP
    assert plugin.score(CycleState(), best_effort, cache.nodes["n1"]) == 0


@pytest.mark.parametrize(
    ("resources", "expected"),
    [
        # An empty node balances at 100. cpu 2/4 = .5 and memory 0: std .25, 75;
        # 50 + (50 + 75 - 100) / 2 = 62.
        pytest.param(("cpu", "memory"), 62, id="the default resources"),
        # .5, 0 and 1/4 for the device: mean .25, std sqrt(.125/3) = .204, 79: 64.
        pytest.param(("cpu", "memory", "example.com/dev"), 64, id="three resources"),
        # A scalar resource the pod does not ask for says nothing: cpu alone, no deviation
        # before or after, 75.
        pytest.param(("cpu", "example.com/other"), 75, id="an unrequested scalar is left out"),
    ],
)
def test_balanced_allocation_over_configured_resources(
    resources: tuple[str, ...], expected: int
) -> None:
    """NodeResourcesBalancedAllocationArgs.resources: the standard deviation over every
    configured resource, as upstream computes it for more than two."""
    cache = cluster(node("n1", extra={"example.com/dev": "4", "example.com/other": "2"}))
    incoming = parse(pod("p", spec=containers({"cpu": "2", "example.com/dev": "1"})))
    plugin = BalancedAllocation(cache, resources)
    assert scores(plugin, incoming, cache) == [expected]
