"""Which nodes changed, in order: what a cache of per-node verdicts kept outside the
nodes replays to forget exactly those nodes.

Every change to a ``NodeInfo`` (a pod added or removed, the node object replaced)
empties the node's memo and is recorded here by name. A reader remembers the
``position`` it has seen and asks for the names recorded since; when more have been
recorded than are kept, it is told to forget everything (``None``).
"""

from __future__ import annotations

# Names kept before the oldest are dropped (a reader that far behind starts over).
KEPT = 8192


class NodeChanges:
    __slots__ = ("_base", "_names")

    def __init__(self) -> None:
        self._names: list[str] = []
        # The position of ``_names[0]``.
        self._base = 0

    @property
    def position(self) -> int:
        return self._base + len(self._names)

    def record(self, name: str) -> None:
        names = self._names
        if len(names) >= KEPT:
            self._base += len(names)
            self._names = names = []
        names.append(name)

    def since(self, position: int) -> list[str] | None:
        """The names recorded after ``position``; None when some were dropped."""
        if position < self._base:
            return None
        return self._names[position - self._base :]
