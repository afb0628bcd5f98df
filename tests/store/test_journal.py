"""The binding journal is on disk before ``journal_open`` returns and survives a crash."""

from __future__ import annotations

from pathlib import Path

import pytest

from volsched.cache.errors import StoreError
from volsched.cache.store import Store

from .conftest import NOW, Query, assert_no_tasks_left


class Clock:
    def __init__(self) -> None:
        self.now = NOW

    def __call__(self) -> float:
        return self.now


async def test_an_intent_is_committed_before_journal_open_returns(
    store: Store, on_disk: Query
) -> None:
    entry = await store.journal_open("ns/web-0", "node-1", {"prebind": {"pv-1": "ns/data"}})
    assert on_disk("SELECT id, pod, node, intent, state FROM journal") == [
        (entry, "ns/web-0", "node-1", '{"prebind":{"pv-1":"ns/data"}}', "open")
    ]
    assert store.stats.journal_depth == 1


async def test_open_update_close(db_path: Path) -> None:
    clock = Clock()
    store, _ = await Store.open(str(db_path), clock=clock)
    try:
        entry = await store.journal_open("ns/web-0", "node-1", {"step": 0})
        clock.now += 5
        await store.journal_update(entry, state="prebound", intent={"step": 1})
        (pending,) = await store.journal_pending()
        assert (pending.state, pending.intent) == ("prebound", {"step": 1})
        assert (pending.created_at, pending.updated_at) == (NOW, NOW + 5)
        await store.journal_update(entry, state="binding")
        assert (await store.journal_pending())[0].intent == {"step": 1}

        await store.journal_close(entry)
        await store.journal_close(entry)  # harmless
        assert await store.journal_pending() == []
        assert store.stats.journal_depth == 0
        with pytest.raises(StoreError, match=f"no open journal entry {entry}"):
            await store.journal_update(entry, state="late")
    finally:
        await store.close()


async def test_a_close_is_immediate_for_readers_and_reaches_the_file_with_the_next_flush(
    store: Store, on_disk: Query
) -> None:
    kept = await store.journal_open("ns/a", "n1", {})
    closed = await store.journal_open("ns/b", "n1", {})
    await store.journal_close(closed)
    assert [entry.id for entry in await store.journal_pending()] == [kept]
    assert store.stats.journal_depth == 1
    assert on_disk("SELECT id FROM journal ORDER BY id") == [(kept,), (closed,)]
    await store.flush()
    assert on_disk("SELECT id FROM journal ORDER BY id") == [(kept,)]
    await store.journal_close(closed)  # again, after its row is gone: still harmless
    assert store.stats.journal_depth == 1


async def test_pending_entries_come_oldest_first_and_ids_are_never_reused(store: Store) -> None:
    first = await store.journal_open("ns/a", "n1", {})
    second = await store.journal_open("ns/b", "n2", {})
    await store.journal_close(second)
    third = await store.journal_open("ns/c", "n3", {})
    assert third > second > first
    assert [entry.pod for entry in await store.journal_pending()] == ["ns/a", "ns/c"]


async def test_the_journal_survives_a_crash_the_queue_does_not(db_path: Path) -> None:
    store, _ = await Store.open(str(db_path), flush_interval_seconds=3600)
    store.put_assumed("PersistentVolume", "pv-1", {"spec": {"claimRef": {"name": "d"}}})
    entry = await store.journal_open("ns/web-0", "node-1", {"prebind": {"pv-1": "ns/d"}})
    await store.abort()  # as if killed: no flush, connections dropped
    assert_no_tasks_left()
    with pytest.raises(StoreError, match="closed"):
        await store.journal_open("ns/web-1", "node-1", {})

    store, opened = await Store.open(str(db_path))
    try:
        assert opened.state == "warm"
        assert store.stats.journal_depth == 1
        state = await store.load()
        assert [(e.id, e.pod, e.intent) for e in state.journal] == [
            (entry, "ns/web-0", {"prebind": {"pv-1": "ns/d"}})
        ]
        assert state.assumed == {}  # queued cache writes die with the process
        assert [e.id for e in await store.journal_pending()] == [entry]
    finally:
        await store.close()


async def test_journal_writes_wait_for_nothing_queued(store: Store, on_disk: Query) -> None:
    store.put_object("Pod", "ns/a", {})
    await store.journal_open("ns/a", "n1", {})
    assert on_disk("SELECT count(*) FROM objects") == [(0,)]
    assert on_disk("SELECT count(*) FROM journal") == [(1,)]
