"""What an operator finds in the API server after pods were tried again and again: one
events.k8s.io/v1 Event per pod whose EventSeries counts the attempts, as kube-scheduler's
event recorder leaves it — not one Event object per attempt.

The reporter is the daemon's own, writing through the binding writer's client to the
embedded API server; the events are read back from it over HTTP, as ``kubectl get
events`` reads them. Only time is emulated, so forty minutes take a few seconds.
"""

from __future__ import annotations

import asyncio
from collections import defaultdict
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.integration.objects import pod
from volsched.cache.objects.core import Pod, parse_pod
from volsched.daemon.binding.reporting import Reporter
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.kube.ownership import Writer
from volsched.emulator import ApiServer, ControllerSettings, write_kubeconfig

Raw = dict[str, Any]
START = 1_767_225_600.0  # 2026-01-01T00:00:00Z
EVENTS = "/apis/events.k8s.io/v1/namespaces/default/events"
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
    """A MicroTime ``seconds`` after the start."""
    return datetime.fromtimestamp(START + seconds, UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


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


def as_watched(server: ApiServer, pods: list[Pod]) -> list[Pod]:
    """``pods`` as they are now in the API server, in the same order."""
    stored = {raw["metadata"]["name"]: raw for raw in server.list("Pod", "default")}
    return [parse_pod(stored[p.name]) for p in pods]


def reporter_on(client: KubeClient, clock: Clock) -> Reporter:
    return Reporter(client.for_writer(Writer.BINDING), "volsched", "host-1", clock)


async def http(server: ApiServer, method: str, path: str, body: Any = None) -> tuple[int, Any]:
    headers = {"Content-Type": "application/strategic-merge-patch+json"}
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, server.url + path, json=body, headers=headers) as response,
    ):
        return response.status, await response.json()


async def events_by_pod(server: ApiServer) -> dict[str, list[Raw]]:
    """The events.k8s.io/v1 Events of the namespace, read over HTTP, by regarded pod."""
    status, listed = await http(server, "GET", EVENTS)
    assert status == 200, listed
    assert listed["apiVersion"] == "events.k8s.io/v1"
    found: dict[str, list[Raw]] = defaultdict(list)
    for event in listed["items"]:
        found[event["regarding"]["name"]].append(event)
    return found


async def test_400_pods_tried_for_ten_minutes_leave_one_event_series_each(
    api: tuple[ApiServer, KubeClient],
) -> None:
    server, client = api
    pods = pods_in(server, 400)
    clock = Clock()
    reporter = reporter_on(client, clock)
    server.faults.reset()

    # Every pod tried every 15 s for ten minutes, failing each time for the same reason;
    # the heartbeat runs in between, as the daemon runs it. Each attempt gets the pod as
    # the daemon's watch last delivered it: with the PodScheduled condition the first
    # failure wrote, so the later ones write no condition (kube-scheduler's rule).
    for _ in range(40):
        await asyncio.gather(*(reporter.failed(p, MESSAGE, "Unschedulable") for p in pods))
        await reporter.heartbeat()
        clock.now += 15
        pods = as_watched(server, pods)

    events = await events_by_pod(server)
    assert sorted(events) == sorted(p.name for p in pods)
    for name, found in events.items():
        assert len(found) == 1, name
        (event,) = found
        assert event["regarding"]["kind"] == "Pod" and event["regarding"]["namespace"] == "default"
        assert (event["reason"], event["action"], event["type"], event["note"]) == (
            "FailedScheduling",
            "Scheduling",
            "Warning",
            MESSAGE,
        )
        assert (event["reportingController"], event["reportingInstance"]) == (
            "volsched",
            "volsched-host-1",
        )
        assert event["eventTime"] == at(0)
        # The first repeat made it a series; the later ones are only counted so far.
        assert event["series"] == {"count": 2, "lastObservedTime": at(15)}
    # One create and one patch per pod: not one write per attempt.
    assert len(server.faults.requests("POST", r"/events$")) == 400
    assert len(server.faults.requests("PATCH", r"/events/")) == 400
    assert len(server.faults.requests("PATCH", r"/pods/[^/]+/status$")) == 400

    # The pods stop failing (placed, say). Within two heartbeats of six minutes the
    # series are finished: their final counts written, once.
    while clock.now < START + 585 + 2 * 360:
        clock.now += 60
        await reporter.heartbeat()
    for name, (event,) in (await events_by_pod(server)).items():
        assert event["series"] == {"count": 40, "lastObservedTime": at(585)}, name
    assert len(server.faults.requests("PATCH", r"/events/")) == 800
    assert len(reporter.book) == 0


async def test_a_long_series_is_written_again_every_thirty_minutes(
    api: tuple[ApiServer, KubeClient],
) -> None:
    server, client = api
    (web,) = pods_in(server, 1)
    clock = Clock()
    reporter = reporter_on(client, clock)
    counts = {}
    for minute in range(41):
        await reporter.failed(web, MESSAGE, "Unschedulable")
        await reporter.heartbeat()
        (event,) = (await events_by_pod(server))["p0"]
        counts[minute] = event.get("series", {"count": 1})["count"]
        clock.now += 60
    assert (counts[0], counts[1], counts[29]) == (1, 2, 2)
    # The refresh at 30 minutes writes the 31 attempts so far, and keeps one Event.
    assert (counts[30], counts[40]) == (31, 31)


async def test_an_event_the_api_server_dropped_is_created_again_with_its_series(
    api: tuple[ApiServer, KubeClient],
) -> None:
    server, client = api
    (web,) = pods_in(server, 1)
    clock = Clock()
    reporter = reporter_on(client, clock)
    await reporter.failed(web, MESSAGE, "Unschedulable")
    (first,) = (await events_by_pod(server))["p0"]
    # The API server's event TTL ran out.
    status, _ = await http(server, "DELETE", f"{EVENTS}/{first['metadata']['name']}")
    assert status == 200

    clock.now += 60
    await reporter.failed(web, MESSAGE, "Unschedulable")

    (again,) = (await events_by_pod(server))["p0"]
    assert again["metadata"]["name"] == first["metadata"]["name"]
    assert (again["eventTime"], again["note"]) == (at(0), MESSAGE)
    assert again["series"] == {"count": 2, "lastObservedTime": at(60)}


async def test_a_series_keeps_its_first_note_and_the_api_server_refuses_another(
    api: tuple[ApiServer, KubeClient],
) -> None:
    server, client = api
    (web,) = pods_in(server, 1)
    clock = Clock()
    reporter = reporter_on(client, clock)
    for attempt in range(3):
        await reporter.failed(web, f"0/{attempt + 3} nodes are available.", "Unschedulable")
        clock.now += 15
    await reporter.scheduled(web, "node-1")
    events = {e["reason"]: e for e in (await events_by_pod(server))["p0"]}
    # Another reason is another Event; a changed note is the same one again.
    assert sorted(events) == ["FailedScheduling", "Scheduled"]
    failed = events["FailedScheduling"]
    assert (failed["note"], failed["series"]["count"]) == ("0/3 nodes are available.", 2)
    assert "series" not in events["Scheduled"]
    # Only the series of an events.k8s.io Event may change, as on a real API server.
    name = failed["metadata"]["name"]
    status, refused = await http(server, "PATCH", f"{EVENTS}/{name}", {"note": "changed"})
    assert status == 422, refused
    assert "note: Invalid value" in refused["message"]


async def test_an_event_quiet_for_six_minutes_starts_a_new_one(
    api: tuple[ApiServer, KubeClient],
) -> None:
    server, client = api
    (web,) = pods_in(server, 1)
    clock = Clock()
    reporter = reporter_on(client, clock)
    await reporter.failed(web, MESSAGE, "Unschedulable")
    for _ in range(13):
        clock.now += 60
        await reporter.heartbeat()
    await reporter.failed(web, MESSAGE, "Unschedulable")
    found = (await events_by_pod(server))["p0"]
    assert sorted(e["eventTime"] for e in found) == [at(0), at(13 * 60)]
    assert all("series" not in e for e in found)


@pytest.mark.parametrize(
    ("seconds", "event_time"),
    [
        (1767225600.0, "2026-01-01T00:00:00.000000Z"),
        (1767225600.5, "2026-01-01T00:00:00.500000Z"),
        (1767225659.000042, "2026-01-01T00:00:59.000042Z"),
    ],
)
async def test_an_events_time_is_a_micro_time(
    api: tuple[ApiServer, KubeClient], seconds: float, event_time: str
) -> None:
    _, client = api
    reporter = Reporter(
        client.for_writer(Writer.BINDING), "volsched", "volsched-0", lambda: seconds
    )
    body = reporter.event_body(parse_pod(pod("p")), "Normal", "Scheduled", "Binding", "bound")
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
