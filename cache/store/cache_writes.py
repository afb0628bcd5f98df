"""The cache's rows as the daemon writes them: layer-1 objects, layer-2 assumptions and
the watch resume points. Each write is serialized at the call (later changes to the
object are not stored) and only queued, the latest per key, for the write-behind flush.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from volsched.cache.store.flushing import dumps
from volsched.cache.store.pending import RelistBody
from volsched.cache.store.write_behind import WriteBehind


class CacheWrites:
    """See the module docstring; the store checks it is open before each call."""

    def __init__(self, writes: WriteBehind) -> None:
        self._writes = writes

    def put_object(self, kind: str, key: str, raw: Mapping[str, Any]) -> None:
        """Layer 1: the latest object the API server sent for ``kind``/``key``."""
        self._writes.pending.set_object(kind, key, dumps(raw))
        self._writes.queued()

    def delete_object(self, kind: str, key: str) -> None:
        self._writes.pending.set_object(kind, key, None)
        self._writes.queued()

    def replace_kind(
        self, kind: str, objects: Mapping[str, RelistBody], resource_version: str
    ) -> None:
        """After a relist: exactly these objects of ``kind`` exist, as of
        ``resource_version``. Applied whole at the next flush, with the resume point.
        An object may come already serialized (compact JSON text, as ``dumps`` writes
        it): a relist of 50,000 pods then never holds 50,000 decoded objects."""
        self._writes.pending.replace_kind(kind, dict(objects), resource_version)
        self._writes.queued()

    def put_assumed(self, kind: str, key: str, raw: Mapping[str, Any]) -> None:
        """Layer 2: what this scheduler assumed for ``kind``/``key``."""
        self._writes.pending.set_assumed(kind, key, dumps(raw))
        self._writes.queued()

    def delete_assumed(self, kind: str, key: str) -> None:
        self._writes.pending.set_assumed(kind, key, None)
        self._writes.queued()

    def set_resume_point(self, kind: str, resource_version: str) -> None:
        """Where the watch of ``kind`` resumes; flushed with (never before) the objects
        queued ahead of it."""
        self._writes.pending.set_resume_point(kind, resource_version)
        self._writes.queued()
