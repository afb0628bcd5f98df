"""Writing one batch of queued writes in one transaction.

Per batch, in this order: each relisted kind is emptied and refilled, then the per-key
puts and deletes of both layers, then the resume points, then the deletes of journal
entries whose close had to wait (a full disk). A batch that touches an object also
deletes the snapshot of the parsed objects, which no longer mirrors them. All in one
transaction, so a resume point on disk is never ahead of the objects it covers, and a
relist is never half applied. Every statement is an executemany over the whole batch.

Every write here is idempotent (upserts, deletes, whole-kind replaces), so a batch whose
outcome is unknown (the commit was interrupted) is simply written again.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Mapping
from typing import Any

import orjson
from sqlalchemy import Table, bindparam, delete, insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from volsched.cache.store.pending import Ops, PendingWrites
from volsched.cache.store.schema import assumed, journal, objects, resume_points, snapshot

log = logging.getLogger("volsched.store")

# Objects of a relist serialized between two yields to the event loop (~10 ms of work).
SERIALIZE_SLICE = 500


def dumps(raw: Mapping[str, Any]) -> str:
    """Compact JSON text, as stored (UTF-8, nothing escaped that need not be).

    orjson: every object the watches deliver is stored, and the standard library's
    encoder was a visible share of the daemon's CPU per pod. What orjson refuses (an
    integer past 64 bits, a lone surrogate: never in what the API server sends, but
    possible in an object read back from an old file) is written as before."""
    try:
        return orjson.dumps(raw).decode()
    except TypeError:  # orjson.JSONEncodeError is a TypeError
        return json.dumps(raw, separators=(",", ":"), ensure_ascii=False)


async def serialize_relists(batch: PendingWrites) -> dict[str, list[dict[str, str]]]:
    """The rows of each relisted kind, serialized in slices so the loop keeps running.

    An object that cannot be serialized (not JSON: a bug upstream) is logged and left
    out rather than failing every flush from now on.
    """
    rows_by_kind: dict[str, list[dict[str, str]]] = {}
    for kind, objects_of_kind in batch.replaced.items():
        rows: list[dict[str, str]] = []
        for count, (key, raw) in enumerate(objects_of_kind.items(), start=1):
            try:
                body = raw if isinstance(raw, str) else dumps(raw)
                rows.append({"kind": kind, "key": key, "body": body})
            except (TypeError, ValueError) as error:
                log.error("not storing %s %s from a relist: not JSON: %s", kind, key, error)
            if count % SERIALIZE_SLICE == 0:
                await asyncio.sleep(0)
        rows_by_kind[kind] = rows
    return rows_by_kind


async def write_batch(
    connection: AsyncConnection,
    batch: PendingWrites,
    relists: Mapping[str, list[dict[str, str]]],
    now: float,
) -> int:
    """Write a batch inside the caller's transaction; the number of rows touched."""
    written = 0
    if relists or batch.objects:
        # The snapshot mirrors the objects as they were: any change to them ends it.
        await connection.execute(delete(snapshot))
    for kind, rows in relists.items():
        await connection.execute(delete(objects).where(objects.c.kind == kind))
        if rows:
            await connection.execute(insert(objects), rows)
        written += len(rows)
    written += await _write_ops(connection, objects, batch.objects)
    written += await _write_ops(connection, assumed, batch.assumed)
    if batch.resume_points:
        statement = sqlite_insert(resume_points)
        statement = statement.on_conflict_do_update(
            index_elements=[resume_points.c.kind],
            set_={
                "resource_version": statement.excluded.resource_version,
                "updated_at": statement.excluded.updated_at,
            },
        )
        await connection.execute(
            statement,
            [
                {"kind": kind, "resource_version": version, "updated_at": now}
                for kind, version in batch.resume_points.items()
            ],
        )
        written += len(batch.resume_points)
    if batch.journal_closes:
        await connection.execute(
            delete(journal).where(journal.c.id == bindparam("entry_id")),
            [{"entry_id": entry_id} for entry_id in sorted(batch.journal_closes)],
        )
        written += len(batch.journal_closes)
    return written


async def _write_ops(connection: AsyncConnection, table: Table, ops: Ops) -> int:
    puts: list[dict[str, str]] = []
    deletes: list[dict[str, str]] = []
    for kind, by_key in ops.items():
        for key, body in by_key.items():
            if body is None:
                deletes.append({"deleted_kind": kind, "deleted_key": key})
            else:
                puts.append({"kind": kind, "key": key, "body": body})
    if puts:
        statement = sqlite_insert(table)
        statement = statement.on_conflict_do_update(
            index_elements=[table.c.kind, table.c.key], set_={"body": statement.excluded.body}
        )
        await connection.execute(statement, puts)
    if deletes:
        await connection.execute(
            delete(table).where(
                table.c.kind == bindparam("deleted_kind"), table.c.key == bindparam("deleted_key")
            ),
            deletes,
        )
    return len(puts) + len(deletes)
