"""One bad object fails one pod, not the scheduler: a node view no plugin can read is
passed over (named in the decision), a pod view that breaks a plugin fails that pod's
cycle with an error status, and every well-formed pod is still decided."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import cluster, node, pod
from volsched.cache.cluster import ClusterCache
from volsched.scheduling.framework.runner import REASON_UNREADABLE, Scheduler
from volsched.scheduling.profile_builder import PluginFactory, build_profile
from volsched.scheduling.scheduler_config import default_profile

Raw = dict[str, Any]


def scheduler_for(cache: ClusterCache) -> Scheduler:
    profile = build_profile(default_profile(with_storage=False).policy, PluginFactory(cache))
    return Scheduler(cache, profile, random.Random(0))


def damage_node(cache: ClusterCache, name: str, **fields: Any) -> None:
    """A stored view as a damaged snapshot could hold it (the parser never makes one)."""
    info = cache.nodes[name]
    cache.upsert("Node", dataclasses.replace(info.node, **fields))


def test_an_unreadable_node_is_passed_over_and_named() -> None:
    cache = cluster(node("good", cpu="4"), node("bad", cpu="4"), pod("p", cpu="1"))
    damage_node(cache, "bad", allocatable=None)
    decision = scheduler_for(cache).schedule(cache.pending["default/p"])
    assert decision.node == "good"
    assert decision.filtered == {"bad": [REASON_UNREADABLE]}
    assert decision.unreadable["bad"].startswith("AttributeError: ")


def test_a_pod_that_breaks_a_plugin_fails_alone() -> None:
    cache = cluster(node("n1", cpu="4"), pod("broken", cpu="1"), pod("fine", cpu="1"))
    broken = dataclasses.replace(cache.pending["default/broken"], tolerations=None)
    decision = scheduler_for(cache).schedule(broken)
    assert decision.node is None
    assert decision.error is not None and decision.error.startswith("running ")
    assert scheduler_for(cache).schedule(cache.pending["default/fine"]).node == "n1"


NODE_DAMAGE = st.sampled_from(
    [
        {"allocatable": None},
        {"allocatable": {"cpu": "four"}},
        {"taints": None},
        {"taints": ("not a taint",)},
        {"unschedulable": None},
    ]
)
POD_DAMAGE = st.sampled_from(
    [
        {"requests": None},
        {"tolerations": None},
        {"node_selector": None},
        {"host_ports": ("x",)},
        {"host_ports": None},
        {"volumes": None},
    ]
)


@settings(max_examples=100, deadline=None)
@given(
    damaged_nodes=st.lists(NODE_DAMAGE, max_size=3),
    damaged_pods=st.lists(POD_DAMAGE, max_size=3),
    good_pods=st.integers(min_value=1, max_value=4),
)
def test_well_formed_pods_are_decided_whatever_else_is_damaged(
    damaged_nodes: list[dict[str, Any]], damaged_pods: list[dict[str, Any]], good_pods: int
) -> None:
    objects: list[Raw] = [node("good", cpu="64")]
    objects += [node(f"bad-{i}", cpu="64") for i in range(len(damaged_nodes))]
    objects += [pod(f"good-{i}", cpu="1") for i in range(good_pods)]
    objects += [pod(f"bad-{i}", cpu="1") for i in range(len(damaged_pods))]
    cache = cluster(*objects)
    for index, damage in enumerate(damaged_nodes):
        damage_node(cache, f"bad-{index}", **damage)
    scheduler = scheduler_for(cache)
    for index, damage in enumerate(damaged_pods):
        broken = dataclasses.replace(cache.pending[f"default/bad-{index}"], **damage)
        decision = scheduler.schedule(broken)  # may fail; must not raise
        if decision.node is not None:
            scheduler.unreserve(decision)
    for index in range(good_pods):
        # A damaged node that no plugin trips over may still be chosen; what matters is
        # that the pod is decided and the cycle never raises.
        decision = scheduler.schedule(cache.pending[f"default/good-{index}"])
        assert decision.node is not None, (decision.message, decision.unreadable)


def test_a_pod_the_cache_cannot_count_is_given_back() -> None:
    cache = cluster(node("n1", cpu="4"), pod("p", cpu="1"))
    broken = dataclasses.replace(cache.pending["default/p"], host_ports=None)
    decision = scheduler_for(cache).schedule(broken)
    assert decision.node is None
    assert decision.error is not None and decision.error.startswith("running Reserve plugins: ")
    assert cache.assumed_pods == {}
