"""The binding journal's entries as the store keeps them: opened durably (intents opened
at the same time share one transaction, see ``group_commit``), updated durably, closed
with the next write-behind flush, and read back at start with the rows that cannot be
decoded skipped.

``open_ids`` is the store's record of the entries open as far as it knows (a close that
waits for the flush is not): the journal's depth, and what makes a second close a no-op.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from volsched.cache.errors import StoreError
from volsched.cache.store import journal as journal_sql
from volsched.cache.store.group_commit import EntryToOpen, GroupCommit
from volsched.cache.store.health import store_error
from volsched.cache.store.journal import JournalEntry
from volsched.cache.store.write_behind import WriteBehind

log = logging.getLogger("volsched.store")

# The store's durable write: a transaction on the journal's engine, under the write
# lock, that records whether writes work (``DurableWrites.transaction``).
DurableWrite = Callable[[str], contextlib.AbstractAsyncContextManager[AsyncConnection]]


class JournalEntries:
    """See the module docstring; the store checks it is open before each call."""

    def __init__(
        self,
        path: Path,
        engine: Callable[[], AsyncEngine],
        durable_write: DurableWrite,
        write_lock: asyncio.Lock,
        writes: WriteBehind,
        clock: Callable[[], float],
        open_ids: Iterable[int],
    ) -> None:
        self.path = path
        self._engine = engine
        self._durable_write = durable_write
        self._write_lock = write_lock
        self._writes = writes
        self._clock = clock
        self.open_ids = set(open_ids)
        self._opening = GroupCommit(self._insert, self.close)

    async def open(self, pod: str, node: str, intent: Mapping[str, Any], state: str) -> int:
        body = journal_sql.encode_intent(intent)
        return await self._opening.open(EntryToOpen(pod, node, body, state))

    async def _insert(self, entries: list[EntryToOpen]) -> list[int]:
        values = [(entry.pod, entry.node, entry.intent, entry.state) for entry in entries]
        async with self._durable_write("opening a journal entry") as connection:
            ids = await journal_sql.insert_entries(connection, values, self._clock())
        self.open_ids.update(ids)
        return ids

    async def update(
        self, entry_id: int, state: str | None, intent: Mapping[str, Any] | None
    ) -> None:
        if entry_id in self._writes.pending.journal_closes:
            raise StoreError(f"{self.path}: no open journal entry {entry_id}")
        body = None if intent is None else journal_sql.encode_intent(intent)
        async with self._durable_write("updating a journal entry") as connection:
            found = await journal_sql.update_entry(connection, entry_id, state, body, self._clock())
        if not found:
            raise StoreError(f"{self.path}: no open journal entry {entry_id}")

    async def close(self, entry_id: int) -> None:
        """Not durable, and no transaction of its own: the delete goes with the next
        write-behind flush (a second or less), as it always did while writes failed. A
        close lost to a crash leaves an intent whose pod is bound or whose writes were
        undone, which recovery finds already resolved; only opening must be durable.
        A transaction per close, behind the store's one write lock, held every binding
        cycle's end (and the intents waiting to open) in a queue during a burst."""
        if entry_id not in self.open_ids:
            return
        self.open_ids.discard(entry_id)
        self._writes.pending.close_journal_entry(entry_id)
        self._writes.queued()

    async def pending(self) -> list[JournalEntry]:
        """Open entries, oldest first (a closed one whose row waits for a flush is not).

        A row that does not decode (see ``rows``) is left out, logged with why, and
        removed with the next flush: nothing can finish or undo an intent that cannot be
        read, and it must not stop the others from being recovered. (What it had
        written is still recorded in the API objects, where recovery finds it.)"""
        # Under the write lock: a flush deleting closed entries is either done or undone.
        async with self._write_lock:
            try:
                async with self._engine().connect() as connection:
                    entries, unreadable = await journal_sql.select_entries(connection)
            except SQLAlchemyError as error:
                raise store_error(self.path, "reading the journal", error) from None
            closing = set(self._writes.pending.journal_closes)
        for entry_id, problem in unreadable:
            log.warning("database %s: %s; skipping and removing the entry", self.path, problem)
            if entry_id is not None and entry_id not in closing:
                self._writes.pending.close_journal_entry(entry_id)
                self._writes.queued()
        entries = [entry for entry in entries if entry.id not in closing]
        self.open_ids = {entry.id for entry in entries}
        return entries

    async def idle(self) -> None:
        """Wait until no group of intents is being opened."""
        await self._opening.idle()
