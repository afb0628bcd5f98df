"""Keeping the snapshot (see ``snapshot``) in the file: one transaction, a row per part.

A snapshot is an optimisation, never a reason to fail a stop: when the file cannot be
written, nothing of it is kept and the failure is a log line.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

import sqlalchemy as sa

from volsched.cache.errors import StoreError
from volsched.cache.store import schema
from volsched.cache.store.durable_writes import DurableWrites

log = logging.getLogger("volsched.store")


async def write_snapshot(
    durable: DurableWrites, clock: Callable[[], float], fingerprint: str, parts: Iterable[bytes]
) -> int:
    """Replace the stored snapshot with ``parts``, each part made only when its row is
    written. The bytes written, or 0 (and nothing written) when writes fail."""
    table = schema.snapshot
    written = 0
    try:
        async with durable.transaction("writing the cache snapshot") as connection:
            await connection.execute(sa.delete(table))
            taken_at = clock()
            for part, body in enumerate(parts):
                await connection.execute(
                    sa.insert(table).values(
                        id=part, fingerprint=fingerprint, taken_at=taken_at, body=body
                    )
                )
                written += len(body)
    except StoreError as error:
        log.warning("%s", error)
        return 0
    return written
