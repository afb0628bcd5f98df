"""The store's durable writes: one transaction at a time, on the journal's engine
(``synchronous=FULL``), under the store's one write lock, with its outcome recorded in
``WriteHealth``.

Journal entries, the file's own facts and the snapshot are written this way. A failure
raises ``StoreError`` (``StoreFull`` for a full disk) and wakes the write-behind flusher,
which then checks with backoff, through ``check_writable``, when a journal write would
work again; a success may end the flusher's backoff at once.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection

from volsched.cache.store import schema
from volsched.cache.store.engines import StoreEngines
from volsched.cache.store.health import WriteHealth, store_error
from volsched.cache.store.write_behind import JOURNAL, WriteBehind

# The meta key a write check inserts and deletes in one transaction.
WRITE_CHECK_KEY = "write-check"


class DurableWrites:
    """See the module docstring."""

    def __init__(
        self,
        engines: StoreEngines,
        write_lock: asyncio.Lock,
        health: WriteHealth,
        writes: WriteBehind,
        clock: Callable[[], float],
    ) -> None:
        self._engines = engines
        self._write_lock = write_lock
        self._health = health
        self._writes = writes
        self._clock = clock

    @contextlib.asynccontextmanager
    async def transaction(self, doing: str) -> AsyncIterator[AsyncConnection]:
        """A transaction committed when the block ends; ``doing`` names it in errors."""
        async with self._write_lock:
            try:
                async with self._engines.journal.begin() as connection:
                    yield connection
            except SQLAlchemyError as error:
                failure = store_error(self._engines.path, doing, error)
                self._health.failed(JOURNAL, failure)
                self._writes.journal_failed()
                raise failure from None
        self._writes.wrote(JOURNAL)

    async def check_writable(self) -> None:
        """A journal write failed and none has worked since: commit a write that leaves
        the file as it was, to learn whether one would work now."""
        async with self.transaction("checking the database can be written") as connection:
            await connection.execute(
                sa.insert(schema.meta).values(key=WRITE_CHECK_KEY, value=str(self._clock()))
            )
            await connection.execute(
                sa.delete(schema.meta).where(schema.meta.c.key == WRITE_CHECK_KEY)
            )
