"""Data computed once per pod per cycle and read by every node's filter and score."""

from __future__ import annotations

from typing import Any


class CycleState:
    """A per-cycle scratchpad keyed by plugin name; also records skipped plugins."""

    __slots__ = ("_data", "skip_filter", "skip_score")

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}
        self.skip_filter: set[str] = set()
        self.skip_score: set[str] = set()

    def write(self, key: str, value: Any) -> None:
        self._data[key] = value

    def read(self, key: str) -> Any:
        return self._data.get(key)
