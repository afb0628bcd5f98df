"""A full disk while the daemon runs: no binding starts without its journal entry, the
user is told why (FailedScheduling, PodScheduled=False), /readyz fails with the reason,
the log says so once (no traceback per retry), and all resumes once space returns.

The database lives on a small tmpfs of its own, filled with a file: SQLite sees ENOSPC
exactly as on a full volume."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import claim, local_pv, node, pod, storage_class
from tests.store.small_disk import Disk, small_disk
from volsched.daemon.config.settings import BackoffSettings, DatabaseSettings
from volsched.daemon.runtime.app import Daemon

FULL = "database or disk is full"


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Disk]:
    with small_disk(tmp_path / "disk") as mounted:
        yield mounted


async def readiness(daemon: Daemon) -> tuple[int, str]:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{daemon.http_port}/readyz?verbose") as response,
    ):
        return response.status, await response.text()


async def metrics(daemon: Daemon) -> str:
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{daemon.http_port}/metrics") as response,
    ):
        return await response.text()


def scheduled_condition(cluster: Cluster, name: str) -> dict[str, Any] | None:
    for item in cluster.pod(name).get("status", {}).get("conditions") or []:
        if item.get("type") == "PodScheduled":
            return dict(item)
    return None


# ``disk`` before ``cluster``: the daemon stops before its filesystem is unmounted.
async def test_a_full_disk_holds_bindings_back_says_why_and_heals(
    disk: Disk, cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO)
    server = cluster.server
    server.load([node("node-1"), storage_class("local"), local_pv("pv-1", "node-1"), claim("c1")])
    settings = cluster.settings(
        database=DatabaseSettings(str(disk.path / "volsched.db")),
        backoff=BackoffSettings(initial_seconds=0.1, max_seconds=0.5),
    )
    daemon = await cluster.start_daemon(settings)
    assert (await readiness(daemon))[0] == 200

    disk.fill()
    server.load([pod("p", ("c1",))])

    def failed_events() -> list[dict[str, Any]]:
        return [e for e in cluster.events_for("p") if e.get("reason") == "FailedScheduling"]

    events = await eventually(failed_events, what="FailedScheduling for the full database")
    assert events[0]["type"] == "Warning"
    assert "the scheduler's database is full" in events[0]["note"]
    assert FULL in events[0]["note"]
    condition = await eventually(
        lambda: scheduled_condition(cluster, "p"), what="PodScheduled condition"
    )
    assert condition["status"] == "False" and condition["reason"] == "SchedulerError"
    assert "the scheduler's database is full" in condition["message"]

    async def not_ready() -> str | None:
        status, text = await readiness(daemon)
        return text if status == 503 else None

    text = await eventually(not_ready, what="readiness failing")
    assert f"[-]database failed: {daemon.store.path}: " in text and FULL in text, text
    assert "volsched_database_writable 0.0" in await metrics(daemon)
    # Nothing was written for the pod: no binding without its journal entry.
    assert cluster.node_of("p") is None
    volume = server.get("PersistentVolume", "pv-1")
    assert volume is not None and not volume["spec"].get("claimRef")
    assert daemon.store.stats.journal_depth == 0
    # Retried with backoff, and reported again (the one event became a series, whose
    # count the heartbeat writes), not logged as a crash.
    await eventually(
        lambda: [(e.get("series") or {}).get("count") for e in failed_events()] == [2],
        what="retries while full",
    )

    disk.free()
    await eventually(lambda: cluster.node_of("p") == "node-1", what="binding once space returns")
    await eventually(lambda: daemon.store.write_problem is None, what="writes working")
    assert (await readiness(daemon))[0] == 200
    assert "volsched_database_writable 1.0" in await metrics(daemon)
    await eventually(lambda: daemon.store.stats.journal_depth == 0, what="journal entry closed")
    # What waited in memory while the disk was full is on disk now.
    await eventually(lambda: daemon.store.stats.pending == 0, what="queued writes flushed")

    assert not [r for r in caplog.records if r.exc_info], "a traceback was logged"
    store_lines = [
        r.getMessage()
        for r in caplog.records
        if r.name == "volsched.store" and r.levelno >= logging.INFO
    ]
    assert len(store_lines) == 2, store_lines
    assert FULL in store_lines[0] and "can be written again" in store_lines[1]
