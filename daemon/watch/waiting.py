"""Waiting for the cache to change, without polling.

A binding cycle waits for the PV controller (claims bound, PVs provisioned) — a tenth of a
second on a healthy control plane, minutes on a slow provisioner, forever on a broken
one. Thousands of such waits polling the cache would spend the event loop on nothing;
instead each waits on the keys it cares about, and the ingest tells this notifier about
every change it applies, waking exactly the waiters of that key.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections import defaultdict
from collections.abc import Callable, Iterable

Key = tuple[str, str]


class ChangeNotifier:
    def __init__(self) -> None:
        self._waiters: dict[Key, set[asyncio.Event]] = defaultdict(set)
        # Told every change as it is applied (the shadow reads PreBind writes here).
        self.listeners: list[Callable[[str, str], None]] = []

    def notify(self, kind: str, key: str) -> None:
        for event in self._waiters.get((kind, key), ()):
            event.set()
        for listener in self.listeners:
            listener(kind, key)

    def waiting(self) -> int:
        """How many waits are registered (for metrics and tests)."""
        return len({id(e) for events in self._waiters.values() for e in events})

    async def wait(self, keys: Iterable[Key], timeout: float) -> bool:
        """Until one of ``keys`` changes (True) or ``timeout`` seconds pass (False)."""
        event = asyncio.Event()
        watched = list(keys)
        for key in watched:
            self._waiters[key].add(event)
        try:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(event.wait(), timeout=timeout)
            return event.is_set()
        finally:
            for key in watched:
                waiters = self._waiters.get(key)
                if waiters is not None:
                    waiters.discard(event)
                    if not waiters:
                        del self._waiters[key]
