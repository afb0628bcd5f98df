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
    metrics = Metrics()
    loop = ShadowLoop(cluster, profiles, queue, ShadowTally(SHADOWED), metrics, SHADOWED)
    ingest = Ingest(cluster, queue, SHADOWED, on_change=loop.object_changed)
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
    storage = loop.tally.report()["storage"]
    assert {key: storage[key] for key in ("claimPods", "theirStrandedBytes")} == {
        "claimPods": 1,
        "theirStrandedBytes": 91 * gib,
    }
    assert (storage["ourStrandedBytes"], storage["savedBytes"]) == (1 * gib, 90 * gib)
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
    loop.object_changed("PersistentVolume", "roomy")
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


# Bindings out of decision order. Two equal nodes, a little already running on b.
EVEN = (
    node("a", cpu="8", memory="32Gi"),
    node("b", cpu="8", memory="32Gi"),
    pod("filler", cpu="500m", node_name="b", spec={"schedulerName": "other"}),
)


def _created(name: str, second: int, **fields: Any) -> Raw:
    return pod(name, created=f"2026-11-01T12:00:{second:02d}Z", **fields)


def _decide_all(loop: Any) -> None:
    while (entry := loop.queue.pop_ready()) is not None:
        loop.decide_pending(entry)


def test_a_pod_decided_first_is_judged_without_the_pods_decided_after_it() -> None:
    """The other scheduler decides ``first`` on the emptier node a, then three pods that
    must go to a, and binds ``first`` last. Judged on the cluster its binding arrives
    in, a holds the three and b looks better; on the cluster it was decided on, a is
    the better node."""
    first = _created("first", 0, cpu="1")
    pinned = [
        _created(
            f"pinned-{index}",
            1 + index,
            cpu="1",
            spec={"nodeSelector": {"kubernetes.io/hostname": "a"}},
        )
        for index in range(3)
    ]
    loop, ingest, _, _ = shadow_of(*EVEN, first, *pinned)
    loop.comparing = True
    _decide_all(loop)
    for raw in pinned:
        ingest.upsert("Pod", bound(raw, "a"), persist=False)
    ingest.upsert("Pod", bound(first, "a"), persist=False)
    outcomes = {c.pod: c.outcome for c in loop.tally.differences}
    assert loop.tally.compared == 4
    assert "default/first" not in outcomes, outcomes


def test_a_binding_waits_for_the_pods_decided_before_it() -> None:
    """``pinned`` is decided first (a, the only node it may use), then ``free`` on b,
    the emptier node once ``pinned`` is counted on a; ``free``'s binding arrives first.
    Judged then, a would look emptier; judged once ``pinned`` is bound, volsched agrees."""
    pinned = _created("pinned", 0, cpu="2", spec={"nodeSelector": {"kubernetes.io/hostname": "a"}})
    free = _created("free", 1, cpu="1")
    loop, ingest, _, _ = shadow_of(*EVEN, pinned, free)
    loop.comparing = True
    _decide_all(loop)
    ingest.upsert("Pod", bound(free, "b"), persist=False)
    assert loop.tally.compared == 0  # held: pinned, ahead of it, is still pending
    ingest.upsert("Pod", bound(pinned, "a"), persist=False)
    assert loop.tally.compared == 2
    assert list(loop.tally.differences) == []


def test_a_held_binding_is_judged_after_a_while_though_the_pod_ahead_stays_pending() -> None:
    pinned = _created("pinned", 0, cpu="2", spec={"nodeSelector": {"kubernetes.io/hostname": "a"}})
    free = _created("free", 1, cpu="1")
    now = [100.0]
    loop, ingest, _, _ = shadow_of(*EVEN, pinned, free)
    loop.order.monotonic = lambda: now[0]
    loop.comparing = True
    _decide_all(loop)
    ingest.upsert("Pod", bound(free, "b"), persist=False)
    loop.release_held()
    assert loop.tally.compared == 0
    now[0] += 2.5
    loop.release_held()
    assert loop.tally.compared == 1


def _bound_by_them(ingest: Ingest, volume: Raw, claim: Raw) -> None:
    """The other scheduler's PreBind and the PV controller: ``claim`` bound to ``volume``."""
    ref = {"namespace": "default", "name": claim["metadata"]["name"]}
    ref["uid"] = claim["metadata"]["uid"]
    ingest.upsert(
        "PersistentVolume",
        _newer(volume, spec={**volume["spec"], "claimRef": ref}, status={"phase": "Bound"}),
        persist=False,
    )
    name = volume["metadata"]["name"]
    ingest.upsert(
        "PersistentVolumeClaim",
        _newer(claim, spec={**claim["spec"], "volumeName": name}, status={"phase": "Bound"}),
        persist=False,
    )


def test_a_claim_pod_left_pending_that_volsched_would_have_served_is_counted() -> None:
    """The other scheduler gives the 9Gi claim the 100Gi PV; the 90Gi claim that comes
    next finds no PV and stays pending. volsched would have given the first claim the
    10Gi PV, leaving the 100Gi one for the second."""
    tight = pv("tight", "10Gi", node_names=["big"])
    roomy = pv("roomy", "100Gi", node_names=["tiny"])
    small, large = pvc("small", request="9Gi"), pvc("large", request="90Gi")
    first = pod("first", claims=["small"], created="2026-11-01T12:00:00Z")
    second = pod("second", claims=["large"], created="2026-11-01T12:00:05Z")
    loop, ingest, _, _ = shadow_of(*NODES, storage_class("local"), tight, roomy, small, large)
    loop.comparing = True
    ingest.upsert("Pod", first, persist=False)
    _decide_all(loop)
    _bound_by_them(ingest, roomy, small)
    ingest.upsert("Pod", bound(first, "tiny"), persist=False)
    assert loop.tally.compared == 1
    ingest.upsert("Pod", second, persist=False)
    _decide_all(loop)
    storage = loop.tally.report()["storage"]
    assert loop.tally.pending["default/second"].node is None
    assert (storage["pendingForVolumes"], storage["pendingServedByVolsched"]) == (1, 1)
    # Once it is gone, it is pending no more.
    ingest.delete("Pod", second, persist=False)
    loop.prune_pending()
    assert loop.tally.report()["storage"]["pendingForVolumes"] == 0


def test_a_held_binding_is_judged_without_claim_pods_decided_after_it() -> None:
    """``pinned`` (ahead) is still unbound when ``free``'s binding arrives, so ``free`` is
    held; meanwhile ``db``, decided after ``free``, is counted on b at its PreBind write.
    ``free`` must be judged without ``db``: b was the emptier node when it was decided."""
    pinned = _created("pinned", 0, cpu="2", spec={"nodeSelector": {"kubernetes.io/hostname": "a"}})
    free = _created("free", 1, cpu="1")
    local = pv("local-b", "10Gi", node_names=["b"])
    data = pvc("data", request="9Gi")
    db = _created("db", 2, cpu="4", claims=["data"])
    loop, ingest, cluster, _ = shadow_of(
        *EVEN, storage_class("local"), local, data, pinned, free, db
    )
    loop.comparing = True
    _decide_all(loop)
    ingest.upsert("Pod", bound(free, "b"), persist=False)
    _bound_by_them(ingest, local, data)
    assert cluster.assumed_pods == {"default/db": "b"}
    ingest.upsert("Pod", bound(pinned, "a"), persist=False)
    assert loop.tally.compared == 3
    assert [c.pod for c in loop.tally.differences] == []
    assert cluster.assumed_pods == {"default/db": "b"}


def test_a_claim_pod_is_judged_after_the_pods_decided_before_its_prebind() -> None:
    """``pinned`` is decided first (a), ``db`` next: b, the emptier node with ``pinned``
    on a. ``db``'s PreBind write arrives before ``pinned``'s binding: ``db`` is counted on
    b at once, and judged once ``pinned`` is bound."""
    pinned = _created("pinned", 0, cpu="2", spec={"nodeSelector": {"kubernetes.io/hostname": "a"}})
    on_a, on_b = pv("on-a", "10Gi", node_names=["a"]), pv("on-b", "10Gi", node_names=["b"])
    data = pvc("data", request="9Gi")
    db = _created("db", 1, cpu="1", claims=["data"])
    loop, ingest, cluster, _ = shadow_of(
        *EVEN, storage_class("local"), on_a, on_b, data, pinned, db
    )
    loop.comparing = True
    _decide_all(loop)
    _bound_by_them(ingest, on_b, data)
    assert cluster.assumed_pods == {"default/db": "b"}
    assert loop.tally.compared == 0  # held: pinned, decided before it, is not bound yet
    ingest.upsert("Pod", bound(pinned, "a"), persist=False)
    assert loop.tally.compared == 2
    assert [c.pod for c in loop.tally.differences] == []
    assert cluster.assumed_pods == {"default/db": "b"}


def _two_pvs_and_a_claim_pod() -> tuple[ShadowLoop, Ingest, Raw, Raw, Raw]:
    """A 10Gi PV on big, a 100Gi one on tiny, and a 9Gi claim's pod the shadow has not
    seen yet (nor, in the cache, its claim): the loop comparing already."""
    tight = pv("tight", "10Gi", node_names=["big"])
    roomy = pv("roomy", "100Gi", node_names=["tiny"])
    loop, ingest, _, _ = shadow_of(*NODES, storage_class("local"), tight, roomy)
    loop.comparing = True
    return loop, ingest, roomy, pvc("data", request="9Gi"), pod("db", claims=["data"])


def test_a_claim_pod_bound_before_the_shadow_decides_it_is_judged_with_its_claim_unbound() -> None:
    """The shadow lags: kube-scheduler's PreBind and binding arrive before the shadow
    popped the pod. The claims unbound when the watch first showed the pod are still
    judged unbound again."""
    tight = pv("tight", "10Gi", node_names=["big"])
    roomy = pv("roomy", "100Gi", node_names=["tiny"])
    data = pvc("data", request="9Gi")
    db = pod("db", claims=["data"])
    loop, ingest, _, _ = shadow_of(*NODES, storage_class("local"), tight, roomy, data)
    loop.comparing = True
    ingest.upsert("Pod", db, persist=False)
    _bound_by_them(ingest, roomy, data)
    ingest.upsert("Pod", bound(db, "tiny"), persist=False)
    (comparison,) = list(loop.tally.differences)
    assert (comparison.our_node, comparison.their_node) == ("big", "tiny")
    gib = 2**30
    assert comparison.stranded == (91 * gib, 1 * gib)


def test_a_claim_whose_event_comes_after_its_pods_is_still_judged_unbound() -> None:
    """A StatefulSet makes the claim just before the pod, but the two kinds are separate
    watches: the pod can reach the shadow first."""
    loop, ingest, roomy, data, db = _two_pvs_and_a_claim_pod()
    ingest.upsert("Pod", db, persist=False)
    ingest.upsert("PersistentVolumeClaim", data, persist=False)
    _decide_all(loop)
    _bound_by_them(ingest, roomy, data)
    ingest.upsert("Pod", bound(db, "tiny"), persist=False)
    (comparison,) = list(loop.tally.differences)
    assert (comparison.our_node, comparison.their_node) == ("big", "tiny")
    assert comparison.stranded == (91 * 2**30, 1 * 2**30)


def test_a_prebind_write_before_its_claim_is_seen_waits_for_the_claim() -> None:
    """The PV's PreBind write names a claim whose own event has not arrived: the pod is
    judged once the claim is in the cache, never as a pod whose claim is missing."""
    loop, ingest, roomy, data, db = _two_pvs_and_a_claim_pod()
    ingest.upsert("Pod", db, persist=False)
    ref = {"namespace": "default", "name": "data", "uid": data["metadata"]["uid"]}
    ingest.upsert(
        "PersistentVolume",
        _newer(roomy, spec={**roomy["spec"], "claimRef": ref}, status={"phase": "Bound"}),
        persist=False,
    )
    assert loop.tally.compared == 0
    ingest.upsert(
        "PersistentVolumeClaim",
        _newer(data, spec={**data["spec"], "volumeName": "roomy"}, status={"phase": "Bound"}),
        persist=False,
    )
    (comparison,) = list(loop.tally.differences)
    assert (comparison.outcome, comparison.our_node, comparison.their_node) == (
        "lower_score",
        "big",
        "tiny",
    )
    assert comparison.stranded == (91 * 2**30, 1 * 2**30)
