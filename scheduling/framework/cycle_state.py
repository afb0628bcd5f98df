"""Data computed once per pod per cycle and read by every node's filter and score."""

from __future__ import annotations

from typing import Any


class CycleState:
    """A per-cycle scratchpad keyed by plugin name; also records skipped plugins.

    ``clone`` gives a copy whose entries can be changed without touching this one: an
    entry with a ``clone()`` method of its own is copied with it (the PreFilter states
    that ``add_pod`` / ``remove_pod`` update), any other entry is read-only and shared.
    The preemption dry run clones the state per node, and the nominated-pods pass per
    node with pods nominated there, as kube-scheduler's ``CycleState.Clone`` serves them.
    """

    __slots__ = ("_data", "skip_filter", "skip_score")

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter: set[str] = set()
        self.skip_score: set[str] = set()

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def read(self, key: str) -> Any:
        return self._data.get(key)

    def clone(self) -> CycleState:
        copy = CycleState()
        for key, value in self._data.items():
            clone = getattr(value, "clone", None)
            copy._data[key] = clone() if callable(clone) else value
        copy.skip_filter = set(self.skip_filter)
        copy.skip_score = set(self.skip_score)
        return copy
