"""Cache writes wait in memory and reach the file in batches: one transaction per flush,
the latest write per key, at most a flush interval late, relists whole."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from volsched.cache.errors import StoreError
from volsched.cache.store import Store, StoreStats
from volsched.cache.store.flushing import dumps

from .conftest import Query, assert_no_tasks_left, clock


@contextmanager
def counting_statements(store: Store) -> Iterator[dict[str, int]]:
    """Count the statements and COMMITs the store's cache engine sends to SQLite."""
    counts = {"statements": 0, "executemany": 0, "commits": 0}
    engine = store._engines.cache.sync_engine

    def on_execute(*args: Any) -> None:
        counts["statements"] += 1
        counts["executemany"] += bool(args[-1])

    def on_commit(_connection: Any) -> None:
        counts["commits"] += 1

    event.listen(engine, "before_cursor_execute", on_execute)
    event.listen(engine, "commit", on_commit)
    try:
        yield counts
    finally:
        event.remove(engine, "before_cursor_execute", on_execute)
        event.remove(engine, "commit", on_commit)


def pod(name: str, version: int = 1) -> dict[str, Any]:
    return {"metadata": {"name": name, "namespace": "ns", "resourceVersion": str(version)}}


async def eventually(condition: Any, seconds: float = 2.0) -> None:
    deadline = asyncio.get_running_loop().time() + seconds
    while not condition():
        assert asyncio.get_running_loop().time() < deadline, "condition not met in time"
        await asyncio.sleep(0.01)


async def test_writes_wait_in_memory_until_a_flush(store: Store, on_disk: Query) -> None:
    store.put_object("Pod", "ns/a", pod("a"))
    store.put_assumed("Pod", "ns/a", pod("a"))
    store.set_resume_point("Pod", "1")
    await asyncio.sleep(0.05)
    assert on_disk("SELECT count(*) FROM objects") == [(0,)]
    assert store.stats.pending == 3
    await store.flush()
    assert on_disk("SELECT kind, key FROM objects") == [("Pod", "ns/a")]
    assert on_disk("SELECT count(*) FROM assumed") == [(1,)]
    assert on_disk("SELECT resource_version FROM resume_points") == [("1",)]
    assert store.stats.pending == 0


async def test_many_writes_are_one_transaction_of_batched_statements(store: Store) -> None:
    with counting_statements(store) as counts:
        for index in range(2000):
            store.put_object("Pod", f"ns/p{index}", pod(f"p{index}"))
            store.put_assumed("Pod", f"ns/p{index}", pod(f"p{index}"))
            if index % 3 == 0:
                store.delete_object("Node", f"n{index}")
            store.set_resume_point("Pod", str(index))
        await store.flush()
    assert counts["commits"] == 1
    # BEGIN, one executemany per table and operation — never a statement per row.
    assert counts["statements"] <= 6
    assert counts["executemany"] >= 3
    stats = store.stats
    assert stats.flushes == 1
    assert stats.rows_flushed == 2000 + 2000 + 667 + 1
    assert stats.last_flush_seconds > 0


async def test_background_flush_comes_within_the_interval(db_path: Path, on_disk: Query) -> None:
    store, _ = await Store.open(str(db_path), flush_interval_seconds=0.05, clock=clock)
    try:
        store.put_object("Pod", "ns/a", pod("a"))
        store.set_resume_point("Pod", "5")
        await eventually(lambda: on_disk("SELECT count(*) FROM objects") == [(1,)], 1.0)
        assert on_disk("SELECT resource_version FROM resume_points") == [("5",)]
        # The commit is visible a moment before the flush's own bookkeeping is done.
        await eventually(lambda: store.stats.flushes == 1, 1.0)
    finally:
        await store.close()
    assert_no_tasks_left()


async def test_a_full_queue_flushes_at_once(db_path: Path, on_disk: Query) -> None:
    store, _ = await Store.open(
        str(db_path), flush_interval_seconds=3600, max_pending=10, clock=clock
    )
    try:
        for index in range(11):
            store.put_object("Pod", f"ns/p{index}", pod(f"p{index}"))
        await eventually(lambda: on_disk("SELECT count(*) FROM objects") == [(11,)])
    finally:
        await store.close()


async def test_a_burst_flushes_in_few_transactions(db_path: Path) -> None:
    """Events arriving over time, as from a watch: batched, not one commit each."""
    store, _ = await Store.open(str(db_path), flush_interval_seconds=0.05, clock=clock)
    try:
        with counting_statements(store) as counts:
            for index in range(300):
                store.put_object("Pod", f"ns/p{index % 50}", pod(f"p{index}", index))
                if index % 30 == 0:
                    await asyncio.sleep(0.01)
            await store.flush()
        # 300 events, 10 pauses: at most one flush per pause (however slow the machine)
        # plus the final one, each writing only the latest version of the 50 keys.
        assert counts["commits"] <= 11
        assert store.stats.rows_flushed <= counts["commits"] * 50
    finally:
        await store.close()


async def test_the_latest_write_per_key_wins(store: Store, on_disk: Query) -> None:
    store.put_object("Pod", "ns/a", pod("a", 1))
    store.put_object("Pod", "ns/a", pod("a", 2))
    store.put_object("Pod", "ns/b", pod("b"))
    store.delete_object("Pod", "ns/b")
    store.delete_object("Pod", "ns/c")
    store.put_object("Pod", "ns/c", pod("c", 3))
    store.put_assumed("PersistentVolume", "pv", {"v": 1})
    store.delete_assumed("PersistentVolume", "pv")
    assert store.stats.pending == 4
    await store.flush()
    assert store.stats.rows_flushed == 4
    state = await store.load()
    assert state.objects == {"Pod": {"ns/a": pod("a", 2), "ns/c": pod("c", 3)}}
    assert state.assumed == {}


async def test_put_stores_the_object_as_it_was_at_the_call(store: Store) -> None:
    raw = pod("a", 1)
    store.put_object("Pod", "ns/a", raw)
    raw["metadata"]["resourceVersion"] = "changed later"
    await store.flush()
    assert (await store.load()).objects["Pod"]["ns/a"] == pod("a", 1)


async def test_a_relist_replaces_the_kind_with_its_resume_point(
    store: Store, on_disk: Query
) -> None:
    store.put_object("Node", "n1", {"name": "n1"})
    store.put_object("Node", "n2", {"name": "n2"})
    store.put_object("Pod", "ns/a", pod("a"))
    store.set_resume_point("Node", "10")
    await store.flush()

    store.put_object("Node", "n9", {"name": "superseded by the relist"})
    store.replace_kind("Node", {"n2": {"name": "n2", "v": 2}, "n3": {"name": "n3"}}, "20")
    store.put_object("Node", "n4", {"name": "after the relist"})
    store.delete_object("Node", "n3")
    await store.flush()

    state = await store.load()
    assert state.objects == {
        "Node": {"n2": {"name": "n2", "v": 2}, "n4": {"name": "after the relist"}},
        "Pod": {"ns/a": pod("a")},
    }
    assert state.resume_points == {"Node": "20"}


async def test_a_relist_may_hand_over_its_objects_as_json_text(store: Store) -> None:
    """What the daemon does: a relist of 50,000 pods keeps their text, not their
    decoded objects, until the flush."""
    store.replace_kind("Pod", {"ns/a": dumps(pod("a")), "ns/b": pod("b")}, "7")
    await store.flush()
    state = await store.load()
    assert state.objects == {"Pod": {"ns/a": pod("a"), "ns/b": pod("b")}}


async def test_a_later_resume_point_wins_over_the_relists(store: Store) -> None:
    store.replace_kind("Node", {"n1": {}}, "20")
    store.set_resume_point("Node", "21")
    await store.flush()
    assert (await store.load()).resume_points == {"Node": "21"}


async def test_an_empty_relist_empties_the_kind(store: Store) -> None:
    store.put_object("Node", "n1", {})
    await store.flush()
    store.replace_kind("Node", {}, "30")
    await store.flush()
    state = await store.load()
    assert state.objects == {} and state.resume_points == {"Node": "30"}


async def test_a_failed_flush_writes_nothing_and_keeps_the_queue(
    store: Store, on_disk: Query
) -> None:
    """Objects and the resume point covering them land together or not at all."""
    store.put_object("Node", "n0", {})
    await store.flush()
    store.replace_kind("Node", {"n1": {}, "n2": {}}, "50")
    store.put_object("Pod", "ns/a", pod("a"))
    # A real SQLite failure on the last statement of the batch.
    on_disk(
        "CREATE TRIGGER fail BEFORE INSERT ON resume_points "
        "BEGIN SELECT RAISE(ABORT, 'disk on fire'); END"
    )
    with pytest.raises(StoreError, match="flushing failed: disk on fire"):
        await store.flush()
    on_disk("DROP TRIGGER fail")
    assert on_disk("SELECT key FROM objects") == [("n0",)]
    assert on_disk("SELECT count(*) FROM resume_points") == [(0,)]
    assert store.stats.flush_errors == 1
    assert "disk on fire" in (store.stats.last_flush_error or "")
    assert store.stats.pending == 4

    store.put_object("Node", "n3", {})  # queued while the failed batch waits
    await store.flush()
    assert sorted(on_disk("SELECT key FROM objects")) == [("n1",), ("n2",), ("n3",), ("ns/a",)]
    assert on_disk("SELECT resource_version FROM resume_points") == [("50",)]
    assert store.stats.last_flush_error is None


async def test_close_flushes_and_writes_after_close_fail(db_path: Path, on_disk: Query) -> None:
    store, _ = await Store.open(str(db_path), flush_interval_seconds=3600, clock=clock)
    store.put_object("Pod", "ns/a", pod("a"))
    assert store.is_open
    await store.close()
    await store.close()  # idempotent
    assert not store.is_open
    assert on_disk("SELECT count(*) FROM objects") == [(1,)]
    with pytest.raises(StoreError, match="closed"):
        store.put_object("Pod", "ns/b", pod("b"))
    assert_no_tasks_left()


async def test_on_flush_reports_latency_and_depth(db_path: Path) -> None:
    seen: list[StoreStats] = []
    store, _ = await Store.open(
        str(db_path), flush_interval_seconds=3600, clock=clock, on_flush=seen.append
    )
    try:
        store.put_object("Pod", "ns/a", pod("a"))
        store.put_object("Pod", "ns/b", pod("b"))
        await store.flush()
        await store.journal_open("ns/a", "n1", {})
    finally:
        await store.close()
    assert len(seen) == 1
    assert seen[0].flushes == 1 and seen[0].rows_flushed == 2 and seen[0].pending == 0
    assert seen[0].last_flush_seconds > 0
    assert store.stats.journal_depth == 1


async def test_a_failing_metrics_callback_does_not_fail_the_flush(db_path: Path) -> None:
    def broken(_stats: StoreStats) -> None:
        raise ValueError("metrics are down")

    store, _ = await Store.open(str(db_path), clock=clock, on_flush=broken)
    try:
        store.put_object("Pod", "ns/a", pod("a"))
        await store.flush()
        assert store.stats.flushes == 1
    finally:
        await store.close()


async def test_a_relist_of_many_objects_lets_the_loop_run(store: Store) -> None:
    ticks = 0

    async def ticker() -> None:
        nonlocal ticks
        while True:
            ticks += 1
            await asyncio.sleep(0)

    objects = {f"ns/p{index}": pod(f"p{index}") for index in range(3000)}
    store.replace_kind("Pod", objects, "1")
    task = asyncio.create_task(ticker())
    try:
        await store.flush()
    finally:
        task.cancel()
        await asyncio.wait([task])
    assert ticks >= 3000 // 500
    assert len((await store.load()).objects["Pod"]) == 3000


async def test_the_background_flush_retries_after_a_failure(db_path: Path, on_disk: Query) -> None:
    store, _ = await Store.open(str(db_path), flush_interval_seconds=0.02, clock=clock)
    try:
        on_disk(
            "CREATE TRIGGER fail BEFORE INSERT ON objects BEGIN SELECT RAISE(ABORT, 'full'); END"
        )
        store.put_object("Pod", "ns/a", pod("a"))
        await eventually(lambda: store.stats.flush_errors >= 1)
        assert on_disk("SELECT count(*) FROM objects") == [(0,)]
        on_disk("DROP TRIGGER fail")
        await eventually(lambda: on_disk("SELECT count(*) FROM objects") == [(1,)])
        assert store.stats.pending == 0
    finally:
        await store.close()
    assert_no_tasks_left()
