"""A full disk while running: writes fail as ``StoreFull``, reads go on, nothing queued is
lost, the failure and the recovery are one log line each, and everything queued is
written once space returns — found by the store's own retries, with no write asked."""

from __future__ import annotations

import asyncio
import logging
import sqlite3
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest

from volsched.cache.errors import StoreError, StoreFull
from volsched.cache.store import Store
from volsched.cache.store.health import is_disk_full, store_error

from .conftest import Query, assert_no_tasks_left, clock
from .small_disk import Disk, PageCap, small_disk

BODY = {"metadata": {"annotations": {"note": "x" * 2000}}}


async def eventually(condition: Callable[[], object], seconds: float = 5.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


def store_records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == "volsched.store" and r.levelno >= logging.INFO]


def rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    """What is on disk, read through a connection of its own."""
    connection = sqlite3.connect(path)
    try:
        return connection.execute(sql).fetchall()
    finally:
        connection.close()


@pytest.fixture
async def disk(tmp_path: Path) -> AsyncIterator[Disk]:
    with small_disk(tmp_path / "disk") as mounted:
        yield mounted


def test_sqlite_full_and_enospc_are_a_full_disk(tmp_path: Path) -> None:
    connection = sqlite3.connect(tmp_path / "capped.db")
    try:
        connection.execute("CREATE TABLE t (body TEXT)")
        connection.commit()
        connection.execute("PRAGMA max_page_count=1")  # held at its size: no page more
        with pytest.raises(sqlite3.OperationalError) as full:
            connection.execute("INSERT INTO t VALUES (?)", ("x" * 100_000,))
    finally:
        connection.close()
    assert is_disk_full(full.value)
    assert is_disk_full(OSError(28, "No space left on device"))
    assert not is_disk_full(sqlite3.OperationalError("database is locked"))
    error = store_error(tmp_path / "capped.db", "flushing", full.value)
    assert isinstance(error, StoreFull)
    assert str(error) == f"{tmp_path / 'capped.db'}: flushing failed: database or disk is full"
    other = store_error(tmp_path, "flushing", sqlite3.OperationalError("database is locked"))
    assert type(other) is StoreError


async def test_a_flush_that_finds_no_room_keeps_every_row(
    store: Store, on_disk: Query, caplog: pytest.LogCaptureFixture
) -> None:
    cap = PageCap(store)
    try:
        cap.limit()
        for index in range(100):
            store.put_object("ConfigMap", f"ns/c{index}", BODY)
        store.set_resume_point("ConfigMap", "7")
        with caplog.at_level(logging.INFO, "volsched.store"):
            with pytest.raises(StoreFull, match="flushing failed: database or disk is full"):
                await store.flush()
            with pytest.raises(StoreFull):
                await store.flush()
        assert store.stats.pending == 101 and not store.stats.writable
        assert "database or disk is full (writes failing for" in (store.write_problem or "")
        assert on_disk("SELECT count(*) FROM objects") == [(0,)]
        # Reading needs no room.
        assert (await store.journal_pending()) == []
        cap.lift()
        with caplog.at_level(logging.INFO, "volsched.store"):
            await store.flush()
    finally:
        cap.remove()
    assert store.write_problem is None and store.stats.writable
    assert on_disk("SELECT count(*) FROM objects") == [(100,)]
    assert on_disk("SELECT resource_version FROM resume_points") == [("7",)]
    records = store_records(caplog)
    assert [r.levelno for r in records] == [logging.WARNING, logging.INFO], records
    assert "database or disk is full" in records[0].getMessage()
    assert "can be written again" in records[1].getMessage()
    assert not any(r.exc_info for r in caplog.records)


async def test_the_flusher_retries_quietly_until_space_returns(
    db_path: Path, on_disk: Query, caplog: pytest.LogCaptureFixture
) -> None:
    store, _ = await Store.open(str(db_path), flush_interval_seconds=0.01, clock=clock)
    cap = PageCap(store)
    try:
        cap.limit()
        with caplog.at_level(logging.INFO, "volsched.store"):
            for index in range(100):
                store.put_object("ConfigMap", f"ns/c{index}", BODY)
            await eventually(lambda: store.stats.flush_errors >= 4)
            assert len(store_records(caplog)) == 1
            cap.lift()
            await eventually(lambda: store.write_problem is None)
    finally:
        cap.remove()
        await store.close()
    assert on_disk("SELECT count(*) FROM objects") == [(100,)]
    assert [r.levelno for r in store_records(caplog)] == [logging.WARNING, logging.INFO]
    assert not any(r.exc_info for r in caplog.records)
    assert_no_tasks_left()


async def test_a_full_disk_refuses_journal_entries_and_defers_closes(
    disk: Disk, caplog: pytest.LogCaptureFixture
) -> None:
    path = disk.path / "volsched.db"
    store, _ = await Store.open(str(path), flush_interval_seconds=0.01, clock=clock)
    try:
        bound = await store.journal_open("ns/a", "n1", {"pv": "pv-1"})
        disk.fill()
        with caplog.at_level(logging.INFO, "volsched.store"):
            with pytest.raises(StoreFull, match="opening a journal entry failed: database or"):
                await store.journal_open("ns/b", "n1", {"pv": "pv-2"})
            assert "database or disk is full" in (store.write_problem or "")
            # A cycle that ended must not fail for its row: the close waits for room.
            await store.journal_close(bound)
            assert store.stats.journal_depth == 0
            assert await store.journal_pending() == []
            assert rows(path, "SELECT id FROM journal") == [(bound,)]  # still on disk
            store.put_object("Node", "n1", {"metadata": {"name": "n1"}})
            await eventually(lambda: store.stats.flush_errors >= 3)
            assert "database or disk is full" in (store.stats.last_flush_error or "")
            disk.free()
            # No write is asked for: the store's retries find the room.
            await eventually(lambda: store.write_problem is None)
        assert store.stats.pending == 0
        state = await store.load(freeze=False)
        assert state.journal == [] and list(state.objects["Node"]) == ["n1"]
        assert rows(path, "SELECT count(*) FROM journal") == [(0,)]
        entry = await store.journal_open("ns/b", "n1", {"pv": "pv-2"})
        assert [e.id for e in await store.journal_pending()] == [entry]
    finally:
        await store.close()
    assert [r.levelno for r in store_records(caplog)] == [logging.WARNING, logging.INFO]
    assert not any(r.exc_info for r in caplog.records)
    assert_no_tasks_left()
