"""What earlier cycles worked out about a pod shape on each node: the one interface the
runner asks before it runs a filter or a node-local score.

Two stores sit behind it, and the runner sees neither: each node's memo (``NodeInfo.memo``,
emptied whenever the node changes) and, for a walk over the cluster's whole node list,
the shape's column (``ShapeColumns``, the same values as one list, read a window at a
time). docs/concepts/kept-verdicts.md says why they exist and when they are asked.

A verdict is what ``first_rejection`` returns — None for a fit, or the first rejecting
predicate with its status — or the exception a node could not be read with; UNKNOWN
where nothing is kept. A plugin's error, an exception and a verdict on a node judged with
the pods nominated there are never kept.
"""

from __future__ import annotations

from collections.abc import Container, Hashable
from typing import Any

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import UNKNOWN, NodeInfo
from volsched.scheduling.framework.scoring import Aligned
from volsched.scheduling.framework.shape_columns import ShapeColumns, put_window, window
from volsched.scheduling.framework.status import Code


class KeptResults:
    """The kept verdicts and score rows of one cluster cache's nodes."""

    def __init__(self, cluster: ClusterCache) -> None:
        self._cluster = cluster
        self._columns = ShapeColumns(cluster.node_changes)

    def verdicts(
        self, key: Hashable | None, nodes: list[NodeInfo], crowded: Container[str]
    ) -> KeptVerdicts:
        """The verdicts of the pod shape ``key`` (None: nothing is kept for this pod) on
        ``nodes``, for one walk. A node in ``crowded`` has pods nominated to it: it is
        judged with them each time, so nothing is read or kept for it."""
        column = None
        if key is not None and not crowded and nodes is self._cluster.node_list():
            column = self._columns.column(key, nodes, UNKNOWN)
        return KeptVerdicts(key, nodes, crowded, column)

    def score_columns(
        self, walked: tuple[list[NodeInfo], list[NodeInfo], int] | None, feasible: list[NodeInfo]
    ) -> Aligned | None:
        """The score rows to read as a slice, when ``feasible`` is still the window of the
        cluster's node list the walk found (``Decision.feasible_window``): no extender
        has trimmed it and no node was added or removed since."""
        if walked is None:
            return None
        nodes, found, begin = walked
        if found is not feasible or nodes is not self._cluster.node_list():
            return None
        return self._columns, nodes, begin


class KeptVerdicts:
    """One walk's view of the kept verdicts: read a window, keep what was judged."""

    __slots__ = ("_column", "_crowded", "_key", "_nodes", "_unkept")

    def __init__(
        self,
        key: Hashable | None,
        nodes: list[NodeInfo],
        crowded: Container[str],
        column: list[Any] | None,
    ) -> None:
        self._key = key
        self._nodes = nodes
        self._crowded = crowded
        self._column = column
        # Whether a verdict since the last ``keep`` must not be kept (rare: ``keep``
        # then filters its window, otherwise writes it as it is).
        self._unkept = False

    @property
    def columnar(self) -> bool:
        """Whether the walk reads the shape's column (the whole node list, in order)."""
        return self._column is not None

    def read(self, begin: int, size: int) -> list[Any]:
        """The kept verdicts of ``size`` nodes from ``begin`` (wrapping), UNKNOWN where
        none is kept. A fresh list: the caller fills in what it judges."""
        key = self._key
        if key is None:
            return [UNKNOWN] * size
        batch = window(self._nodes, begin, size)
        if self._column is None:
            crowded = self._crowded
            return [
                UNKNOWN if info.name in crowded else info.memo.get(key, UNKNOWN) for info in batch
            ]
        verdicts = window(self._column, begin, size)
        # A column forgets more than the memos do (a rebuilt node list, many changes at
        # once): the few unknown ones are looked up there, found by list.index (in C).
        index = -1
        while True:
            try:
                index = verdicts.index(UNKNOWN, index + 1)
            except ValueError:
                return verdicts
            verdicts[index] = batch[index].memo.get(key, UNKNOWN)

    def judged(self, info: NodeInfo, verdict: Any) -> None:
        """``verdict`` was just worked out for ``info``: kept on the node, unless it is
        an error, an exception or a verdict with nominated pods."""
        if _unkeepable(verdict):
            self._unkept = True
            return
        if self._key is not None and info.name not in self._crowded:
            info.remember(self._key, verdict)

    def keep(self, begin: int, verdicts: list[Any]) -> None:
        """A judged window back into the column, where ``read`` found it; what ``judged``
        did not keep stays UNKNOWN there (the next cycle asks the node again)."""
        if self._column is None:
            return
        if self._unkept:
            verdicts = [UNKNOWN if _unkeepable(verdict) else verdict for verdict in verdicts]
            self._unkept = False
        put_window(self._column, begin, verdicts)


def _unkeepable(verdict: Any) -> bool:
    return isinstance(verdict, Exception) or (
        verdict is not None and verdict is not UNKNOWN and verdict[1].code is Code.ERROR
    )
