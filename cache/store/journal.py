"""The binding journal: one row per binding cycle in flight.

A binding cycle writes its intent (pod, node, PV prebinds, PVC annotations, replica
placements — whatever the binder needs to finish or undo it) before its first API write,
updates it as it goes, and deletes it once the pod is bound or rolled back. What is left
at start are cycles a crash interrupted; the daemon finishes or rolls back each.

These statements run on the journal's own engine (``synchronous=FULL``) and commit before
they return: the API write that follows an intent must never be ahead of it on disk.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import insert, select, update
from sqlalchemy.ext.asyncio import AsyncConnection

from volsched.cache.store import rows
from volsched.cache.store.schema import journal

OPEN = "open"


@dataclass(frozen=True)
class JournalEntry:
    id: int
    pod: str
    node: str
    intent: dict[str, Any]
    state: str
    created_at: float
    updated_at: float


def encode_intent(intent: Any) -> str:
    return json.dumps(intent, separators=(",", ":"), ensure_ascii=False)


async def insert_entries(
    connection: AsyncConnection, rows: list[tuple[str, str, str, str]], now: float
) -> list[int]:
    """Insert (pod, node, intent, state) rows in one statement; their ids, in order.

    Two round trips to SQLite's thread whatever the number of rows (one per row let a
    burst of bindings outpace the writer). Inside the caller's write transaction nothing
    else inserts, and AUTOINCREMENT gives each new row the next id, so the last ``n`` ids
    are these rows, in the order given.
    """
    if not rows:
        return []
    await connection.execute(
        insert(journal),
        [
            {
                "pod": pod,
                "node": node,
                "intent": intent,
                "state": state,
                "created_at": now,
                "updated_at": now,
            }
            for pod, node, intent, state in rows
        ],
    )
    newest = await connection.execute(
        select(journal.c.id).order_by(journal.c.id.desc()).limit(len(rows))
    )
    ids = sorted(int(entry_id) for (entry_id,) in newest)
    if len(ids) != len(rows) or ids[-1] - ids[0] != len(rows) - 1:
        raise RuntimeError("SQLite did not give the journal entries consecutive ids")
    return ids


async def update_entry(
    connection: AsyncConnection, entry_id: int, state: str | None, intent: str | None, now: float
) -> bool:
    values: dict[str, Any] = {"updated_at": now}
    if state is not None:
        values["state"] = state
    if intent is not None:
        values["intent"] = intent
    result = await connection.execute(
        update(journal).where(journal.c.id == entry_id).values(values)
    )
    return result.rowcount > 0


async def select_entries(
    connection: AsyncConnection,
) -> tuple[list[JournalEntry], list[tuple[int | None, str]]]:
    """The entries, oldest first, and the rows that do not decode: (id, why)."""
    result = await connection.execute(select(journal).order_by(journal.c.id))
    entries: list[JournalEntry] = []
    unreadable: list[tuple[int | None, str]] = []
    for row in result:
        try:
            entries.append(JournalEntry(*rows.journal_row(row)))
        except rows.BadRow as problem:
            entry_id = row.id if isinstance(row.id, int) else None
            unreadable.append((entry_id, str(problem)))
    return entries, unreadable


async def open_ids(connection: AsyncConnection) -> set[int]:
    """The ids of the entries in the journal (cheap: no intent is read)."""
    return {int(entry_id) for (entry_id,) in await connection.execute(select(journal.c.id))}
