"""The daemon's own cycle skips the filters of a node a bound PV rules out, and decides
exactly as a walk that asks every filter of every node: the same chosen node, feasible
nodes, nodes looked at and round-robin start, and for a pod that fits nowhere the same
reasons, node by node."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import cluster, node, pod, pv, pvc
from volsched.cache.objects.core import parse_pod
from volsched.scheduling.framework.decision import Decision
from volsched.scheduling.framework.runner import Scheduler
from volsched.scheduling.policy import default_policy
from volsched.scheduling.profile_builder import PluginFactory, build_profile

NODE_AFFINITY = "node(s) didn't match PersistentVolume's node affinity"


def scheduler(objects: list[dict[str, Any]], seed: int = 1) -> Scheduler:
    cache = cluster(*objects)
    profile = build_profile(default_policy(with_storage=False), PluginFactory(cache))
    return Scheduler(cache, profile, random.Random(seed))


def bound_pod(
    name: str, pv_nodes: list[str] | None, cpu: str = "500m", pv_exists: bool = True
) -> list[dict[str, Any]]:
    """A pod with one claim bound to a PV: reachable from ``pv_nodes``, or from every
    node (None), or missing."""
    volume = pv(
        f"pv-{name}",
        "1Gi",
        node_names=pv_nodes,
        claim=("default", f"c-{name}"),
        phase="Bound",
    )
    return [
        *([volume] if pv_exists else []),
        pvc(f"c-{name}", volume_name=f"pv-{name}", bound=True),
        pod(name, cpu=cpu, claims=[f"c-{name}"]),
    ]


def observed(decision: Decision, scheduler: Scheduler) -> tuple[Any, ...]:
    return (
        decision.node,
        [info.name for info in decision.feasible],
        decision.evaluated,
        decision.message,
        decision.error,
        scheduler.next_start_node_index,
    )


def diagnosis(decision: Decision) -> tuple[Any, ...]:
    return (
        decision.filtered,
        decision.rejected_by,
        decision.rejected_plugin,
        decision.failed_plugins,
        decision.unresolvable_nodes,
    )


NODES = [node(f"n{i}", cpu="2") for i in range(5)]
TAINT = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]


def test_a_placed_pod_asks_no_filter_of_the_nodes_its_pv_rules_out() -> None:
    objects = [*NODES, *bound_pod("web-0", ["n3"])]
    asked, screened = scheduler(objects), scheduler(objects)
    pending = parse_pod(objects[-1])
    full = asked.find_node(pending)
    fast = screened.find_node(pending, every_reason=False)
    assert observed(fast, screened) == observed(full, asked)
    assert fast.node == "n3"
    assert set(full.filtered) == {"n0", "n1", "n2", "n4"}
    assert all(reasons == [NODE_AFFINITY] for reasons in full.filtered.values())
    assert fast.filtered == {}


def test_a_pod_that_fits_nowhere_gets_every_nodes_reason() -> None:
    tainted = [node(f"n{i}", cpu="2", taints=TAINT if i == 3 else None) for i in range(5)]
    objects = [*tainted, *bound_pod("web-0", ["n3"])]
    asked, screened = scheduler(objects), scheduler(objects)
    pending = parse_pod(objects[-1])
    full = asked.find_node(pending)
    fast = screened.find_node(pending, every_reason=False)
    assert fast.node is None
    assert observed(fast, screened) == observed(full, asked)
    assert diagnosis(fast) == diagnosis(full)
    assert fast.message is not None
    assert fast.message.startswith("0/5 nodes are available: ")
    assert f"4 {NODE_AFFINITY}" in fast.message
    assert "1 node(s) had untolerated taint(s)" in fast.message


@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    names = [f"n{i}" for i in range(draw(st.integers(1, 6)))]
    objects: list[dict[str, Any]] = [
        node(
            name,
            cpu=str(draw(st.integers(1, 3))),
            taints=TAINT if draw(st.integers(0, 3)) == 0 else None,
            unschedulable=draw(st.integers(0, 5)) == 0,
        )
        for name in names
    ]
    for index in range(draw(st.integers(1, 8))):
        name = f"p{index}"
        cpu = f"{draw(st.sampled_from([100, 500, 1000, 2000]))}m"
        if draw(st.booleans()):
            reach = draw(
                st.one_of(
                    st.none(), st.lists(st.sampled_from([*names, "gone"]), min_size=1, max_size=3)
                )
            )
            exists = draw(st.integers(0, 5)) > 0
            objects.extend(bound_pod(name, reach, cpu, pv_exists=exists))
        else:
            objects.append(pod(name, cpu=cpu))
    return objects


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(clusters(), st.integers(0, 1000))
def test_screening_never_changes_a_decision(objects: list[dict[str, Any]], seed: int) -> None:
    """Pods decided one after another, each placed pod assumed on its node, on two
    copies of the cluster: one asking every filter of every node, one screening."""
    asked, screened = scheduler(objects, seed), scheduler(objects, seed)
    for raw in objects:
        if raw["kind"] != "Pod":
            continue
        pending = parse_pod(raw)
        full = asked.schedule(pending)
        fast = screened.schedule(pending, every_reason=False)
        assert observed(fast, screened) == observed(full, asked)
        if full.node is None:
            assert diagnosis(fast) == diagnosis(full)
