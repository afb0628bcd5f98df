"""Journal entries opened by concurrent binding cycles, written together.

Opening an intent is the one durable write of a binding cycle (``synchronous=FULL``: an
fsync). One transaction per intent, each behind the store's single write lock, made
bindings queue behind each other — and behind every round trip to SQLite's thread, which
waits its turn while the scheduling cycle holds the interpreter. Here every intent that
arrives while a write is in progress waits for the next one, and that one writes them
all: one transaction, one statement (``journal.insert_entries``) and one fsync for the
lot, each caller getting its own entry id once the commit is done (never before: the
caller's first API write must find its intent on disk).

A caller that is cancelled while waiting (leadership lost, shutdown) may still have its
entry written; nobody would close it, so it is closed here at once.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field


@dataclass(frozen=True, slots=True)
class EntryToOpen:
    pod: str
    node: str
    intent: str
    state: str


@dataclass(slots=True)
class _Waiting:
    entry: EntryToOpen
    opened: asyncio.Future[int] = field(
        default_factory=lambda: asyncio.get_running_loop().create_future()
    )


class GroupCommit:
    def __init__(
        self,
        write: Callable[[list[EntryToOpen]], Awaitable[list[int]]],
        close: Callable[[int], Awaitable[None]],
    ) -> None:
        self._write = write
        self._close = close
        self._waiting: list[_Waiting] = []
        self._writer: asyncio.Task[None] | None = None

    async def open(self, entry: EntryToOpen) -> int:
        """The entry's id, once it is committed with whatever else was waiting."""
        waiting = _Waiting(entry)
        self._waiting.append(waiting)
        if self._writer is None or self._writer.done():
            self._writer = asyncio.get_running_loop().create_task(
                self._write_all(), name="volsched-journal-group-commit"
            )
        return await waiting.opened

    async def idle(self) -> None:
        """Return once nothing waits to be written (before the store closes)."""
        while self._writer is not None and not self._writer.done():
            await asyncio.wait([self._writer])

    async def _write_all(self) -> None:
        while self._waiting:
            batch, self._waiting = self._waiting, []
            try:
                ids = await self._write([waiting.entry for waiting in batch])
            except Exception as error:  # a StoreError: every caller of this batch sees it
                for waiting in batch:
                    if not waiting.opened.done():
                        waiting.opened.set_exception(error)
                continue
            orphans = []
            for waiting, entry_id in zip(batch, ids, strict=True):
                if waiting.opened.done():  # its caller was cancelled meanwhile
                    orphans.append(entry_id)
                else:
                    waiting.opened.set_result(entry_id)
            for entry_id in orphans:
                await self._close(entry_id)
