"""Preemption and nominated pods see inter-pod affinity and topology spread.

The PreFilter states of InterPodAffinity and PodTopologySpread count pods; the dry run
takes victims off a node and puts some back, and the nominated-pods pass adds the pods
nominated to a node, each on a clone of the cycle state told of every change (upstream's
PreFilterExtensions AddPod / RemovePod). Rows re-express kube-scheduler's
TestDryRunPreemption "pod with anti-affinity is preempted", TestPreempt "preemption for
topology spread constraints", and its nominated-pods filtering, with our own clusters.
"""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import cluster, node, pod
from tests.unit.preemption import builders
from tests.unit.preemption.builders import preemptor, running
from volsched.cache.cluster import ClusterCache
from volsched.scheduling.framework.runner import Scheduler
from volsched.scheduling.preemption.nominated import NominatedPods
from volsched.scheduling.preemption.post_filter import Preemption, Preemptor

Raw = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"


def anti_affinity(key: str, **labels: str) -> Raw:
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": labels}, "topologyKey": key}
            ]
        }
    }


def affinity(key: str, **labels: str) -> Raw:
    return {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": labels}, "topologyKey": key}
            ]
        }
    }


def spread(max_skew: int, selector: Raw) -> list[Raw]:
    return [
        {
            "maxSkew": max_skew,
            "topologyKey": ZONE,
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": selector,
        }
    ]


def scheduler_for(cache: ClusterCache) -> Scheduler:
    """kube-scheduler's default profile (InterPodAffinity and PodTopologySpread in it)."""
    return builders.scheduler_for(cache, kube_scheduler_profile=True)


def preempt(*objects: Raw) -> Preemption:
    return builders.preempt(*objects, kube_scheduler_profile=True)


def keys(victims: tuple[Any, ...]) -> list[str]:
    return [victim.meta.key for victim in victims]


def test_a_pod_whose_anti_affinity_rejects_the_preemptor_is_evicted() -> None:
    outcome = preempt(
        node("n1", cpu="4"),
        node("n2", cpu="4"),
        running("low", "n1", 1, cpu="1", labels={"app": "cache"}),
        running("peer", "n2", 200, cpu="1", labels={"app": "cache"}),
        preemptor(affinity=anti_affinity(HOSTNAME, app="cache")),
    )
    assert outcome.message is None
    assert outcome.node == "n1"
    assert keys(outcome.victims) == ["default/low"]


def test_evicting_a_pod_evens_out_the_spread() -> None:
    web = {"app": "web"}
    outcome = preempt(
        node("a1", cpu="3", labels={ZONE: "a"}),
        node("b1", cpu="1", labels={ZONE: "b"}),
        running("web-1", "a1", 1, cpu="1", labels=web, started="2026-01-01T00:00:00Z"),
        running("web-2", "a1", 1, cpu="1", labels=web, started="2026-01-02T00:00:00Z"),
        running("busy", "b1", 200, cpu="1"),
        pod(
            "high",
            cpu="1",
            priority=100,
            labels=web,
            spec={"topologySpreadConstraints": spread(2, {"matchLabels": web})},
        ),
    )
    # Zone a holds two web pods and b none: a third in a is a skew of 3. Without both,
    # the dry run puts the older one back (a skew of 2 is allowed) and evicts the other.
    assert outcome.message is None
    assert outcome.node == "a1"
    assert keys(outcome.victims) == ["default/web-2"]


def test_a_nominated_pod_counts_for_the_anti_affinity_of_a_lower_priority_pod() -> None:
    cache = cluster(
        node("n1", cpu="4"),
        node("n2", cpu="4"),
        pod("nominated", cpu="1", priority=100, labels={"app": "db"}),
        pod("low", cpu="1", priority=10, spec={"affinity": anti_affinity(HOSTNAME, app="db")}),
    )
    scheduler = scheduler_for(cache)
    scheduler.nominated = NominatedPods()
    scheduler.nominated.nominate(cache.pending["default/nominated"], "n1")
    decision = scheduler.find_node(cache.pending["default/low"])
    assert decision.filtered == {"n1": ["node(s) didn't match pod anti-affinity rules"]}
    assert decision.node == "n2"


def test_a_nominated_pod_counts_for_the_spread_of_a_lower_priority_pod() -> None:
    web = {"app": "web"}
    cache = cluster(
        node("a1", cpu="4", labels={ZONE: "a"}),
        node("b1", cpu="4", labels={ZONE: "b"}),
        pod("nominated", cpu="1", priority=100, labels=web),
        pod(
            "low",
            cpu="1",
            priority=10,
            labels=web,
            spec={"topologySpreadConstraints": spread(1, {"matchLabels": web})},
        ),
    )
    scheduler = scheduler_for(cache)
    scheduler.nominated = NominatedPods()
    scheduler.nominated.nominate(cache.pending["default/nominated"], "a1")
    decision = scheduler.find_node(cache.pending["default/low"])
    assert decision.filtered == {"a1": ["node(s) didn't match pod topology spread constraints"]}
    assert decision.node == "b1"


def test_a_nominated_pod_of_lower_priority_holds_nothing() -> None:
    cache = cluster(
        node("n1", cpu="4"),
        pod("nominated", cpu="1", priority=1, labels={"app": "db"}),
        pod("high", cpu="1", priority=10, spec={"affinity": anti_affinity(HOSTNAME, app="db")}),
    )
    scheduler = scheduler_for(cache)
    scheduler.nominated = NominatedPods()
    scheduler.nominated.nominate(cache.pending["default/nominated"], "n1")
    assert scheduler.find_node(cache.pending["default/high"]).node == "n1"


def test_an_empty_spread_selector_counts_no_pod() -> None:
    """Upstream's countPodsMatchSelector: ``labelSelector: {}`` counts nothing, so pods
    already in a zone do not make it crowded."""
    cache = cluster(
        node("a1", cpu="4", labels={ZONE: "a"}),
        node("b1", cpu="4", labels={ZONE: "b"}),
        running("x", "a1", 0, cpu="1"),
        running("y", "a1", 0, cpu="1"),
        pod("new", cpu="1", spec={"topologySpreadConstraints": spread(1, {})}),
    )
    decision = scheduler_for(cache).find_node(cache.pending["default/new"])
    assert decision.filtered == {}
    assert set(decision.scores) == {"a1", "b1"}


running_pod = st.tuples(
    st.sampled_from([0, 10, 100, 200]),  # priority; the preemptor's is 100
    st.sampled_from(["web", "db", "other"]),  # its app label
    st.booleans(),  # required anti-affinity (hostname) to web pods
)


@settings(max_examples=200, deadline=None)
@given(
    nodes=st.lists(st.lists(running_pod, max_size=3), min_size=2, max_size=4),
    with_spread=st.booleans(),
    avoid_db=st.booleans(),
    near_db=st.booleans(),
)
def test_the_victims_chosen_really_make_room(
    nodes: list[list[tuple[int, str, bool]]], with_spread: bool, avoid_db: bool, near_db: bool
) -> None:
    """Once the dry run's victims are gone, the preemptor passes every filter on the
    node it was nominated to: the counts of affinity and spread followed every pod the
    dry run took off and put back."""
    objects: list[Raw] = []
    for index, pods in enumerate(nodes):
        name = f"n{index}"
        objects.append(node(name, cpu="2", labels={ZONE: "ab"[index % 2]}))
        for number, (priority, app, avoids_web) in enumerate(pods[:2]):
            spec = {"affinity": anti_affinity(HOSTNAME, app="web")} if avoids_web else None
            raw = running(f"{name}-p{number}", name, priority, cpu="1", labels={"app": app})
            if spec:
                raw["spec"].update(spec)
            objects.append(raw)
    spec: Raw = {}
    if with_spread:
        spec["topologySpreadConstraints"] = spread(1, {"matchLabels": {"app": "web"}})
    if avoid_db:
        spec["affinity"] = anti_affinity(HOSTNAME, app="db")
    elif near_db:
        spec["affinity"] = affinity(ZONE, app="db")
    objects.append(pod("high", cpu="1", priority=100, labels={"app": "web"}, spec=spec or None))
    cache = cluster(*objects)
    scheduler = scheduler_for(cache)
    decision = scheduler.find_node(cache.pending["default/high"])
    if decision.node is not None:
        return
    outcome = Preemptor(scheduler).post_filter(decision)
    assert outcome is not None
    if outcome.node is None:
        return
    assert all((victim.priority or 0) < 100 for victim in outcome.victims)
    for victim in outcome.victims:
        cache.delete("Pod", victim.meta.key)
    again = scheduler.find_node(cache.pending["default/high"], only={outcome.node})
    assert again.node == outcome.node, again.filtered


@settings(max_examples=200, deadline=None)
@given(
    placed=st.lists(st.sampled_from(["web", "db", "other"]), max_size=3),
    nominated_app=st.sampled_from(["web", "db"]),
    nominated_avoids_web=st.booleans(),
    nominated_node=st.sampled_from(["n0", "n1"]),
)
def test_a_lower_priority_pod_never_breaks_a_nominated_pod_s_anti_affinity(
    placed: list[str], nominated_app: str, nominated_avoids_web: bool, nominated_node: str
) -> None:
    """The pod being scheduled carries a required term of its own, so InterPodAffinity
    runs for it (upstream skips the plugin, and with it the nominated pods' terms, for
    a pod without terms when no running pod's anti-affinity selects it)."""
    objects: list[Raw] = [node("n0", cpu="8"), node("n1", cpu="8")]
    for number, app in enumerate(placed):
        objects.append(running(f"r{number}", f"n{number % 2}", 0, cpu="1", labels={"app": app}))
    nominated_spec = (
        {"affinity": anti_affinity(HOSTNAME, app="web")} if nominated_avoids_web else None
    )
    objects.append(
        pod("nominated", cpu="1", priority=200, labels={"app": nominated_app}, spec=nominated_spec)
    )
    objects.append(
        pod(
            "low",
            cpu="1",
            priority=10,
            labels={"app": "web"},
            spec={"affinity": anti_affinity(HOSTNAME, app="db")},
        )
    )
    cache = cluster(*objects)
    scheduler = scheduler_for(cache)
    scheduler.nominated = NominatedPods()
    scheduler.nominated.nominate(cache.pending["default/nominated"], nominated_node)
    decision = scheduler.find_node(cache.pending["default/low"])
    if decision.node == nominated_node:
        assert nominated_app != "db" and not nominated_avoids_web
