"""Extenders that answer badly, as a hostile re-test found them: a 1.5 GB answer took
6 GB and stalled ``/livez`` for 15 s, an answer nested too deep failed every pod's cycle
even from an ``ignorable`` extender, and a 3 MB ``Error`` was logged whole every cycle.
Now an answer is read up to a limit and no further, decoded within the extender's
``httpTimeout`` and a depth limit, every failure of an ignorable extender is skipped,
and an extender's texts are cut to a line and logged once."""

from __future__ import annotations

import asyncio
import logging
import time
import tracemalloc
from collections.abc import Iterator

import aiohttp
import pytest
import yaml

from tests.integration.conftest import Cluster, eventually
from tests.integration.hostile_extender import MIB, HostileExtender
from tests.integration.objects import node, pod
from volsched.daemon.extenders.client import ExtenderError, Extenders
from volsched.scheduling.extender_config import parse_extenders

BAD = ("huge", "declared", "deep", "malformed", "shape", "status", "trickle", "big-error")


@pytest.fixture
def hostile() -> Iterator[HostileExtender]:
    with HostileExtender(stream_bytes=70 * MIB) as extender:
        yield extender


def entries(hostile: HostileExtender, ignorable: bool, behaviours: tuple[str, ...] = BAD) -> str:
    return yaml.safe_dump(
        [
            {
                "urlPrefix": hostile.url(behaviour),
                "filterVerb": "filter",
                "nodeCacheCapable": True,
                "httpTimeout": "1s",
                "ignorable": ignorable,
            }
            for behaviour in behaviours
        ]
    )


async def filter_once(
    hostile: HostileExtender, behaviour: str, max_answer_bytes: int = MIB
) -> ExtenderError:
    specs = parse_extenders(yaml.safe_load(entries(hostile, False, (behaviour,))), "test.yaml")
    extenders = Extenders(specs, max_answer_bytes=max_answer_bytes)
    try:
        [client] = extenders.clients
        with pytest.raises(ExtenderError) as caught:
            await client.filter({"metadata": {"name": "p"}}, [], ["node-1"])
        return caught.value
    finally:
        await extenders.close()


@pytest.mark.parametrize(
    ("behaviour", "message"),
    [
        ("huge", "answered filter wrongly: its answer is more than the 1.0 MiB allowed"),
        ("declared", "its answer is 10,240.0 MiB (Content-Length), more than the 1.0 MiB allowed"),
        ("deep", "answered filter with bad JSON: nested deeper than 64 levels"),
        ("malformed", "answered filter with bad JSON"),
        ("shape", "answered filter wrongly: NodeNames must be a list of node names"),
        ("status", "code 500"),
        ("trickle", "context deadline exceeded (Client.Timeout exceeded while reading body)"),
    ],
)
async def test_each_bad_answer_is_one_error(
    hostile: HostileExtender, behaviour: str, message: str
) -> None:
    started = time.monotonic()
    error = await filter_once(hostile, behaviour)
    assert message in str(error) and "\n" not in str(error)
    assert time.monotonic() - started < 1.5  # the 1s httpTimeout covers everything


async def test_a_big_answer_is_refused_after_reading_about_the_limit(
    hostile: HostileExtender,
) -> None:
    """70 MiB streamed against a 1 MiB limit: refused having allocated about the limit."""
    tracemalloc.start()
    try:
        error = await filter_once(hostile, "huge")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert "more than the 1.0 MiB allowed (not read further)" in str(error)
    assert peak < 4 * MIB, f"peak {peak / MIB:.1f} MiB"
    # The server could write what the sockets' buffers hold, no more: far from 70 MiB.
    await asyncio.sleep(0.2)
    assert hostile.sent["huge"] < 16 * MIB


async def test_an_extenders_long_error_is_cut_to_a_line(hostile: HostileExtender) -> None:
    error = await filter_once(hostile, "big-error", max_answer_bytes=4 * MIB)
    assert str(error) == "x" * 512 + "… (3,000,000 bytes)"


def failures(cluster: Cluster, name: str) -> list[str]:
    return [e["note"] for e in cluster.events_for(name) if e["reason"] == "FailedScheduling"]


async def test_ignorable_extenders_are_skipped_for_every_failure_and_logged_once(
    cluster: Cluster, hostile: HostileExtender, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, "volsched.extenders")
    specs = parse_extenders(yaml.safe_load(entries(hostile, True)), "test.yaml")
    cluster.server.load([node("node-1")])
    daemon = await cluster.start_daemon(cluster.settings(extenders=specs))
    base = f"http://127.0.0.1:{daemon.http_port}/livez"
    names = [f"web-{i}" for i in range(3)]
    lags: list[float] = []
    async with aiohttp.ClientSession() as session:
        cluster.server.load([pod(name, cpu="10m") for name in names])
        deadline = time.monotonic() + 30
        while not all(cluster.node_of(n) == "node-1" for n in names):
            assert time.monotonic() < deadline, "pods not bound past hostile extenders"
            started = time.monotonic()
            async with session.get(base) as response:
                assert response.status == 200
            lags.append(time.monotonic() - started)
            await asyncio.sleep(0.05)
    assert max(lags) < 1.0, f"/livez took {max(lags):.2f}s"
    logged = [r.getMessage() for r in caplog.records if r.name == "volsched.extenders"]
    for behaviour in BAD:
        lines = [line for line in logged if f"/{behaviour} skipped in filter" in line]
        assert len(lines) == 1, (behaviour, lines)  # once, though every pod met it
        assert len(lines[0]) < 800
    # Reading stopped at the limit (16 MiB): of the 70 MiB of each answer, what the
    # sockets' buffers hold was written past it, no more.
    assert hostile.sent["huge"] / hostile.requests["huge"] < 32 * MIB


async def test_a_failing_extender_that_is_not_ignorable_fails_the_cycle_with_one_line(
    cluster: Cluster, hostile: HostileExtender
) -> None:
    specs = parse_extenders(yaml.safe_load(entries(hostile, False, ("deep",))), "test.yaml")
    cluster.server.load([node("node-1")])
    await cluster.start_daemon(cluster.settings(extenders=specs))
    cluster.server.load([pod("web", cpu="10m")])
    await eventually(lambda: failures(cluster, "web"), what="web failed")
    assert failures(cluster, "web")[0] == (
        f"extender at URL {hostile.url('deep')}/filter answered filter with bad JSON: "
        "nested deeper than 64 levels"
    )
    assert cluster.node_of("web") is None
