"""A property over whole simulations with inter-pod affinity and topology spread: a pod
the default profile places never breaks a required affinity or anti-affinity (its own,
or an existing pod's against it) or a DoNotSchedule spread constraint, judged by brute
force against the pods placed before it — the snapshot at the time it was decided."""

from __future__ import annotations

import random
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import cluster, node, pod
from volsched.cache.objects.core import Pod
from volsched.cache.objects.pod_constraints import AffinityTerm
from volsched.scheduling.framework.runner import Scheduler
from volsched.scheduling.profile_builder import PluginFactory, build_profile
from volsched.scheduling.scheduler_config import default_profile
from volsched.scheduling.simulation import simulate

Raw = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
KEYS = (HOST, ZONE)


def term(draw: st.DrawFn) -> Raw:
    return {
        "labelSelector": {"matchLabels": {"app": draw(st.sampled_from(["a", "b"]))}},
        "topologyKey": draw(st.sampled_from(KEYS)),
    }


def constraints(draw: st.DrawFn) -> Raw:
    spec: Raw = {}
    affinity: Raw = {}
    if draw(st.integers(0, 3)) == 0:
        affinity["podAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                term(draw) for _ in range(draw(st.integers(1, 2)))
            ]
        }
    if draw(st.booleans()):
        affinity["podAntiAffinity"] = {
            "requiredDuringSchedulingIgnoredDuringExecution": [term(draw)]
        }
    if affinity:
        spec["affinity"] = affinity
    if draw(st.booleans()):
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": draw(st.integers(1, 2)),
                "topologyKey": draw(st.sampled_from(KEYS)),
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": draw(st.sampled_from(["a", "b"]))}},
            }
        ]
    return spec


@st.composite
def snapshots(draw: st.DrawFn) -> list[Raw]:
    names = [f"n{i}" for i in range(draw(st.integers(1, 5)))]
    objects: list[Raw] = [
        node(
            name,
            cpu="16",
            memory="64Gi",
            pods=20,
            labels={ZONE: draw(st.sampled_from(["z1", "z2", "z3"]))},
        )
        for name in names
    ]
    for index in range(draw(st.integers(0, 5))):
        objects.append(
            pod(
                f"running{index}",
                node_name=draw(st.sampled_from(names)),
                labels={"app": draw(st.sampled_from(["a", "b"]))},
                spec=constraints(draw),
                cpu="100m",
            )
        )
    for index in range(draw(st.integers(1, 8))):
        objects.append(
            pod(
                f"p{index}",
                labels={"app": draw(st.sampled_from(["a", "b"]))},
                spec=constraints(draw),
                cpu="100m",
                created=f"2026-01-01T00:00:{index:02d}Z",
            )
        )
    return objects


def _matches(term: AffinityTerm, other: Pod) -> bool:
    return term.matches(other.namespace, other.labels, {})


def _same_domain(labels: dict[str, dict[str, str]], a: str, b: str, key: str) -> bool:
    return key in labels[a] and key in labels[b] and labels[a][key] == labels[b][key]


def violations(
    incoming: Pod, where: str, placed: list[tuple[Pod, str]], labels: dict[str, dict[str, str]]
) -> list[str]:
    found = []
    mine = incoming.pod_affinity
    if mine is not None and mine.required_affinity:
        terms = mine.required_affinity
        group = [(p, n) for p, n in placed if all(_matches(t, p) for t in terms)]
        if any(t.topology_key not in labels[where] for t in terms):
            found.append("affinity: node lacks a topology label")
        elif not all(
            any(_same_domain(labels, where, n, t.topology_key) for _, n in group) for t in terms
        ):
            first_of_group = not group and all(_matches(t, incoming) for t in terms)
            if not first_of_group:
                found.append("affinity unmet")
    if mine is not None:
        for t in mine.required_anti_affinity:
            for other, n in placed:
                if _matches(t, other) and _same_domain(labels, where, n, t.topology_key):
                    found.append(f"anti-affinity: {other.name} on {n}")
    for other, n in placed:
        theirs = other.pod_affinity
        if theirs is None:
            continue
        for t in theirs.required_anti_affinity:
            if _matches(t, incoming) and _same_domain(labels, where, n, t.topology_key):
                found.append(f"existing anti-affinity of {other.name}")
    for c in incoming.spread_constraints:
        if c.when_unsatisfiable != "DoNotSchedule":
            continue
        domains: dict[str, int] = {}
        for node_labels in labels.values():
            if all(k.topology_key in node_labels for k in incoming.spread_constraints):
                domains.setdefault(node_labels[c.topology_key], 0)
        for other, n in placed:
            value = labels[n].get(c.topology_key)
            if (
                value in domains
                and other.namespace == incoming.namespace
                and c.counts(other.labels)
            ):
                domains[value] += 1
        value = labels[where][c.topology_key]
        skew = domains[value] + (1 if c.counts(incoming.labels) else 0) - min(domains.values())
        if skew > c.max_skew:
            found.append(f"spread skew {skew} > {c.max_skew}")
    return found


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(objects=snapshots(), seed=st.integers(0, 1000))
def test_a_placed_pod_never_breaks_a_required_rule(objects: list[Raw], seed: int) -> None:
    cache = cluster(*objects)
    labels = {name: dict(info.node.meta.labels) for name, info in cache.nodes.items()}
    placed: list[tuple[Pod, str]] = [(p, p.node_name) for p in cache.pods.values() if p.node_name]
    profile = build_profile(default_profile(with_storage=False).policy, PluginFactory(cache))
    result = simulate(cache, Scheduler(cache, profile, random.Random(seed)), None)
    for outcome in result.pods:
        if outcome.decision.node is None:
            continue
        where = outcome.decision.node
        assert violations(outcome.pod, where, placed, labels) == [], outcome.pod.name
        placed.append((outcome.pod, where))


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(objects=snapshots())
def test_spread_counts_from_the_label_index_equal_a_full_scan(objects: list[Raw]) -> None:
    """The fast path (pods found by label, domains from node labels) counts exactly what
    walking every node counts."""
    from volsched.scheduling.plugins.pod_topology_spread import PodTopologySpread

    cache = cluster(*objects)
    plugin = PodTopologySpread(cache)
    for pending in cache.pending.values():
        constraints = pending.spread_constraints
        if not constraints:
            continue
        scanned = plugin._counts_by_scan(pending, constraints)
        indexed = plugin._counts_from_index(pending, constraints)
        # The scan only lists domains holding an eligible node; so does the index.
        assert indexed == scanned
