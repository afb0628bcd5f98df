"""Intents opened at the same time are committed together, each caller getting its id
only once the commit is done."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from volsched.cache.errors import StoreError
from volsched.cache.store import Store
from volsched.cache.store.group_commit import EntryToOpen, GroupCommit


def entry(pod: str) -> EntryToOpen:
    return EntryToOpen(pod, "n1", "{}", "open")


class Recorder:
    """A writer that records its batches and can be held or made to fail."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.closed: list[int] = []
        self.gate = asyncio.Event()
        self.gate.set()
        self.failure: Exception | None = None
        self.next_id = 1

    async def write(self, entries: list[EntryToOpen]) -> list[int]:
        await self.gate.wait()
        self.batches.append([e.pod for e in entries])
        if self.failure is not None:
            raise self.failure
        ids = list(range(self.next_id, self.next_id + len(entries)))
        self.next_id += len(entries)
        return ids

    async def close(self, entry_id: int) -> None:
        self.closed.append(entry_id)


async def test_intents_arriving_during_a_write_share_the_next_one() -> None:
    recorder = Recorder()
    commit = GroupCommit(recorder.write, recorder.close)
    recorder.gate.clear()
    first = asyncio.create_task(commit.open(entry("a")))
    await asyncio.sleep(0)
    rest = [asyncio.create_task(commit.open(entry(name))) for name in "bcd"]
    await asyncio.sleep(0)
    recorder.gate.set()
    ids = await asyncio.gather(first, *rest)
    assert recorder.batches == [["a"], ["b", "c", "d"]]
    assert ids == [1, 2, 3, 4]
    await commit.idle()


async def test_a_failed_write_fails_every_caller_of_its_batch() -> None:
    recorder = Recorder()
    recorder.failure = StoreError("database or disk is full")
    commit = GroupCommit(recorder.write, recorder.close)
    results = await asyncio.gather(
        *(commit.open(entry(name)) for name in "ab"), return_exceptions=True
    )
    assert [str(r) for r in results] == ["database or disk is full"] * 2
    await commit.idle()


async def test_a_cancelled_caller_s_entry_is_closed_once_written() -> None:
    recorder = Recorder()
    commit = GroupCommit(recorder.write, recorder.close)
    recorder.gate.clear()
    waiting = asyncio.create_task(commit.open(entry("a")))
    kept = asyncio.create_task(commit.open(entry("b")))
    await asyncio.sleep(0)
    waiting.cancel()
    recorder.gate.set()
    assert await kept == 2
    with pytest.raises(asyncio.CancelledError):
        await waiting
    await commit.idle()
    assert recorder.closed == [1]


async def test_the_store_commits_concurrent_intents_durably(tmp_path: Path) -> None:
    store, _ = await Store.open(str(tmp_path / "volsched.db"))
    try:
        ids = await asyncio.gather(
            *(store.journal_open(f"ns/p{i}", "n1", {"pod": f"ns/p{i}"}) for i in range(20))
        )
        assert len(set(ids)) == 20
        pending = await store.journal_pending()
        assert sorted(entry.pod for entry in pending) == sorted(f"ns/p{i}" for i in range(20))
        # Each caller got the id of its own row, whatever batch it went in.
        by_id = {entry.id: entry.pod for entry in pending}
        assert [by_id[entry_id] for entry_id in ids] == [f"ns/p{i}" for i in range(20)]
    finally:
        await store.close()
