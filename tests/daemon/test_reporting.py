"""What an operator finds in the API server after pods were tried again and again: one
event per pod that counts the attempts, as kube-scheduler's event recorder leaves it —
not one Event object per attempt.

The reporter is the daemon's own, writing through the binding writer's client to the
embedded API server over HTTP; only time is emulated, so ten minutes take a few seconds.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tests.integration.objects import pod
from volsched.cache.objects.core import Pod, parse_pod
from volsched.daemon.binding.reporting import Reporter
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.kube.ownership import Writer
from volsched.emulator import ApiServer, ControllerSettings, write_kubeconfig

Raw = dict[str, Any]
START = 1_767_225_600.0  # 2026-01-01T00:00:00Z
MESSAGE = (
    "0/3 nodes are available: 3 node(s) didn't find available persistent volumes to bind."
    " preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling."
)


class Clock:
    def __init__(self) -> None:
        self.now = START

    def __call__(self) -> float:
        return self.now


def at(seconds: float) -> str:
    return datetime.fromtimestamp(START + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture
async def api(tmp_path: Path) -> AsyncIterator[tuple[ApiServer, KubeClient]]:
    server = ApiServer(ControllerSettings.none())
    await server.start()
    client = await KubeClient.connect(str(write_kubeconfig(tmp_path / "kc", server.url)))
    try:
        yield server, client
    finally:
        await client.close()
        await server.stop()


def pods_in(server: ApiServer, count: int) -> list[Pod]:
    return [parse_pod(raw) for raw in server.load([pod(f"p{i}") for i in range(count)])]


def events_by_pod(server: ApiServer) -> dict[str, list[Raw]]:
    found: dict[str, list[Raw]] = defaultdict(list)
    for event in server.list("Event", "default"):
        found[event["involvedObject"]["name"]].append(event)
    return found


async def test_400_pods_tried_for_ten_minutes_leave_one_counted_event_each(
    api: tuple[ApiServer, KubeClient],
) -> None:
    server, client = api
    pods = pods_in(server, 400)
    clock = Clock()
    reporter = Reporter(client.for_writer(Writer.BINDING), "volsched", "volsched-0", clock)
    server.faults.reset()

    # Every pod tried every 15 s for ten minutes, failing each time for the same reason.
    for _ in range(40):
        await asyncio.gather(*(reporter.failed(p, MESSAGE, "Unschedulable") for p in pods))
        clock.now += 15

    events = events_by_pod(server)
    assert sorted(events) == sorted(p.name for p in pods)
    for name, found in events.items():
        assert len(found) == 1, name
        (event,) = found
        assert (event["reason"], event["type"], event["message"]) == (
            "FailedScheduling",
            "Warning",
            MESSAGE,
        )
        # 25 events at once, then one more every five minutes: the 26th attempt, at
        # 6m15s, is the last one written within the ten minutes.
        assert event["count"] == 26
        assert (event["firstTimestamp"], event["lastTimestamp"]) == (at(0), at(375))
    # One create and 25 patches per pod: the API writes the limit allows, no more.
    assert len(server.faults.requests("POST", r"/events$")) == 400
    assert len(server.faults.requests("PATCH", r"/events/")) == 400 * 25


async def test_messages_that_keep_changing_are_combined_into_one_event(
    api: tuple[ApiServer, KubeClient],
) -> None:
    server, client = api
    (web,) = pods_in(server, 1)
    clock = Clock()
    reporter = Reporter(client.for_writer(Writer.BINDING), "volsched", "volsched-0", clock)

    for attempt in range(40):
        message = f"0/{attempt + 3} nodes are available: {attempt + 3} Insufficient cpu."
        await reporter.failed(web, message, "Unschedulable")
        clock.now += 15

    events = sorted(events_by_pod(server)["p0"], key=lambda e: e["firstTimestamp"])
    # Nine messages written as they came, then the similar ones combined into one event.
    assert len(events) == 10
    assert [e["count"] for e in events[:9]] == [1] * 9
    combined = events[9]
    assert combined["message"] == (
        "(combined from similar events): 0/28 nodes are available: 28 Insufficient cpu."
    )
    assert combined["count"] == 26 - 9
    assert combined["reason"] == "FailedScheduling"


async def test_an_event_the_api_server_dropped_is_created_again_with_its_count(
    api: tuple[ApiServer, KubeClient],
) -> None:
    server, client = api
    (web,) = pods_in(server, 1)
    clock = Clock()
    reporter = Reporter(client.for_writer(Writer.BINDING), "volsched", "volsched-0", clock)
    await reporter.failed(web, MESSAGE, "Unschedulable")
    (first,) = events_by_pod(server)["p0"]
    # The API server's event TTL ran out.
    await client.delete("Event", first["metadata"]["name"], "default")

    clock.now += 60
    await reporter.failed(web, MESSAGE, "Unschedulable")

    (again,) = events_by_pod(server)["p0"]
    assert again["metadata"]["name"] == first["metadata"]["name"]
    assert (again["count"], again["firstTimestamp"], again["lastTimestamp"]) == (2, at(0), at(60))


async def test_the_limit_is_per_pod_and_an_event_over_it_is_counted_later(
    api: tuple[ApiServer, KubeClient],
) -> None:
    server, client = api
    busy, quiet = pods_in(server, 2)
    clock = Clock()
    reporter = Reporter(client.for_writer(Writer.BINDING), "volsched", "volsched-0", clock)
    for _ in range(30):
        await reporter.failed(busy, MESSAGE, "Unschedulable")
    await reporter.failed(quiet, MESSAGE, "Unschedulable")

    events = events_by_pod(server)
    assert [e["count"] for e in events["p0"]] == [25]
    assert [e["count"] for e in events["p1"]] == [1]

    # Five minutes on, a token is back: the write carries every attempt since.
    clock.now += 300
    await reporter.failed(busy, MESSAGE, "Unschedulable")
    assert [e["count"] for e in events_by_pod(server)["p0"]] == [31]


@pytest.mark.parametrize(
    ("seconds", "stamp", "event_time"),
    [
        (1767225600.0, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.000000Z"),
        (1767225600.5, "2026-01-01T00:00:00Z", "2026-01-01T00:00:00.500000Z"),
        (1767225659.000042, "2026-01-01T00:00:59Z", "2026-01-01T00:00:59.000042Z"),
    ],
)
async def test_an_event_is_stamped_to_the_second_and_its_event_time_to_the_microsecond(
    api: tuple[ApiServer, KubeClient], seconds: float, stamp: str, event_time: str
) -> None:
    _, client = api
    reporter = Reporter(
        client.for_writer(Writer.BINDING), "volsched", "volsched-0", lambda: seconds
    )
    body = reporter.event_body(parse_pod(pod("p")), "Normal", "Scheduled", "Binding", "bound")
    assert (body["firstTimestamp"], body["lastTimestamp"]) == (stamp, stamp)
    assert body["eventTime"] == event_time


async def test_the_condition_is_patched_only_when_it_changes(
    api: tuple[ApiServer, KubeClient],
) -> None:
    """kube-scheduler sends no status patch when PodScheduled=False already says the
    same; volsched re-patched it with a new lastTransitionTime on every attempt."""
    server, client = api
    (first,) = pods_in(server, 1)
    reporter = Reporter(client.for_writer(Writer.BINDING), "volsched", "volsched-0", Clock())
    server.faults.reset()
    await reporter.failed(first, MESSAGE, "Unschedulable")
    (raw,) = [p for p in server.list("Pod", "default") if p["metadata"]["name"] == first.name]
    seen = parse_pod(raw)
    assert (seen.scheduled_reason, seen.scheduled_message) == ("Unschedulable", MESSAGE)
    await reporter.failed(seen, MESSAGE, "Unschedulable")
    assert len(server.faults.requests("PATCH", r"/pods/p0/status$")) == 1
    await reporter.failed(seen, MESSAGE + " (changed)", "Unschedulable")
    assert len(server.faults.requests("PATCH", r"/pods/p0/status$")) == 2
