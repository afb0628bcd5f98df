"""The scheduling queue: order, backoff, the unschedulable pool and event-driven moves."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import node, parse, pod
from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.core import Node, Pod
from volsched.cache.objects.dra import parse_resource_claim
from volsched.daemon.binding.attempts import HELD_REASON, LastAttempts, RecordingReporter
from volsched.daemon.queue import queueing
from volsched.daemon.queue.queueing import SchedulingQueue
from volsched.scheduling.framework.events import (
    ADD,
    ASSIGNED_POD_ADD,
    ASSIGNED_POD_DELETE,
    NODE,
    PERSISTENT_VOLUME,
    RESOURCE_CLAIM,
    SERVICE,
    STORAGE_CLASS,
    ClusterEvent,
)
from volsched.scheduling.framework.pre_enqueue import Hold
from volsched.scheduling.framework.requeue import RequeueTable
from volsched.scheduling.profile_builder import PluginFactory, build_profile
from volsched.scheduling.scheduler_config import default_profile

PV_ADDED = ClusterEvent(PERSISTENT_VOLUME, ADD)
NODE_ADD = ClusterEvent(NODE, ADD)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(name: str, priority: int = 0, created: str = "2026-01-01T00:00:00Z") -> Pod:
    view: Pod = parse(pod(name, priority=priority, created=created))
    return view


def table() -> RequeueTable:
    """The daemon's default profile's table (the storage rules included)."""
    profile = build_profile(
        default_profile(with_storage=True).policy, PluginFactory(ClusterCache())
    )
    return RequeueTable({"volsched": profile.requeue_events()})


def queue(clock: Clock, **kwargs: Any) -> SchedulingQueue:
    return SchedulingQueue(lambda p: p.priority or 0, clock, requeue=table(), **kwargs)


def a_node(name: str = "n1", **kwargs: Any) -> Node:
    view: Node = parse(node(name, **kwargs))
    return view


def drain(q: SchedulingQueue) -> list[str]:
    names = []
    while (entry := q.pop_ready()) is not None:
        names.append(entry.pod.name)
    return names


def test_priority_then_age_then_name() -> None:
    q = queue(Clock())
    q.add(make("late", created="2026-01-01T00:00:09Z"))
    q.add(make("early", created="2026-01-01T00:00:01Z"))
    q.add(make("urgent", priority=100, created="2026-01-01T00:00:09Z"))
    assert drain(q) == ["urgent", "early", "late"]


def test_backoff_doubles_up_to_the_cap() -> None:
    clock = Clock()
    q = queue(clock, backoff_initial_seconds=1, backoff_max_seconds=10)
    p = make("p")
    q.add(p)
    expected = [1, 2, 4, 8, 10, 10]
    for delay in expected:
        entry = q.pop_ready()
        assert entry is not None
        q.requeue_error(p)
        assert q.lengths()["backoff"] == 1
        clock.now += delay - 0.01
        assert q.pop_ready() is None
        clock.now += 0.01


def test_unschedulable_pod_moves_only_on_a_relevant_event() -> None:
    clock = Clock()
    q = queue(clock, backoff_initial_seconds=1)
    p = make("p")
    q.add(p)
    assert q.pop_ready() is not None
    q.requeue_unschedulable(p, {"VolumeBinding"})
    clock.now += 5
    assert q.on_cluster_event(ClusterEvent(SERVICE, ADD)) == 0
    assert q.lengths() == {"active": 0, "backoff": 0, "unschedulable": 1, "gated": 0}
    assert q.on_cluster_event(PV_ADDED) == 1
    assert drain(q) == ["p"]


def test_event_during_backoff_goes_to_backoff_first() -> None:
    clock = Clock()
    q = queue(clock, backoff_initial_seconds=4)
    p = make("p")
    q.add(p)
    q.pop_ready()
    q.requeue_unschedulable(p, {"NodeResourcesFit"})
    q.on_cluster_event(NODE_ADD, None, a_node())
    assert q.lengths() == {"active": 0, "backoff": 1, "unschedulable": 0, "gated": 0}
    clock.now += 4
    assert drain(q) == ["p"]


def test_periodic_flush_retries_long_unschedulable_pods() -> None:
    """kube-scheduler 1.36's podMaxInUnschedulablePodsDuration: 5 minutes by default."""
    clock = Clock()
    q = queue(clock)
    p = make("p")
    q.add(p)
    q.pop_ready()
    q.requeue_unschedulable(p, {"NodeAffinity"})
    clock.now += 299
    assert q.pop_ready() is None
    clock.now += 1
    assert drain(q) == ["p"]


def test_deleted_pod_leaves_every_queue() -> None:
    q = queue(Clock())
    p = make("p")
    q.add(p)
    q.delete(p.meta.key)
    assert drain(q) == []
    assert q.lengths() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}


def test_in_flight_pod_is_not_queued_twice() -> None:
    q = queue(Clock())
    p = make("p")
    q.add(p)
    assert q.pop_ready() is not None
    q.add(p)
    assert q.pop_ready() is None


@pytest.mark.parametrize("event", ["PodAdd"])
def test_incoming_counts(event: str) -> None:
    q = queue(Clock())
    q.add(make("p"))
    assert q.stats.incoming == {("active", event): 1}


async def test_pop_waits_for_a_pod() -> None:
    import asyncio

    q = queue(Clock())

    async def later() -> None:
        await asyncio.sleep(0.01)
        q.add(make("p"))

    task = asyncio.create_task(later())
    entry = await asyncio.wait_for(q.pop(poll_seconds=0.5), timeout=2)
    await task
    assert entry.pod.name == "p"


def gated(name: str, gates: list[str]) -> Pod:
    view: Pod = parse(pod(name, spec={"schedulingGates": [{"name": g} for g in gates]}))
    return view


def test_a_gated_pod_waits_outside_the_active_queue_until_its_last_gate_goes() -> None:
    q = queue(Clock())
    seen: list[str] = []
    q.held.on_gated = lambda p: seen.append(p.name)
    q.add(gated("held", ["example.com/quota", "example.com/data-ready"]))
    q.add(make("free"))
    assert drain(q) == ["free"]
    assert q.lengths()["gated"] == 1
    assert seen == ["held"]
    # One gate removed: still gated; events do not release it either.
    q.update(gated("held", ["example.com/data-ready"]))
    assert q.on_cluster_event(PV_ADDED) == 0
    assert drain(q) == []
    q.update(make("held"))
    assert q.lengths()["gated"] == 0
    assert drain(q) == ["held"]
    assert seen == ["held"]


def test_a_deleted_gated_pod_leaves_no_trace() -> None:
    q = queue(Clock())
    q.add(gated("held", ["g"]))
    q.delete("default/held")
    assert q.lengths() == {"active": 0, "backoff": 0, "unschedulable": 0, "gated": 0}
    assert "default/held" not in q


def test_a_pod_whose_claim_is_missing_is_held_until_the_claim_comes() -> None:
    """DynamicResources' PreEnqueue: a pod naming a ResourceClaim that does not exist is
    never attempted, and nothing is said of it (no gated condition); the claim's
    creation lets it in. A claim deleted later holds it again when it would next be
    active."""
    cluster = ClusterCache()
    profile = build_profile(default_profile(with_storage=True).policy, PluginFactory(cluster))
    clock = Clock()
    q = SchedulingQueue(
        lambda p: p.priority or 0,
        clock,
        requeue=RequeueTable({"volsched": profile.requeue_events()}),
        hold=profile.hold,
    )
    seen: list[str] = []
    told: list[tuple[str, str]] = []
    q.held.on_gated = lambda p: seen.append(p.name)
    q.held.on_held = lambda p, hold: told.append((hold.plugin, hold.message))
    claims = [{"name": "gpu", "resourceClaimName": "gpu"}]
    waiting: Pod = parse(pod("waiting", spec={"resourceClaims": claims}))
    q.add(waiting)
    assert drain(q) == [] and q.lengths()["gated"] == 1 and seen == []
    # Told once (for the decisions page), not again when checked again unchanged.
    q.update(waiting)
    assert told == [("DynamicResources", 'could not find ResourceClaim "default/gpu"')]
    # Another kind's event does not let it in; the claim's creation does.
    assert q.on_cluster_event(PV_ADDED) == 0
    gpu = parse_resource_claim(
        {
            "metadata": {"name": "gpu", "namespace": "default"},
            "spec": {"devices": {"requests": []}},
        }
    )
    cluster.upsert("ResourceClaim", gpu)
    assert q.on_cluster_event(ClusterEvent(RESOURCE_CLAIM, ADD), None, gpu) == 1
    assert drain(q) == ["waiting"]
    # Its binding failed, then the claim was deleted: when its backoff is over, held.
    q.requeue_error(waiting)
    cluster.delete("ResourceClaim", "default/gpu")
    clock.now += 60
    assert drain(q) == [] and q.lengths() == {
        "active": 0,
        "backoff": 0,
        "unschedulable": 0,
        "gated": 1,
    }


def with_affinity(name: str) -> Pod:
    """A pod that must run in the zone of a pod labelled app=web."""
    term = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}
    affinity = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    view: Pod = parse(pod(name, spec={"affinity": affinity}))
    return view


def with_spread(name: str) -> Pod:
    constraint = {
        "maxSkew": 1,
        "topologyKey": "zone",
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "web"}},
    }
    raw = pod(name, labels={"app": "web"}, spec={"topologySpreadConstraints": [constraint]})
    view: Pod = parse(raw)
    return view


def placed(name: str, **labels: str) -> Pod:
    view: Pod = parse(pod(name, node_name="n1", labels=labels))
    return view


@pytest.mark.parametrize(
    ("plugin", "event", "old", "new", "moves"),
    [
        ("InterPodAffinity", ASSIGNED_POD_ADD, None, placed("w", app="web"), True),
        ("InterPodAffinity", ASSIGNED_POD_ADD, None, placed("w", app="db"), False),
        ("InterPodAffinity", PV_ADDED, None, None, False),
        ("PodTopologySpread", ASSIGNED_POD_DELETE, placed("w", app="web"), None, True),
        ("PodTopologySpread", ASSIGNED_POD_DELETE, placed("w", app="db"), None, False),
        ("PodTopologySpread", NODE_ADD, None, a_node(labels={"zone": "b"}), True),
        ("PodTopologySpread", NODE_ADD, None, a_node(), False),
        ("PodTopologySpread", ClusterEvent(STORAGE_CLASS, ADD), None, None, False),
    ],
)
def test_pods_rejected_by_pod_rules_move_when_matching_pods_come_or_go(
    plugin: str, event: ClusterEvent, old: Any, new: Any, moves: bool
) -> None:
    q = queue(Clock())
    p = with_affinity("p") if plugin == "InterPodAffinity" else with_spread("p")
    q.add(p)
    assert q.pop_ready() is not None
    q.requeue_unschedulable(p, {plugin})
    assert q.on_cluster_event(event, old, new) == (1 if moves else 0)


def test_a_forgotten_assumed_pod_frees_what_it_held() -> None:
    q = queue(Clock())
    p = make("p")
    q.add(p)
    assert q.pop_ready() is not None
    q.requeue_unschedulable(p, {"NodeResourcesFit"})
    assumed = make("other")
    assert q.assumed_pod_forgotten(assumed, "n1") == 1
    assert q.stats.incoming[("backoff", "AssignedPodDelete")] == 1


def test_a_pod_no_plugin_rejected_waits_out_its_backoff() -> None:
    """Rejected without a plugin to blame (an extender's filter, no node at all): no
    plugin's hint can tell which event helps, so it is retried after its backoff, as
    upstream's queue does, rather than parked until some event or the flush."""
    clock = Clock()
    q = queue(clock)
    p = make("p")
    q.add(p)
    assert q.pop_ready() is not None
    q.requeue_unschedulable(p, set())
    assert q.lengths() == {"active": 0, "backoff": 1, "unschedulable": 0, "gated": 0}
    clock.now += 1
    assert drain(q) == ["p"]


def test_an_event_during_the_pods_own_cycle_is_not_lost() -> None:
    """Upstream's in-flight events: a node added while the pod was being decided (an
    extender's answer awaited) sends the rejected pod to backoff, not to the pool."""
    clock = Clock()
    q = queue(clock)
    p = make("p")
    q.add(p)
    assert q.pop_ready() is not None
    assert q.on_cluster_event(NODE_ADD, None, a_node()) == 0
    q.requeue_unschedulable(p, {"NodeResourcesFit"})
    assert q.lengths() == {"active": 0, "backoff": 1, "unschedulable": 0, "gated": 0}
    # The next cycle saw that node already: rejected again with no event since its pop,
    # the pod is parked.
    clock.now += 2
    assert q.pop_ready() is not None
    q.requeue_unschedulable(p, {"NodeResourcesFit"})
    assert q.lengths() == {"active": 0, "backoff": 0, "unschedulable": 1, "gated": 0}


def test_the_queue_keeps_no_table_of_its_own() -> None:
    assert not hasattr(queueing, "RELEVANT_EVENTS")
    q = SchedulingQueue(lambda p: p.priority or 0, Clock())
    p = make("p")
    q.add(p)
    assert q.pop_ready() is not None
    q.requeue_unschedulable(p, {"VolumeBinding"})
    assert q.on_cluster_event(PV_ADDED) == 0


def _with_uid(name: str, uid: str) -> Pod:
    raw = pod(name)
    raw["metadata"]["uid"] = uid
    view: Pod = parse(raw)
    return view


@pytest.mark.parametrize("outcome", ["done", "unschedulable", "error"])
def test_a_pod_created_again_while_its_namesake_is_in_flight_is_not_lost(outcome: str) -> None:
    """In-flight pods are told apart by uid, as upstream keys them: the old pod's end
    (bound, rejected, failed) leaves the new pod of the same name to be scheduled.
    Before, the old pod's ``done`` dropped the new one."""
    clock = Clock()
    q = queue(clock)
    old = _with_uid("p", "uid-1")
    q.add(old)
    assert q.pop_ready() is not None
    q.delete(old.meta.key)
    new = _with_uid("p", "uid-2")
    q.add(new)
    if outcome == "done":
        q.done(old.meta.key, old.meta.uid)
    elif outcome == "unschedulable":
        q.requeue_unschedulable(old, {"NodeResourcesFit"})
    else:
        q.requeue_error(old)
    entry = q.pop_ready()
    assert entry is not None and entry.pod.meta.uid == "uid-2"


async def test_a_held_pod_is_shown_on_the_decisions_page_and_nothing_is_written() -> None:
    """The recording reporter remembers the hold as the pod's last attempt (reason
    PreEnqueue); the reporter sends no request for it."""

    class NoClient:
        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"the reporter used the API client ({name})")

    attempts = LastAttempts()
    reporter = RecordingReporter(attempts, NoClient(), "volsched", "i", lambda: 5.0)  # type: ignore[arg-type]
    reporter.held(make("waiting"), Hold("DynamicResources", 'could not find ResourceClaim "a/b"'))
    attempt = attempts.get("default/waiting")
    assert attempt is not None
    assert (attempt.reason, attempt.message) == (HELD_REASON, 'could not find ResourceClaim "a/b"')
