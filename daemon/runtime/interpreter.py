"""The interpreter settings a running daemon needs: the garbage collector's thresholds
and the thread switch interval, each with the measurement that chose it."""

from __future__ import annotations

import sys

# The collector's thresholds once the cache is built. CPython's default (700 allocations
# a young collection, 10 young for a middle one, 10 middle for a full one) made the
# scheduling cycle, which allocates a little per candidate node, pay for collections in
# about a third of its time. Reference cycles are rare here; memory stays bounded.
GC_THRESHOLDS = (50_000, 20, 20)
# How long a thread waiting for the interpreter lets the one holding it run on (CPython's
# default is 5 ms). A waiting thread asks for the lock only after a whole interval in
# which it never changed hands, and the event loop lets go of it briefly at every
# iteration (in epoll) and takes it straight back: with scheduling cycles of a few
# milliseconds that never happens, so SQLite's worker thread starved. A burst of pods
# then held a write-behind flush of a few thousand rows for 2-7 s, every binding intent
# queued behind it, and bindings completed in one wave when the burst was over. At
# 0.5 ms the same flush takes under a second and bindings keep pace with scheduling.
SWITCH_INTERVAL_SECONDS = 0.0005


class _SwitchInterval:
    """The process's switch interval while any daemon in it runs, and the embedding
    process's own setting back when the last one stops (two daemons in one process, as
    in tests, must not hand each other's setting back)."""

    def __init__(self) -> None:
        self.users = 0
        self.saved = 0.0

    def acquire(self) -> None:
        if self.users == 0:
            self.saved = sys.getswitchinterval()
            sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
        self.users += 1

    def release(self) -> None:
        self.users -= 1
        if self.users == 0:
            sys.setswitchinterval(self.saved)


switch_interval = _SwitchInterval()
