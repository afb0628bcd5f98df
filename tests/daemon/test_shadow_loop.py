"""The shadow loop over a real cache, profiles, queue and ingest (no API server): which
pods it decides, when it compares, and that it leaves the cache as the API server said."""

from __future__ import annotations

import time
from typing import Any

from tests.support import node, pod, pv, pvc, storage_class
from volsched.cache.cluster import ClusterCache
from volsched.daemon.config.settings import Settings
from volsched.daemon.queue.queueing import SchedulingQueue
from volsched.daemon.runtime.profiles import build_profiles
from volsched.daemon.runtime.shadowing import ShadowLoop
from volsched.daemon.telemetry.metrics import Metrics
from volsched.daemon.watch.ingest import Ingest
from volsched.scheduling.profile_builder import PluginFactory
from volsched.scheduling.shadow.tally import ShadowTally

Raw = dict[str, Any]
SHADOWED = ("default-scheduler",)


def shadow_of(*objects: Raw) -> tuple[ShadowLoop, Ingest, ClusterCache, Metrics]:
    cluster = ClusterCache()
    profiles = build_profiles(Settings(), cluster, PluginFactory(cluster, ()), seed=1)
    queue = SchedulingQueue(cluster.pod_priority, time.monotonic)
    ingest = Ingest(cluster, queue, SHADOWED)
    metrics = Metrics()
    loop = ShadowLoop(cluster, profiles, queue, ShadowTally(SHADOWED), metrics, SHADOWED)
    ingest.on_pod_bound = loop.pod_bound
    for raw in objects:
        ingest.upsert(raw["kind"], raw, persist=False)
    return loop, ingest, cluster, metrics


def bound(raw: Raw, node_name: str) -> Raw:
    newer = {**raw, "spec": {**raw["spec"], "nodeName": node_name}}
    version = int(raw["metadata"]["resourceVersion"]) + 1000
    newer["metadata"] = {**raw["metadata"], "resourceVersion": str(version)}
    return newer


NODES = (node("big", cpu="64", memory="256Gi"), node("tiny", cpu="1", memory="1Gi"))


def test_pending_pods_are_decided_without_assuming_anything() -> None:
    web = pod("web", cpu="500m")
    loop, _, cluster, metrics = shadow_of(*NODES, web)
    entry = loop.queue.pop_ready()
    assert entry is not None
    loop.decide_pending(entry)
    assert loop.tally.pending["default/web"].node == "big"
    assert cluster.assumed_pods == {}
    sample = "volsched_shadow_pending_decisions_total"
    assert metrics.registry.get_sample_value(sample, {"result": "placeable"}) == 1


def test_a_binding_is_compared_against_the_cluster_before_it() -> None:
    # 900m of 1 cpu: tiny fits this pod only while it is not counted there already.
    web = pod("web", cpu="900m")
    loop, ingest, cluster, metrics = shadow_of(*NODES, web)
    loop.comparing = True
    ingest.upsert("Pod", bound(web, "tiny"), persist=False)
    (comparison,) = list(loop.tally.differences)
    assert (comparison.outcome, comparison.their_node, comparison.our_node) == (
        "lower_score",
        "tiny",
        "big",
    )
    assert comparison.score_gap is not None and comparison.score_gap > 0
    assert cluster.pods["default/web"].node_name == "tiny"
    # Their tiny node is fuller: NodeResourcesFit, which kube-scheduler runs too, scores
    # it lower on the same cluster.
    assert comparison.cause == "fidelity" and "NodeResourcesFit" in comparison.differing
    labels = {"outcome": "lower_score", "scheduler": "default-scheduler", "cause": "fidelity"}
    assert metrics.registry.get_sample_value("volsched_shadow_comparisons_total", labels) == 1


def test_nothing_is_compared_before_the_caches_are_synced() -> None:
    web = pod("web")
    loop, ingest, _, _ = shadow_of(*NODES, web)
    ingest.upsert("Pod", bound(web, "big"), persist=False)
    assert loop.tally.compared == 0


def test_pods_of_other_schedulers_are_neither_decided_nor_compared() -> None:
    own = pod("own", spec={"schedulerName": "volsched"})
    loop, ingest, _, _ = shadow_of(*NODES, own)
    loop.comparing = True
    assert loop.queue.pop_ready() is None
    ingest.upsert("Pod", bound(own, "big"), persist=False)
    assert loop.tally.compared == 0


def test_verdicts_on_pods_gone_or_bound_uncompared_are_pruned() -> None:
    first, second, third = pod("a"), pod("b"), pod("c")
    loop, ingest, _, _ = shadow_of(*NODES, first, second, third)
    while (entry := loop.queue.pop_ready()) is not None:
        loop.decide_pending(entry)
    assert set(loop.tally.pending) == {"default/a", "default/b", "default/c"}
    ingest.delete("Pod", first, persist=False)
    ingest.upsert("Pod", bound(second, "big"), persist=False)  # not comparing yet
    loop.prune_pending()
    assert set(loop.tally.pending) == {"default/c"}


def _newer(raw: Raw, **changes: Any) -> Raw:
    """``raw`` as a later watch event shows it (a higher resourceVersion)."""
    version = int(raw["metadata"].get("resourceVersion", "1")) + 1000
    newer = {**raw, **changes}
    newer["metadata"] = {
        **raw["metadata"],
        **changes.get("metadata", {}),
        "resourceVersion": str(version),
    }
    return newer


def test_a_claim_the_other_scheduler_bound_is_judged_unbound_again() -> None:
    """kube-scheduler's PreBind binds the pod's WaitForFirstConsumer claim before the
    pod: the shadow judges the binding on the cluster it decided on, the claim unbound.
    Before, the claim bound on their node left volsched only that node, and the
    comparison could never disagree."""
    tight = pv("tight", "10Gi", node_names=["big"])
    roomy = pv("roomy", "100Gi", node_names=["tiny"])
    data = pvc("data", request="9Gi")
    db = pod("db", claims=["data"], spec={"schedulerName": "default-scheduler"})
    loop, ingest, cluster, _ = shadow_of(*NODES, storage_class("local"), tight, roomy, data, db)
    loop.comparing = True
    entry = loop.queue.pop_ready()
    assert entry is not None
    loop.decide_pending(entry)
    assert loop.tally.pending["default/db"].node == "big"  # the tightest PV
    # kube-scheduler chose tiny: its PreBind writes the PV's claimRef, the PV controller
    # binds the claim, then the pod is bound.
    ingest.upsert(
        "PersistentVolume",
        _newer(
            roomy,
            spec={
                **roomy["spec"],
                "claimRef": {
                    "namespace": "default",
                    "name": "data",
                    "uid": data["metadata"]["uid"],
                },
            },
            status={"phase": "Bound"},
        ),
        persist=False,
    )
    ingest.upsert(
        "PersistentVolumeClaim",
        _newer(
            data,
            spec={**data["spec"], "volumeName": "roomy"},
            status={"phase": "Bound"},
            metadata={"annotations": {"pv.kubernetes.io/bind-completed": "yes"}},
        ),
        persist=False,
    )
    ingest.upsert("Pod", bound(db, "tiny"), persist=False)
    (comparison,) = list(loop.tally.differences)
    assert (comparison.outcome, comparison.our_node, comparison.their_node) == (
        "lower_score",
        "big",
        "tiny",
    )
    # roomy strands 91Gi beyond the 9Gi claim, tight 1Gi: what volsched would have saved.
    gib = 2**30
    assert comparison.stranded == (91 * gib, 1 * gib)
    assert loop.tally.report()["storage"] == {
        "claimPods": 1,
        "theirStrandedBytes": 91 * gib,
        "ourStrandedBytes": 1 * gib,
        "savedBytes": 90 * gib,
    }
    # The cache is back as the API server says: the claim bound to roomy.
    assert cluster.pvcs.get("default/data").volume_name == "roomy"
    assert not cluster.pvcs.is_assumed("default/data") and not cluster.pvs.is_assumed("roomy")


def test_a_claim_pod_is_judged_at_prebind_and_counted_on_its_node_until_bound() -> None:
    """kube-scheduler counts a pod whose volumes it is binding on its node (assumed)
    while it decides the next pods; the shadow reads the PreBind write the same way,
    judges the pod then — the PV it wrote free again, so volsched may choose another —
    and does not judge it again when the binding arrives."""
    tight = pv("tight", "10Gi", node_names=["big"])
    roomy = pv("roomy", "100Gi", node_names=["tiny"])
    data = pvc("data", request="9Gi")
    db = pod("db", cpu="900m", claims=["data"], spec={"schedulerName": "default-scheduler"})
    loop, ingest, cluster, _ = shadow_of(*NODES, storage_class("local"), tight, roomy, data, db)
    loop.comparing = True
    entry = loop.queue.pop_ready()
    assert entry is not None
    loop.decide_pending(entry)
    claim_ref = {"namespace": "default", "name": "data", "uid": data["metadata"]["uid"]}
    ingest.upsert(
        "PersistentVolume",
        _newer(roomy, spec={**roomy["spec"], "claimRef": claim_ref}),
        persist=False,
    )
    loop.volume_changed("PersistentVolume", "roomy")
    assert loop.tally.compared == 1
    (comparison,) = list(loop.tally.differences)
    assert (comparison.our_node, comparison.their_node) == ("big", "tiny")
    assert comparison.stranded == (91 * 2**30, 2**30)
    assert not cluster.pvs.is_assumed("roomy")
    assert cluster.assumed_pods == {"default/db": "tiny"}
    # 900m of tiny's 1 cpu now counts, as in kube-scheduler's cache.
    assert cluster.nodes["tiny"].requested.get("cpu") == 900
    ingest.upsert("Pod", bound(db, "tiny"), persist=False)
    assert loop.tally.compared == 1
    assert cluster.assumed_pods == {}
    assert cluster.pods["default/db"].node_name == "tiny"
