"""The scheduling queue: order, backoff, the unschedulable pool and event-driven moves."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import parse, pod
from volsched.cache.objects.core import Pod
from volsched.daemon.queue.queueing import SchedulingQueue


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def make(name: str, priority: int = 0, created: str = "2026-01-01T00:00:00Z") -> Pod:
    view: Pod = parse(pod(name, priority=priority, created=created))
    return view


def queue(clock: Clock, **kwargs: Any) -> SchedulingQueue:
    return SchedulingQueue(lambda p: p.priority or 0, clock, **kwargs)


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
    assert q.on_cluster_event("Service") == 0
    assert q.lengths() == {"active": 0, "backoff": 0, "unschedulable": 1, "gated": 0}
    assert q.on_cluster_event("PersistentVolume") == 1
    assert drain(q) == ["p"]


def test_event_during_backoff_goes_to_backoff_first() -> None:
    clock = Clock()
    q = queue(clock, backoff_initial_seconds=4)
    p = make("p")
    q.add(p)
    q.pop_ready()
    q.requeue_unschedulable(p, {"NodeResourcesFit"})
    q.on_cluster_event("Node")
    assert q.lengths() == {"active": 0, "backoff": 1, "unschedulable": 0, "gated": 0}
    clock.now += 4
    assert drain(q) == ["p"]


def test_periodic_flush_retries_long_unschedulable_pods() -> None:
    clock = Clock()
    q = queue(clock, unschedulable_flush_seconds=60)
    p = make("p")
    q.add(p)
    q.pop_ready()
    q.requeue_unschedulable(p, {"NodeAffinity"})
    clock.now += 59
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
    q.on_gated = lambda p: seen.append(p.name)
    q.add(gated("held", ["example.com/quota", "example.com/data-ready"]))
    q.add(make("free"))
    assert drain(q) == ["free"]
    assert q.lengths()["gated"] == 1
    assert seen == ["held"]
    # One gate removed: still gated; events do not release it either.
    q.update(gated("held", ["example.com/data-ready"]))
    assert q.on_cluster_event("PersistentVolume") == 0
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


@pytest.mark.parametrize(
    ("plugin", "event", "moves"),
    [
        ("InterPodAffinity", "AssignedPodDelete", True),
        ("InterPodAffinity", "AssignedPodAdd", True),
        ("InterPodAffinity", "PersistentVolume", False),
        ("PodTopologySpread", "AssignedPodDelete", True),
        ("PodTopologySpread", "Node", True),
        ("PodTopologySpread", "StorageClass", False),
    ],
)
def test_pods_rejected_by_pod_rules_move_when_pods_come_or_go(
    plugin: str, event: str, moves: bool
) -> None:
    q = queue(Clock())
    p = make("p")
    q.add(p)
    assert q.pop_ready() is not None
    q.requeue_unschedulable(p, {plugin})
    assert q.on_cluster_event(event) == (1 if moves else 0)
