"""The store's figures for metrics, gathered from the parts that keep them: the
write-behind queue (flushes), the journal (its depth) and the write health."""

from __future__ import annotations

from dataclasses import dataclass

from volsched.cache.store.health import WriteHealth
from volsched.cache.store.journal_entries import JournalEntries
from volsched.cache.store.write_behind import WriteBehind


@dataclass(frozen=True)
class StoreStats:
    """Figures for metrics: read ``store.stats``, or pass ``on_flush`` to ``open``."""

    pending: int
    flushes: int
    rows_flushed: int
    last_flush_seconds: float
    flush_errors: int
    last_flush_error: str | None  # why the latest flush failed; None once one succeeds
    journal_depth: int
    writable: bool = True  # False while writes fail (``Store.write_problem`` says why)


def gather_stats(writes: WriteBehind, journal: JournalEntries, health: WriteHealth) -> StoreStats:
    return StoreStats(
        pending=len(writes.pending),
        flushes=writes.flushes,
        rows_flushed=writes.rows_flushed,
        last_flush_seconds=writes.last_flush_seconds,
        flush_errors=writes.flush_errors,
        last_flush_error=writes.last_flush_error,
        journal_depth=len(journal.open_ids),
        writable=health.writable,
    )
