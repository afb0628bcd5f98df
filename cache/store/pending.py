"""The write-behind queue: the latest write per key, waiting for the next flush.

Pure bookkeeping, no I/O. Writes to one key collapse to the last one (a put after a put,
a delete after a put), so a burst of events for one object costs one row at the flush.
A relist (``replace_kind``) supersedes every queued write of that kind; writes queued
after it apply on top of it, in the same transaction. Journal entries whose close could
not be written at once (a full disk) wait here too, and are deleted with the next batch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Compact JSON of the object to write, or None to delete the key.
Body = str | None
Ops = dict[str, dict[str, Body]]  # kind -> key -> body


# A relisted object as the store is given it: decoded, or already its JSON text.
RelistBody = str | Mapping[str, Any]


class PendingWrites:
    def __init__(self) -> None:
        self.objects: Ops = {}
        self.assumed: Ops = {}
        # kind -> every object of that kind after a relist (serialized at the flush)
        self.replaced: dict[str, Mapping[str, RelistBody]] = {}
        self.resume_points: dict[str, str] = {}
        self.journal_closes: set[int] = set()  # ids of closed journal entries to delete
        self._size = 0

    def __len__(self) -> int:
        """Rows the next flush writes (a relist counts each of its objects)."""
        return self._size

    def clear(self) -> None:
        self.objects.clear()
        self.assumed.clear()
        self.replaced.clear()
        self.resume_points.clear()
        self.journal_closes.clear()
        self._size = 0

    def set_object(self, kind: str, key: str, body: Body) -> None:
        self._set(self.objects, kind, key, body)

    def set_assumed(self, kind: str, key: str, body: Body) -> None:
        self._set(self.assumed, kind, key, body)

    def set_resume_point(self, kind: str, resource_version: str) -> None:
        if kind not in self.resume_points:
            self._size += 1
        self.resume_points[kind] = resource_version

    def close_journal_entry(self, entry_id: int) -> None:
        if entry_id not in self.journal_closes:
            self._size += 1
        self.journal_closes.add(entry_id)

    def replace_kind(
        self, kind: str, objects: Mapping[str, RelistBody], resource_version: str
    ) -> None:
        superseded = self.objects.pop(kind, None)
        if superseded is not None:
            self._size -= len(superseded)
        previous = self.replaced.get(kind)
        if previous is not None:
            self._size -= len(previous)
        self.replaced[kind] = objects
        self._size += len(objects)
        self.set_resume_point(kind, resource_version)

    def _set(self, ops: Ops, kind: str, key: str, body: Body) -> None:
        by_key = ops.get(kind)
        if by_key is None:
            by_key = ops[kind] = {}
        if key not in by_key:
            self._size += 1
        by_key[key] = body

    def take(self) -> PendingWrites:
        """Everything queued so far, as a batch; this queue is left empty."""
        batch = PendingWrites()
        batch.objects, self.objects = self.objects, batch.objects
        batch.assumed, self.assumed = self.assumed, batch.assumed
        batch.replaced, self.replaced = self.replaced, batch.replaced
        batch.resume_points, self.resume_points = self.resume_points, batch.resume_points
        batch.journal_closes, self.journal_closes = self.journal_closes, batch.journal_closes
        batch._size, self._size = self._size, 0
        return batch

    def restore(self, older: PendingWrites) -> None:
        """Put back a batch that failed to flush, beneath what was queued since."""
        for kind, objects in older.replaced.items():
            if kind not in self.replaced:
                self.replaced[kind] = objects
        for kind, ops in older.objects.items():
            if kind in self.replaced and self.replaced[kind] is not older.replaced.get(kind):
                continue  # a relist queued since supersedes these writes
            self.objects[kind] = {**ops, **self.objects.get(kind, {})}
        for kind, ops in older.assumed.items():
            self.assumed[kind] = {**ops, **self.assumed.get(kind, {})}
        for kind, version in older.resume_points.items():
            self.resume_points.setdefault(kind, version)
        self.journal_closes |= older.journal_closes
        self._size = (
            sum(len(ops) for ops in self.objects.values())
            + sum(len(ops) for ops in self.assumed.values())
            + sum(len(objects) for objects in self.replaced.values())
            + len(self.resume_points)
            + len(self.journal_closes)
        )
