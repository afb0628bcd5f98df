"""The file's own facts (the ``meta`` table): above all the identity of the cluster whose
state the file holds, and forgetting that state when the file turns out to belong to
another cluster.

Facts are written durably (see ``durable_writes``) and read with every row checked: a
fact that cannot be read makes the file's identity unknown, never a crash.
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from sqlalchemy.exc import SQLAlchemyError

from volsched.cache.store import rows, schema
from volsched.cache.store.durable_writes import DurableWrites
from volsched.cache.store.engines import StoreEngines
from volsched.cache.store.health import store_error
from volsched.cache.store.journal_entries import JournalEntries
from volsched.cache.store.write_behind import WriteBehind

log = logging.getLogger("volsched.store")

# Every table that holds one cluster's state, and the facts about it.
CLUSTER_STATE = (
    schema.objects,
    schema.assumed,
    schema.resume_points,
    schema.journal,
    schema.snapshot,
    schema.meta,
)


class FileFacts:
    """See the module docstring; the store checks it is open before each call."""

    def __init__(
        self,
        engines: StoreEngines,
        durable: DurableWrites,
        writes: WriteBehind,
        journal: JournalEntries,
    ) -> None:
        self._engines = engines
        self._durable = durable
        self._writes = writes
        self._journal = journal

    async def read(self, key: str) -> str | None:
        """The value stored under ``key`` (None: none). Every row is read: one that is not
        text, whatever its key, could be this one, so the value is then unknown — ""
        (logged with the row), which matches no identity, and ``discard_cluster_state``
        removes the row."""
        path = self._engines.path
        table = schema.meta
        try:
            async with self._engines.cache.connect() as connection:
                found = (await connection.execute(sa.select(table.c.key, table.c.value))).all()
        except SQLAlchemyError as error:
            raise store_error(path, "reading the file's identity", error) from None
        values: dict[str, str] = {}
        for stored_key, stored_value in found:
            try:
                readable_key, value = rows.meta_row(stored_key, stored_value)
            except rows.BadRow as problem:
                log.warning("database %s: %s; its identity is unknown", path, problem)
                return ""
            values[readable_key] = value
        return values.get(key)

    async def write(self, key: str, value: str) -> None:
        async with self._durable.transaction("recording the file's identity") as connection:
            await connection.execute(sa.delete(schema.meta).where(schema.meta.c.key == key))
            await connection.execute(sa.insert(schema.meta).values(key=key, value=value))

    async def discard_cluster_state(self) -> None:
        """Forget every object, assumption, resume point, journal entry and fact about the
        file (they belong to another cluster), in one transaction; what was queued is
        dropped too."""
        self._writes.pending.clear()
        async with self._durable.transaction("discarding another cluster's state") as connection:
            for table in CLUSTER_STATE:
                await connection.execute(sa.delete(table))
        self._journal.open_ids = set()
