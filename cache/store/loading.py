"""Reading the whole store back at a warm start: one snapshot, one pass per table.

Bodies come back with a plain ``SELECT kind, key, body`` and are decoded off the event
loop. Decoding is most of the cost (measured, 50,000 objects of ~1.3 KB on 2 cores:
0.14 s to fetch, 0.6 s to decode, see bench/store_warm_load.py).
"""

from __future__ import annotations

import asyncio
import gc
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, Table, select
from sqlalchemy.exc import OperationalError, SQLAlchemyError
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from volsched.cache.errors import CorruptStore
from volsched.cache.store import journal as journal_sql
from volsched.cache.store import rows
from volsched.cache.store.journal import JournalEntry
from volsched.cache.store.schema import assumed, objects, resume_points, snapshot
from volsched.cache.store.snapshot import Snapshot, SnapshotError, decode

log = logging.getLogger("volsched.store")

Layer = dict[str, dict[str, dict[str, Any]]]  # kind -> key -> raw object
Rows = Sequence[Row[str, str, str]]


@dataclass(frozen=True)
class StoredState:
    """Everything on disk, as ``load()`` found it."""

    objects: Layer
    assumed: Layer
    resume_points: dict[str, str]
    journal: list[JournalEntry]
    # Layer 1 parsed, when a usable snapshot was found (``objects`` is then empty).
    snapshot: Snapshot | None = None


async def read_state(
    engine: AsyncEngine, path: str, *, freeze: bool, snapshot_fingerprint: str | None = None
) -> StoredState:
    """All four tables in one read transaction (so one consistent snapshot).

    Given the fingerprint of the running code, a stored snapshot of the parsed layer 1
    taken by that code is used in place of the object rows; one that is missing, from
    other code or unreadable means the rows are read.

    Raises ``CorruptStore`` for content that cannot be used — an object, assumed or
    resume row that does not decode (see ``rows``), a table missing at the recorded
    revision — so that the caller rebuilds the file instead of crash-looping on it. A
    journal row that does not decode is left out (``Store.journal_pending`` reports and
    removes it): one bad intent must not cost the others.
    """
    try:
        async with engine.connect() as connection:
            parsed = None
            if snapshot_fingerprint is not None:
                parsed = await _read_snapshot(connection, path, snapshot_fingerprint)
            object_rows = [] if parsed else (await connection.execute(_bodies(objects))).all()
            assumed_rows = (await connection.execute(_bodies(assumed))).all()
            points = await connection.execute(_resume_points())
            resume = dict(rows.resume_row(*point) for point in points)
            entries, _ = await journal_sql.select_entries(connection)
        layer1, layer2 = await asyncio.to_thread(_decode_layers, object_rows, assumed_rows, freeze)
    except OperationalError as error:
        if "no such table" in str(error) or "no such column" in str(error):
            raise CorruptStore(f"{path}: {error.orig}") from None
        raise
    except rows.BadRow as error:
        raise CorruptStore(f"{path}: a stored row cannot be decoded: {error}") from None
    return StoredState(
        objects=layer1, assumed=layer2, resume_points=resume, journal=entries, snapshot=parsed
    )


async def read_resume_points(engine: AsyncEngine) -> dict[str, str]:
    """The stored watch resume points on their own, so the watches can open while the
    objects load. Empty when they cannot be read: ``read_state`` is the read that judges
    the file, and says why."""
    try:
        async with engine.connect() as connection:
            found = await connection.execute(_resume_points())
            return dict(rows.resume_row(*point) for point in found)
    except (SQLAlchemyError, rows.BadRow):
        return {}


async def _read_snapshot(
    connection: AsyncConnection, path: str, fingerprint: str
) -> Snapshot | None:
    table = snapshot
    stored = (
        await connection.execute(
            select(table.c.id, table.c.fingerprint, table.c.taken_at, table.c.body).order_by(
                table.c.id
            )
        )
    ).all()
    if not stored:
        return None
    try:
        bodies = [rows.snapshot_row(*row) for row in stored]
    except rows.BadRow as problem:
        log.warning("database %s: snapshot unusable (%s); reading the objects", path, problem)
        return None
    if any(row.fingerprint != fingerprint for row in stored):
        log.info("database %s: its snapshot was taken by other code; reading the objects", path)
        return None
    try:
        return await asyncio.to_thread(_decode_snapshot, bodies)
    except SnapshotError as problem:
        log.warning("database %s: snapshot unusable (%s); reading the objects", path, problem)
        return None


def _decode_snapshot(parts: list[bytes]) -> Snapshot:
    # As for the rows: hundreds of thousands of small objects, no cycles.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return decode(parts)
    finally:
        if was_enabled:
            gc.enable()


def _resume_points() -> Any:
    table = resume_points
    return select(table.c.kind, table.c.resource_version, table.c.updated_at)


def _bodies(table: Table) -> Any:
    return select(table.c.kind, table.c.key, table.c.body)


def _decode_layers(object_rows: Rows, assumed_rows: Rows, freeze: bool) -> tuple[Layer, Layer]:
    # Decoding builds millions of dicts and lists and no cycles. The cyclic collector,
    # run every few hundred allocations over an ever larger young generation, would take
    # three quarters of the time (measured, 50,000 objects: 2.4 s instead of 0.6 s), and
    # its first pass after the decode another 0.4 s; freezing spares that pass too.
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        return _decode("objects", object_rows), _decode("assumed", assumed_rows)
    finally:
        if freeze:
            gc.freeze()
        if was_enabled:
            gc.enable()


def _decode(table: str, stored: Rows) -> Layer:
    layer: Layer = {}
    for kind, key, decoded in rows.object_rows(table, stored):
        by_key = layer.get(kind)
        if by_key is None:
            by_key = layer[kind] = {}
        by_key[key] = decoded
    return layer
