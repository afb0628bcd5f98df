"""The store's write-behind queue and the task that flushes it.

Cache writes only queue (the latest write per key, in ``PendingWrites``); this task
writes the queue in one transaction at most ``flush_interval_seconds`` after the first
queued write, or at once when more than ``max_pending`` rows wait. When a flush fails
nothing of the batch is written and all of it stays queued; the task retries with
backoff (up to ``RETRY_MAX_SECONDS``) until the flush — and, if a journal write failed
too, a journal write — works again (``WriteHealth`` logs the failure and its end).

It shares with the journal the store's one write lock (a flush and a journal write never
overlap) and the store's record of whether writes work.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Awaitable, Callable
from pathlib import Path

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncEngine

from volsched.cache.errors import StoreError
from volsched.cache.store.flushing import serialize_relists, write_batch
from volsched.cache.store.health import WriteHealth, store_error
from volsched.cache.store.pending import PendingWrites

log = logging.getLogger("volsched.store")

# After a failed background flush, wait this long (doubling) before the next attempt.
RETRY_MAX_SECONDS = 5.0
# The two writers ``WriteHealth`` follows.
FLUSH = "flush"
JOURNAL = "journal"


class WriteBehind:
    """The queue, its flusher task and the flush figures; see the module docstring."""

    def __init__(
        self,
        path: Path,
        engine: Callable[[], AsyncEngine],
        write_lock: asyncio.Lock,
        health: WriteHealth,
        *,
        flush_interval_seconds: float,
        max_pending: int,
        clock: Callable[[], float],
        check_journal: Callable[[], Awaitable[None]],
        flushed: Callable[[], None],
    ) -> None:
        self.path = path
        self.pending = PendingWrites()
        self._engine = engine
        self._write_lock = write_lock
        self._health = health
        self._flush_interval_seconds = flush_interval_seconds
        self._max_pending = max_pending
        self._clock = clock
        # Commits a write that leaves the file as it was: does a journal write work?
        self._check_journal = check_journal
        self._flushed = flushed
        self._dirty = asyncio.Event()  # something waits to be flushed
        self._urgent = asyncio.Event()  # more than max_pending waits: flush now
        self._retry_now = asyncio.Event()  # a write worked again: end the flush backoff
        self.flushes = 0
        self.rows_flushed = 0
        self.last_flush_seconds = 0.0
        self.flush_errors = 0
        self.last_flush_error: str | None = None
        self._flusher: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._flusher = asyncio.get_running_loop().create_task(
            self._flush_forever(), name=f"volsched-store-flush:{self.path.name}"
        )

    async def stop(self) -> None:
        """End the flusher task. Under the write lock it is between flushes, never
        inside a transaction."""
        async with self._write_lock:
            if self._flusher is not None:
                self._flusher.cancel()
                await asyncio.wait([self._flusher])

    def queued(self) -> None:
        """Something was queued: flush it soon, or now when too much waits."""
        self._dirty.set()
        if len(self.pending) > self._max_pending:
            self._urgent.set()

    def journal_failed(self) -> None:
        """A journal write failed: the flusher checks, with backoff, when one would work."""
        self._dirty.set()

    def wrote(self, writer: str) -> None:
        self._health.succeeded(writer)
        if not self._health.writable:
            self._retry_now.set()  # there is room again: retry the other writer now

    async def _flush_forever(self) -> None:
        """Flush at most ``flush_interval_seconds`` after the first queued write; while
        writes fail, retry with backoff until the flush and a journal write both work."""
        retry_seconds = self._flush_interval_seconds
        while True:
            await self._dirty.wait()
            if not self._urgent.is_set():
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(self._flush_interval_seconds):
                        await self._urgent.wait()
            try:
                await self.flush()
                if self._health.failing(JOURNAL):
                    await self._check_journal()
            except Exception as error:  # keep flushing whatever went wrong this time
                if not isinstance(error, StoreError):
                    log.exception(
                        "flushing %s failed; retrying in %.1f s", self.path, retry_seconds
                    )
                self._dirty.set()
                self._retry_now.clear()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(retry_seconds):
                        await self._retry_now.wait()
                retry_seconds = min(retry_seconds * 2, RETRY_MAX_SECONDS)
            else:
                retry_seconds = self._flush_interval_seconds

    async def flush(self) -> None:
        """Write everything queued so far in one transaction; raises ``StoreError`` if
        it cannot, with all of it queued again."""
        async with self._write_lock:
            if not len(self.pending):
                self._dirty.clear()
                return
            batch = self.pending.take()
            self._dirty.clear()
            self._urgent.clear()
            try:
                relists = await serialize_relists(batch)
                started = time.perf_counter()
                async with self._engine().begin() as connection:
                    rows = await write_batch(connection, batch, relists, self._clock())
                elapsed = time.perf_counter() - started
            except BaseException as error:
                # Every write in a batch is idempotent: put it back and write it again.
                self.pending.restore(batch)
                self.queued()
                if isinstance(error, SQLAlchemyError):
                    failure = store_error(self.path, "flushing", error)
                    self._note_failure(str(failure))
                    self._health.failed(FLUSH, failure)
                    raise failure from None
                if isinstance(error, Exception):
                    self._note_failure(f"{self.path}: flushing failed: {error!r}")
                raise
        self.wrote(FLUSH)
        self.flushes += 1
        self.last_flush_error = None
        self.rows_flushed += rows
        self.last_flush_seconds = elapsed
        self._flushed()

    def _note_failure(self, message: str) -> None:
        self.flush_errors += 1
        self.last_flush_error = message
