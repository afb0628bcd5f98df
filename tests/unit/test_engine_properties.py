"""Properties of whole simulations over random small clusters: no PV serves two claims,
no decision breaks a predicate, and the same seed gives the same answer."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import cluster, node, pod, pv, pvc, storage_class
from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.core import parse_pod
from volsched.scheduling.framework.runner import Scheduler
from volsched.scheduling.policy import default_policy
from volsched.scheduling.profile_builder import PluginFactory, build_profile
from volsched.scheduling.simulation import SimulationResult, simulate

ZONE = "topology.kubernetes.io/zone"


@st.composite
def clusters(draw: st.DrawFn) -> list[dict[str, Any]]:
    node_count = draw(st.integers(1, 5))
    objects: list[dict[str, Any]] = [
        storage_class("local"),
        storage_class(
            "zonal",
            provisioner="csi.example.com",
            allowed_topologies=[{"matchLabelExpressions": [{"key": ZONE, "values": ["a"]}]}],
        ),
    ]
    names = [f"n{i}" for i in range(node_count)]
    for name in names:
        taints = (
            [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}]
            if draw(st.booleans()) and draw(st.booleans())
            else []
        )
        objects.append(
            node(
                name,
                cpu=str(draw(st.integers(1, 4))),
                memory=f"{draw(st.integers(1, 8))}Gi",
                pods=draw(st.integers(1, 4)),
                labels={
                    ZONE: draw(st.sampled_from(["a", "b"])),
                    "disk": draw(st.sampled_from(["ssd", "hdd"])),
                },
                taints=taints,
            )
        )
    for index in range(draw(st.integers(0, 8))):
        objects.append(
            pv(
                f"pv{index}",
                f"{draw(st.sampled_from([1, 2, 5, 10]))}Gi",
                node_names=[draw(st.sampled_from(names))],
            )
        )
    for index in range(draw(st.integers(1, 8))):
        claims = []
        for claim_index in range(draw(st.integers(0, 2))):
            claim = f"c{index}-{claim_index}"
            claims.append(claim)
            objects.append(
                pvc(
                    claim,
                    request=f"{draw(st.sampled_from([1, 2, 5]))}Gi",
                    storage_class=draw(st.sampled_from(["local", "zonal"])),
                )
            )
        selector = {"disk": "ssd"} if draw(st.booleans()) and draw(st.booleans()) else None
        objects.append(
            pod(
                f"p{index}",
                cpu=f"{draw(st.sampled_from([100, 500, 1000, 2000]))}m",
                memory=f"{draw(st.sampled_from([128, 512, 2048]))}Mi",
                claims=claims,
                priority=draw(st.integers(0, 2)),
                spec={"nodeSelector": selector} if selector else None,
            )
        )
    return objects


def run(objects: list[dict[str, Any]], seed: int) -> tuple[ClusterCache, SimulationResult]:
    cache = cluster(*objects)
    profile = build_profile(default_policy(with_storage=False), PluginFactory(cache))
    result = simulate(cache, Scheduler(cache, profile, random.Random(seed)), None)
    return cache, result


COMMON = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@COMMON
@given(clusters(), st.integers(0, 1000))
def test_no_pv_serves_two_claims(objects: list[dict[str, Any]], seed: int) -> None:
    cache, result = run(objects, seed)
    chosen = [
        entry["volume"]
        for outcome in result.pods
        for entry in outcome.volumes.values()
        if "volume" in entry
    ]
    assert len(chosen) == len(set(chosen))
    refs = [
        (v.claim_ref.namespace, v.claim_ref.name)
        for v in cache.pvs.values()
        if v.claim_ref is not None
    ]
    assert len(refs) == len(set(refs))


@COMMON
@given(clusters(), st.integers(0, 1000))
def test_decisions_never_break_a_predicate(objects: list[dict[str, Any]], seed: int) -> None:
    cache, result = run(objects, seed)
    for info in cache.nodes.values():
        allocatable = info.node.allocatable
        for resource, used in info.requested.items():
            assert used <= allocatable.get(resource, 0), (info.name, resource)
        assert len(info.pods) <= allocatable["pods"]
    for outcome in result.pods:
        decision = outcome.decision
        if decision.node is None:
            continue
        info = cache.nodes[decision.node]
        labels = info.node.meta.labels
        assert all(labels.get(k) == v for k, v in outcome.pod.node_selector.items())
        for taint in info.node.taints:
            assert taint.effect == "PreferNoSchedule" or any(
                t.tolerates(taint) for t in outcome.pod.tolerations
            )
        for claim_name, entry in outcome.volumes.items():
            if "volume" in entry:
                volume = cache.pvs.get(entry["volume"])
                assert volume is not None and volume.node_affinity is not None
                assert volume.node_affinity.matches(labels, decision.node)
                claim = cache.pvcs.get(f"default/{claim_name}")
                assert claim is not None and claim.request is not None
                assert volume.capacity >= claim.request
            else:
                assert labels[ZONE] == "a"


@COMMON
@given(clusters(), st.integers(0, 1000))
def test_same_seed_same_decisions(objects: list[dict[str, Any]], seed: int) -> None:
    _, first = run(objects, seed)
    _, second = run(objects, seed)
    assert [
        (o.pod.meta.key, o.decision.node, o.decision.message, o.volumes) for o in first.pods
    ] == [(o.pod.meta.key, o.decision.node, o.decision.message, o.volumes) for o in second.pods]


@COMMON
@given(clusters(), st.data())
def test_what_nodes_remember_never_changes_a_verdict_or_a_score(
    objects: list[dict[str, Any]], data: st.DataObject
) -> None:
    """Nodes remember fits and scores per pod shape until they change: each decision
    must equal the one made from scratch (every memo emptied), while pods are assumed
    and forgotten in between."""
    cache = cluster(*objects)
    profile = build_profile(default_policy(with_storage=False), PluginFactory(cache))
    scheduler = Scheduler(cache, profile, random.Random(0))
    pods = [parse_pod(raw) for raw in objects if raw["kind"] == "Pod"]
    placed: list[str] = []
    for _ in range(data.draw(st.integers(1, 12))):
        pod_view = data.draw(st.sampled_from(pods))
        if pod_view.meta.key in cache.assumed_pods:
            continue
        remembered = scheduler.find_node(pod_view, only=set(cache.nodes))
        for info in cache.nodes.values():
            info.memo.clear()
        fresh = scheduler.find_node(pod_view, only=set(cache.nodes))
        assert (remembered.filtered, remembered.scores) == (fresh.filtered, fresh.scores)
        if placed and data.draw(st.booleans()):
            cache.forget_pod(placed.pop(data.draw(st.integers(0, len(placed) - 1))))
        elif remembered.node is not None:
            cache.assume_pod(pod_view, remembered.node)
            placed.append(pod_view.meta.key)
