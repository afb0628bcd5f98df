"""The verdicts and scores kept on nodes decide as the plugins do.

Two schedulers run the same pods, one after the other, over two copies of one cluster:
one keeps its node-local filter verdicts and raw scores on the nodes, the other asks
every plugin on every node. Each cycle must end the same way: the same node, the same
reasons per rejected node, the same scores — also when pods of one shape follow each
other (the memo is read) and when a node has just taken a pod (its memo is gone).
"""

from __future__ import annotations

import copy
import dataclasses
import random
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import cluster, node, pod
from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.fields import Fields
from volsched.cache.objects.selectors import parse_node_affinity
from volsched.scheduling.framework.node_verdicts import filter_key
from volsched.scheduling.framework.runner import Decision, Scheduler
from volsched.scheduling.plugins.node_affinity import AddedAffinity
from volsched.scheduling.profile_builder import PluginFactory, build_profile
from volsched.scheduling.scheduler_config import default_profile

Raw = dict[str, Any]

TAINTS = [
    [],
    [{"key": "dedicated", "value": "db", "effect": "NoSchedule"}],
    [{"key": "spot", "value": "yes", "effect": "PreferNoSchedule"}],
    [{"key": "gpu", "value": "a100", "effect": "NoExecute"}],
]
TOLERATIONS = [
    [],
    [{"key": "dedicated", "operator": "Equal", "value": "db", "effect": "NoSchedule"}],
    [{"key": "spot", "operator": "Exists"}],
    [{"operator": "Exists"}],
    [{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}],
]


def scheduler_for(cache: ClusterCache, keep: bool) -> Scheduler:
    profile = build_profile(default_profile(with_storage=False).policy, PluginFactory(cache))
    if not keep:
        profile.filter_keys = [None] * len(profile.filter_keys)
        profile.score_steps = [
            dataclasses.replace(step, score_key=None) for step in profile.score_steps
        ]
    return Scheduler(cache, profile, random.Random(7))


def outcome(decision: Decision) -> tuple[Any, ...]:
    return (
        decision.node,
        decision.message,
        decision.filtered,
        decision.scores,
        decision.priority_scores,
        decision.evaluated,
    )


NODES = st.lists(
    st.tuples(
        st.sampled_from(["1", "2", "4"]),
        st.sampled_from(["1Gi", "4Gi"]),
        st.integers(0, len(TAINTS) - 1),
        st.booleans(),
        st.sampled_from(["a", "b"]),
    ),
    min_size=1,
    max_size=12,
)
# Few values per field: pods that differ in one field only are common, so a key that
# left a field out would share a verdict it must not.
SHAPES = st.tuples(
    st.sampled_from(["500m", "1500m"]),
    st.just("128Mi"),
    st.integers(0, len(TOLERATIONS) - 1),
    st.sampled_from([None, "a", "b"]),
    st.sampled_from([None, 8080]),
)


def objects(
    nodes: list[tuple[Any, ...]], shapes: list[tuple[Any, ...]], order: list[int]
) -> list[Raw]:
    made = [
        node(
            f"n{i}",
            cpu=cpu,
            memory=memory,
            pods=4,
            labels={"disk": disk},
            taints=TAINTS[taint],
            unschedulable=cordoned,
        )
        for i, (cpu, memory, taint, cordoned, disk) in enumerate(nodes)
    ]
    for index, shape in enumerate(order):
        cpu, memory, toleration, disk, port = shapes[shape % len(shapes)]
        spec: Raw = {"tolerations": TOLERATIONS[toleration]}
        if disk is not None:
            spec["nodeSelector"] = {"disk": disk}
        container: Raw = {"name": "main", "resources": {"requests": {"cpu": cpu, "memory": memory}}}
        if port is not None:
            container["ports"] = [{"containerPort": port, "hostPort": port}]
        spec["containers"] = [container]
        made.append(pod(f"p{index:03}", spec=spec, created=f"2026-01-01T00:00:{index % 60:02}Z"))
    return made


# Two pods that differ in one field, on nodes where that field decides: the second pod
# meets nodes the first left unchanged, so a key without that field would reuse the
# first pod's verdict or score. (node fields, first pod's shape, second pod's shape)
# with node fields (cpu, memory, taint, cordoned, disk) and pod shape (cpu, memory,
# toleration, disk, host port).
ONE_FIELD_APART = {
    "tolerations": (
        [("4", "4Gi", 1, False, "a"), ("4", "4Gi", 0, False, "a")],
        ("500m", "128Mi", 1, None, None),
        ("500m", "128Mi", 0, None, None),
    ),
    "a cordon's toleration": (
        [("4", "4Gi", 0, True, "a"), ("4", "4Gi", 0, False, "a")],
        ("500m", "128Mi", 4, None, None),
        ("500m", "128Mi", 0, None, None),
    ),
    "nodeSelector": (
        [("4", "4Gi", 0, False, "a"), ("4", "4Gi", 0, False, "b")],
        ("500m", "128Mi", 0, "a", None),
        ("500m", "128Mi", 0, "b", None),
    ),
    "requests": (
        [("1", "4Gi", 0, False, "a"), ("4", "4Gi", 0, False, "a")],
        ("500m", "128Mi", 0, None, None),
        ("1500m", "128Mi", 0, None, None),
    ),
    "PreferNoSchedule tolerations": (
        [("4", "4Gi", 2, False, "a"), ("4", "4Gi", 0, False, "a")],
        ("500m", "128Mi", 2, None, None),
        ("500m", "128Mi", 0, None, None),
    ),
    "host ports": (
        [("4", "4Gi", 0, False, "a"), ("4", "4Gi", 0, False, "a")],
        ("500m", "128Mi", 0, None, 8080),
        ("500m", "128Mi", 0, None, None),
    ),
}


def decide_both(raw: list[Raw]) -> None:
    kept, asked = cluster(*raw), cluster(*raw)
    keeping, asking = scheduler_for(kept, keep=True), scheduler_for(asked, keep=False)
    for key in sorted(kept.pending):
        one, other = keeping.schedule(kept.pending[key]), asking.schedule(asked.pending[key])
        assert outcome(one) == outcome(other), key


@pytest.mark.parametrize("field", ONE_FIELD_APART)
def test_pods_one_field_apart_get_their_own_verdicts(field: str) -> None:
    nodes, first, second = ONE_FIELD_APART[field]
    decide_both(objects(nodes, [first, second], [0, 1, 0, 1, 1, 0]))


@settings(max_examples=100, deadline=None)
@given(
    NODES,
    st.lists(SHAPES, min_size=2, max_size=4),
    st.lists(st.integers(0, 5), min_size=1, max_size=30),
)
def test_kept_verdicts_decide_as_the_plugins_do(
    nodes: list[tuple[Any, ...]], shapes: list[tuple[Any, ...]], order: list[int]
) -> None:
    decide_both(objects(nodes, shapes, order))


def test_a_pod_of_a_judged_shape_is_judged_from_the_memo() -> None:
    """Not only equal: the next pod of a shape asks the filters only on the node that
    changed (it took the last pod); every other node answers from its memo."""
    names = [f"n{i}" for i in range(6)]
    pods = [pod(f"p{i}", cpu="1") for i in range(3)]
    cache = cluster(*(node(name, cpu="8") for name in names), *pods)
    scheduler = scheduler_for(cache, keep=True)
    asked: list[str] = []
    fit = next(
        p.plugin for p in scheduler.profile.predicates if p.plugin.name == "NodeResourcesFit"
    )
    original = fit.filter

    def counting(state: Any, one: Any, info: Any) -> Any:
        asked.append(info.name)
        return original(state, one, info)

    fit.filter = counting  # type: ignore[method-assign]
    first = scheduler.schedule(cache.pending["default/p0"])
    assert sorted(asked) == names
    asked.clear()
    second = scheduler.schedule(cache.pending["default/p1"])
    assert asked == [first.node]
    assert second.node is not None
    key = filter_key(scheduler.profile, second.state, cache.pending["default/p2"])
    assert key is not None


def test_profiles_configured_apart_do_not_share_kept_verdicts() -> None:
    """Two profiles over one cache, one with NodeAffinity's addedAffinity: a pod shape
    judged by one is judged afresh by the other (their plugins are two instances)."""
    cache = cluster(
        node("a1", labels={"disk": "a"}),
        node("b1", labels={"disk": "b"}),
        pod("p1", cpu="1", spec={"nodeSelector": {"disk": "b"}}),
        pod("p2", cpu="1", spec={"nodeSelector": {"disk": "b"}}),
    )
    confined, plain = scheduler_for(cache, keep=True), scheduler_for(cache, keep=True)
    affinity = next(
        p.plugin for p in confined.profile.predicates if p.plugin.name == "NodeAffinity"
    )
    required, _ = parse_node_affinity(
        Fields(
            {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": "disk", "operator": "In", "values": ["a"]}]}
                    ]
                }
            },
            "NodeAffinityArgs",
            "NodeAffinity",
            "addedAffinity",
        )
    )
    affinity.added = AddedAffinity(required)  # type: ignore[attr-defined]
    affinity._enforced = required  # type: ignore[attr-defined]
    assert confined.schedule(cache.pending["default/p1"]).node is None
    assert plain.schedule(cache.pending["default/p2"]).node == "b1"


def test_profiles_weighted_apart_do_not_share_score_rows() -> None:
    """A kept row holds the weighted sum of its plain scores: a profile whose weights
    differ, even over the very same plugin instances, sums its own rows, and every
    total is its priorities' scores times its weights."""
    cache = cluster(
        node("small", cpu="2", labels={"spot": "yes"}),
        node("medium", cpu="8"),
        node("large", cpu="32"),
        pod("p1", cpu="1"),
        pod("p2", cpu="1"),
        pod("p3", cpu="1"),
    )
    first = scheduler_for(cache, keep=True)
    reweighted = copy.copy(first.profile)
    weights = {"NodeResourcesFit": 7, "NodeResourcesBalancedAllocation": 3}
    reweighted.score_steps = [
        dataclasses.replace(
            step,
            priority=dataclasses.replace(
                step.priority,
                weight=weights.get(step.priority.policy_name, step.priority.weight),
            ),
        )
        for step in first.profile.score_steps
    ]
    second = Scheduler(cache, reweighted, random.Random(7))
    for scheduler, name in ((first, "p1"), (second, "p2"), (first, "p3")):
        decision = scheduler.schedule(cache.pending[f"default/{name}"])
        weight_of = {
            s.priority.policy_name: s.priority.weight for s in scheduler.profile.score_steps
        }
        expected = {
            node_name: sum(
                weight_of[p] * values[i] for p, values in decision.priority_scores.items()
            )
            for i, node_name in enumerate(decision.scores)
        }
        assert decision.scores == expected, name
        assert len(set(expected.values())) > 1, "the weights must tell the nodes apart"
