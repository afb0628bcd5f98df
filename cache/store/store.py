"""The store: both cache layers, watch resume points and the binding journal in one
SQLite file, so a restarted daemon is ready from disk before its first watch event.

Two kinds of write, with two promises:

- **Cache writes** (``put_object``, ``delete_object``, ``replace_kind``, ``put_assumed``,
  ``delete_assumed``, ``set_resume_point``) are plain calls that only queue: the latest
  write per key waits in memory and a background task flushes the queue in one
  transaction at most ``flush_interval_seconds`` after the first queued write, or at once
  when more than ``max_pending`` rows wait (see ``write_behind``). A crash loses at most
  that window, which the next watch or relist rewrites. ``flush()`` forces a flush;
  ``close()`` flushes.
- **Journal writes** (``journal_open``, ``journal_update``, ``journal_close``) are awaited
  and committed, with ``synchronous=FULL``, before they return.

When the disk is full (``StoreFull``) or the file cannot be written for another reason,
reads go on working and nothing is lost: queued cache writes stay queued and are retried
with backoff, a journal close waits with them, and ``journal_open`` raises, so no binding
starts without its intent on disk. ``write_problem`` says why writes fail, until the
first writes that work again (see ``volsched.cache.store.health``).

Call everything from the event loop's thread. The store serializes ``put_*`` objects at
the call (later changes to them are not stored); ``replace_kind`` keeps the objects it is
given (or their JSON text) and serializes them at the flush, in slices that let the loop run, so a relist of
tens of thousands of objects never stalls the loop — do not mutate them afterwards.

``Store`` is the public face, and keeps the file's life: open, load, rebuild, close.
What it stores belongs to parts it composes: the file's two engines (``engines``), the
cache's rows — objects, assumptions, resume points (``cache_writes``) — queued for the
write-behind flush (``write_behind``), the durable writes (``durable_writes``), the
binding journal's entries (``journal_entries``), the file's own facts and cluster
identity (``file_facts``), the snapshot (``snapshot_writing``) and the figures for
metrics (``stats``).
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from sqlalchemy.exc import SQLAlchemyError

from volsched.cache.errors import StoreError
from volsched.cache.store import journal as journal_sql
from volsched.cache.store.cache_writes import CacheWrites
from volsched.cache.store.durable_writes import DurableWrites
from volsched.cache.store.engines import StoreEngines
from volsched.cache.store.file_facts import FileFacts
from volsched.cache.store.health import WriteHealth, store_error
from volsched.cache.store.journal import JournalEntry
from volsched.cache.store.journal_entries import JournalEntries
from volsched.cache.store.loading import StoredState, read_resume_points, read_state
from volsched.cache.store.opening import OpenResult, move_aside, prepare_file
from volsched.cache.store.pending import RelistBody
from volsched.cache.store.snapshot_writing import write_snapshot
from volsched.cache.store.stats import StoreStats, gather_stats
from volsched.cache.store.write_behind import WriteBehind

log = logging.getLogger("volsched.store")


class Store:
    """Open with ``await Store.open(path)``; see the module docstring for the promises."""

    def __init__(
        self,
        engines: StoreEngines,
        *,
        flush_interval_seconds: float,
        max_pending: int,
        clock: Callable[[], float],
        on_flush: Callable[[StoreStats], None] | None,
        open_entries: Iterable[int],
    ) -> None:
        self.path = engines.path
        self._engines = engines
        self._clock = clock
        self._on_flush = on_flush
        self._closed = False
        write_lock = asyncio.Lock()  # one writer at a time: flushes and durable writes
        self._health = WriteHealth(self.path)
        self._writes = WriteBehind(
            self.path,
            lambda: engines.cache,
            write_lock,
            self._health,
            flush_interval_seconds=flush_interval_seconds,
            max_pending=max_pending,
            clock=clock,
            check_journal=lambda: self._durable.check_writable(),
            flushed=self._flushed,
        )
        self._durable = DurableWrites(engines, write_lock, self._health, self._writes, clock)
        self._writes.start()
        self._rows = CacheWrites(self._writes)
        self._journal = JournalEntries(
            self.path,
            lambda: engines.journal,
            self._durable.transaction,
            write_lock,
            self._writes,
            clock,
            open_entries,
        )
        self._facts = FileFacts(engines, self._durable, self._writes, self._journal)

    @classmethod
    async def open(
        cls,
        path: str | os.PathLike[str],
        *,
        flush_interval_seconds: float = 0.2,
        max_pending: int = 5000,
        clock: Callable[[], float] = time.time,
        on_flush: Callable[[StoreStats], None] | None = None,
    ) -> tuple[Store, OpenResult]:
        """Open (creating, migrating or rebuilding as needed) the store file at ``path``.

        Never raises for a bad file — that is moved aside and rebuilt, as the result
        says; raises ``StoreError`` when the file or its directory cannot be written.
        """
        if flush_interval_seconds <= 0:
            raise ValueError("flush_interval_seconds must be positive")
        if max_pending < 1:
            raise ValueError("max_pending must be at least 1")
        file = Path(path).absolute()
        prepared = await asyncio.to_thread(prepare_file, file, clock)
        engines = StoreEngines(file)
        try:
            async with engines.journal.connect() as connection:
                open_entries = await journal_sql.open_ids(connection)
        except BaseException as error:
            await engines.dispose()
            if isinstance(error, SQLAlchemyError):
                raise store_error(file, "opening", error) from None
            raise
        store = cls(
            engines,
            flush_interval_seconds=flush_interval_seconds,
            max_pending=max_pending,
            clock=clock,
            on_flush=on_flush,
            open_entries=open_entries,
        )
        return store, prepared.result

    # -- reading ------------------------------------------------------------------------

    async def load(
        self, *, freeze: bool = True, snapshot_fingerprint: str | None = None
    ) -> StoredState:
        """Everything stored, in one read snapshot (queued writes are flushed first).

        The decode runs off the event loop with the cyclic garbage collector paused, and
        with ``freeze`` (the default) ends with ``gc.freeze()``: everything the process
        holds by then — the loaded objects above all — moves to the collector's
        permanent generation, so no later collection walks a heap of tens of thousands
        of objects again. Reference counting still frees them when they are replaced.
        Right for a daemon's warm start; pass ``freeze=False`` to leave the collector be.
        """
        self._check_open()
        await self.flush()
        try:
            state = await read_state(
                self._engines.cache,
                str(self.path),
                freeze=freeze,
                snapshot_fingerprint=snapshot_fingerprint,
            )
        except SQLAlchemyError as error:
            raise store_error(self.path, "loading", error) from None
        self._journal.open_ids = {entry.id for entry in state.journal}
        return state

    async def peek_resume_points(self) -> dict[str, str]:
        """The stored watch resume points, read on their own so the watches can open
        while the objects load. Empty when they cannot be read: ``load`` is the read that
        judges the file, and says why."""
        self._check_open()
        await self.flush()
        return await read_resume_points(self._engines.cache)

    @property
    def stats(self) -> StoreStats:
        return gather_stats(self._writes, self._journal, self._health)

    @property
    def write_problem(self) -> str | None:
        """None while writes succeed; else why they fail (a full disk above all) and
        for how long. Cleared by the first flush and journal write that work again."""
        return self._health.problem

    @property
    def is_open(self) -> bool:
        """False once ``close()`` or ``abort()`` has begun."""
        return not self._closed

    # -- cache writes: queued, never waiting ---------------------------------------------

    def put_object(self, kind: str, key: str, raw: Mapping[str, Any]) -> None:
        """Layer 1: the latest object the API server sent (see ``CacheWrites``)."""
        self._check_open()
        self._rows.put_object(kind, key, raw)

    def delete_object(self, kind: str, key: str) -> None:
        self._check_open()
        self._rows.delete_object(kind, key)

    def replace_kind(
        self, kind: str, objects: Mapping[str, RelistBody], resource_version: str
    ) -> None:
        """After a relist: exactly these objects of ``kind`` exist (see ``CacheWrites``)."""
        self._check_open()
        self._rows.replace_kind(kind, objects, resource_version)

    def put_assumed(self, kind: str, key: str, raw: Mapping[str, Any]) -> None:
        """Layer 2: what this scheduler assumed for ``kind``/``key``."""
        self._check_open()
        self._rows.put_assumed(kind, key, raw)

    def delete_assumed(self, kind: str, key: str) -> None:
        self._check_open()
        self._rows.delete_assumed(kind, key)

    def set_resume_point(self, kind: str, resource_version: str) -> None:
        """Where the watch of ``kind`` resumes; flushed with (never before) the objects
        queued ahead of it."""
        self._check_open()
        self._rows.set_resume_point(kind, resource_version)

    async def flush(self) -> None:
        """Write everything queued so far; raises ``StoreError`` if it cannot.

        On failure nothing of the batch is written and all of it stays queued."""
        await self._writes.flush()

    # -- journal writes: durable before they return --------------------------------------

    async def journal_open(
        self, pod: str, node: str, intent: Mapping[str, Any], *, state: str = journal_sql.OPEN
    ) -> int:
        """Record a binding cycle's intent; committed when this returns. Its id.

        Intents opened at the same time share one transaction and one fsync (see
        ``group_commit``)."""
        self._check_open()
        return await self._journal.open(pod, node, intent, state)

    async def journal_update(
        self,
        entry_id: int,
        *,
        state: str | None = None,
        intent: Mapping[str, Any] | None = None,
    ) -> None:
        """Record progress of an open entry; raises ``StoreError`` if it is not open."""
        self._check_open()
        await self._journal.update(entry_id, state, intent)

    async def journal_close(self, entry_id: int) -> None:
        """The cycle is over (bound or rolled back). Closing twice is harmless. Not
        durable: the delete goes with the next flush (see ``JournalEntries.close``)."""
        self._check_open()
        await self._journal.close(entry_id)

    async def journal_pending(self) -> list[JournalEntry]:
        """Open entries, oldest first, without those that do not decode (see
        ``JournalEntries.pending``)."""
        self._check_open()
        return await self._journal.pending()

    # -- the file's own facts and the snapshot ----------------------------------------------

    async def read_meta(self, key: str) -> str | None:
        """The fact stored under ``key`` (None: none; "": unreadable, see ``FileFacts``)."""
        self._check_open()
        return await self._facts.read(key)

    async def write_meta(self, key: str, value: str) -> None:
        self._check_open()
        await self._facts.write(key, value)

    async def discard_cluster_state(self) -> None:
        """Forget every object, assumption, resume point, journal entry and fact about the
        file (they belong to another cluster), in one transaction; what was queued is
        dropped too."""
        self._check_open()
        await self._facts.discard_cluster_state()

    async def write_snapshot(self, fingerprint: str, parts: Iterable[bytes]) -> int:
        """Keep ``parts`` (see ``snapshot.py``) as the parsed image of the objects on
        disk, after flushing what is queued. The bytes written, or 0 (and nothing
        written) when writes fail: a snapshot is never a reason to fail a stop."""
        self._check_open()
        await self.flush()
        return await write_snapshot(self._durable, self._clock, fingerprint, parts)

    # -- the file's life ------------------------------------------------------------------

    async def rebuild(self, reason: str) -> str:
        """Move the file aside (for inspection) and start over with an empty one, in
        place: the store object others hold stays valid. Where the old file went."""
        self._check_open()
        await self._writes.stop()
        self._writes.pending.take()
        await self._engines.dispose()
        moved = await asyncio.to_thread(move_aside, self.path, self._clock, reason)
        await asyncio.to_thread(prepare_file, self.path, self._clock)
        self._engines.recreate()
        self._journal.open_ids = set()
        self._writes.start()
        return moved

    async def close(self) -> None:
        """Flush what is queued, then release the file. Idempotent."""
        if self._closed:
            return
        await self._journal.idle()
        self._closed = True
        try:
            await self._writes.stop()
            await self._writes.flush()
        finally:
            await self._engines.dispose()

    async def abort(self) -> None:
        """Release the file without flushing, as a crash would: queued cache writes are
        lost, the journal is not. For a fatal shutdown, and for tests of recovery."""
        if self._closed:
            return
        await self._journal.idle()
        self._closed = True
        try:
            await self._writes.stop()
            self._writes.pending.take()
        finally:
            await self._engines.dispose()

    def _check_open(self) -> None:
        if self._closed:
            raise StoreError(f"{self.path}: the store is closed")

    def _flushed(self) -> None:
        if self._on_flush is not None:
            try:
                self._on_flush(self.stats)
            except Exception:
                log.exception("the store's on_flush callback failed")
