"""The kept verdicts and score rows of a pod shape on every node, as lists in the order
of the cluster's node list: a cycle reads its window of nodes as one slice instead of a
memo lookup per node. Only a faster copy of the memos, forgetting exactly the nodes that
changed (docs/concepts/kept-verdicts.md); ``kept_results`` is how the runner asks it.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

from volsched.cache.node_changes import NodeChanges
from volsched.cache.node_info import NodeInfo

# Pod shapes whose columns are kept (the least recently read is dropped first).
COLUMNS_KEPT = 32


class _Column:
    __slots__ = ("position", "values")

    def __init__(self, values: list[Any], position: int) -> None:
        self.values = values
        self.position = position


class ShapeColumns:
    """Columns of one node list (one cluster cache), by memo key."""

    def __init__(self, changes: NodeChanges) -> None:
        self._changes = changes
        self._layout: list[NodeInfo] | None = None
        self._index: dict[str, int] = {}
        self._columns: dict[Hashable, _Column] = {}

    def column(self, key: Hashable, nodes: list[NodeInfo], empty: Any) -> list[Any]:
        """The column of ``key`` over ``nodes`` (the cluster's node list, the very list
        object), every value unknown (``empty``) where it is not kept."""
        if nodes is not self._layout:
            self._layout = nodes
            self._index = {info.name: index for index, info in enumerate(nodes)}
            self._columns.clear()
        column = self._columns.pop(key, None)
        position = self._changes.position
        if column is None:
            column = _Column([empty] * len(nodes), position)
        elif column.position != position:
            changed = self._changes.since(column.position)
            if changed is None or len(changed) > len(nodes) // 4:
                column.values = [empty] * len(nodes)
            else:
                values, index = column.values, self._index
                for name in changed:
                    at = index.get(name)
                    if at is not None:
                        values[at] = empty
            column.position = position
        self._columns[key] = column
        if len(self._columns) > COLUMNS_KEPT:
            del self._columns[next(iter(self._columns))]
        return column.values


def window(values: list[Any], begin: int, size: int) -> list[Any]:
    """``size`` values from ``begin``, wrapping around the end (``size`` ≤ their
    number): the walk's next nodes without copying the whole rotated list."""
    begin %= len(values)
    end = begin + size
    if end <= len(values):
        return values[begin:end]
    return values[begin:] + values[: end - len(values)]


def put_window(values: list[Any], begin: int, window_values: list[Any]) -> None:
    """Write ``window_values`` back where ``window`` read them."""
    begin %= len(values)
    end = begin + len(window_values)
    if end <= len(values):
        values[begin:end] = window_values
        return
    split = len(values) - begin
    values[begin:] = window_values[:split]
    values[: end - len(values)] = window_values[split:]
