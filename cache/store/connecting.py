"""Engines for the store file, with the same per-connection settings everywhere.

Every connection, async (the daemon) or sync (migrations), gets on connect:

- ``journal_mode=WAL``: readers never block the writer, and a commit is one append;
- ``synchronous=NORMAL`` for the cache (a crash can lose at most the last flushes,
  which the next watch or relist rewrites) or ``FULL`` for the journal (an intent must
  survive a power cut too, because the API writes that follow it do);
- ``busy_timeout``: wait for a lock instead of failing at once;
- ``foreign_keys=ON``;
- text read through ``text.read_text``: a stored value that is not UTF-8 comes back as
  ``NotUtf8`` for the row checks to name, instead of failing the whole fetch.

The sqlite3 driver (and aiosqlite over it) starts transactions only before DML, so a
multi-statement read is not one snapshot and DDL runs outside any transaction. Following
SQLAlchemy's documented recipe, the driver's own BEGIN is switched off and SQLAlchemy
emits ``BEGIN`` wherever it begins a transaction.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any, Literal

from sqlalchemy import Connection, Engine, create_engine, event
from sqlalchemy.engine import URL
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine
from sqlalchemy.pool import NullPool

from volsched.cache.store.text import read_text

log = logging.getLogger("volsched.store")

BUSY_TIMEOUT_MS = 5000
Synchronous = Literal["NORMAL", "FULL"]


def _install_settings(engine: Engine, path: Path, synchronous: Synchronous) -> None:
    pragmas = (
        f"PRAGMA synchronous={synchronous}",
        f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}",
        "PRAGMA foreign_keys=ON",
    )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, record: Any) -> None:
        dbapi_connection.isolation_level = None
        # The driver's own connection: sqlite3's, or aiosqlite's, which passes it on.
        record.driver_connection.text_factory = read_text
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute("PRAGMA journal_mode=WAL")
            row = cursor.fetchone()
            if row is None or str(row[0]).lower() != "wal":
                # Some filesystems (network mounts) cannot hold the WAL's shared memory.
                log.warning("%s: SQLite refused WAL mode (journal_mode=%s)", path, row)
            for pragma in pragmas:
                cursor.execute(pragma)
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Connection) -> None:
        connection.exec_driver_sql("BEGIN")


def create_store_engine(path: Path, synchronous: Synchronous = "NORMAL") -> AsyncEngine:
    """The async engine the daemon uses (aiosqlite; one worker thread per connection)."""
    url = URL.create("sqlite+aiosqlite", database=str(path))
    engine = create_async_engine(url, pool_size=2, max_overflow=2)
    _install_settings(engine.sync_engine, path, synchronous)
    return engine


def create_sync_engine(path: Path) -> Engine:
    """A synchronous engine (stdlib sqlite3) for migrations; no pooling, closed on use."""
    url = URL.create("sqlite", database=str(path))
    engine = create_engine(url, poolclass=NullPool)
    _install_settings(engine, path, "FULL")
    return engine
