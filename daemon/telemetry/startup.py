"""How long the daemon took to start, milestone by milestone.

The figure operators compare with kube-scheduler is the time from the process starting to
its first binding; the milestones say where that time went (importing, connecting,
opening the database, catching up with the API server, taking the lead). Each is logged
once and exported as ``volsched_startup_seconds{milestone}``: seconds after the process
started, so a dashboard can show a slow start next to the restart that caused it.

The process's start is read from ``/proc/self/stat`` where there is one, so the
interpreter's own start-up and every import are counted, as they are for a Go binary.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Callable

log = logging.getLogger("volsched")

# In the order a start reaches them; ``first_binding`` may come later than ``ready``
# by however long the first pod takes to arrive.
MILESTONES = ("imported", "connected", "database_open", "caught_up", "ready", "first_binding")


def process_age_seconds() -> float | None:
    """Seconds since this process started, from the kernel's record of it (None where
    there is no ``/proc``)."""
    try:
        with open("/proc/self/stat", encoding="ascii") as stat:
            fields = stat.read().rsplit(")", 1)[1].split()
        started = int(fields[19]) / os.sysconf("SC_CLK_TCK")
        return max(0.0, time.clock_gettime(time.CLOCK_BOOTTIME) - started)
    except (OSError, ValueError, IndexError, AttributeError):
        return None


class StartupTimeline:
    """The milestones of one start, in seconds after the process started."""

    def __init__(
        self,
        clock: Callable[[], float] = time.monotonic,
        age: Callable[[], float | None] = process_age_seconds,
    ) -> None:
        self._clock = clock
        known_age = age()
        # Without /proc, the timeline starts when it is made (at the top of the command).
        self._started = clock() - (known_age or 0.0)
        self.reached: dict[str, float] = {}
        self._listeners: list[Callable[[str, float], None]] = []

    def on_mark(self, listener: Callable[[str, float], None]) -> None:
        """``listener(milestone, seconds)`` for each milestone, those reached before too."""
        self._listeners.append(listener)
        for milestone, seconds in self.reached.items():
            listener(milestone, seconds)

    def mark(self, milestone: str) -> None:
        """Note ``milestone`` as reached now; only its first time counts."""
        if milestone not in MILESTONES:
            raise ValueError(f"unknown start-up milestone {milestone!r}")
        if milestone in self.reached:
            return
        seconds = round(self._clock() - self._started, 3)
        self.reached[milestone] = seconds
        for listener in self._listeners:
            listener(milestone, seconds)
        if milestone == "ready":
            log.info("start-up: %s", self.summary())
        elif milestone == "first_binding":
            log.info("first pod bound %.2f s after the process started", seconds)

    def summary(self) -> str:
        """Each milestone reached, with the time spent getting there from the one before."""
        parts = []
        previous = 0.0
        for milestone in MILESTONES:
            if milestone not in self.reached:
                continue
            seconds = self.reached[milestone]
            parts.append(f"{milestone} {seconds:.2f} s (+{seconds - previous:.2f})")
            previous = seconds
        return ", ".join(parts)
