"""One log line per object skipped, without letting a flood of them fill the log.

An object that cannot be decoded or parsed is skipped, not fatal, and the operator needs
to know which one: the line names its kind, namespace/name and resourceVersion, and what
is wrong. A cluster can hold thousands of such objects (one bad controller writing them),
and a relist meets them all again: per kind, one line at WARNING every
``interval_seconds`` at most, the next one saying how many went unnamed in between
(each of those is still logged at DEBUG, and counted in the metrics).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

log = logging.getLogger("volsched.ingest")

# At most one WARNING line per kind this often.
INTERVAL_SECONDS = 10.0


class SkipLog:
    def __init__(
        self,
        interval_seconds: float = INTERVAL_SECONDS,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interval_seconds = interval_seconds
        self._clock = clock
        self._last: dict[str, float] = {}
        self._unnamed: dict[str, int] = {}

    def line(self, kind: str, text: str) -> None:
        """Log ``text`` about an object of ``kind``, or count it towards the next line."""
        now = self._clock()
        last = self._last.get(kind)
        if last is not None and now - last < self.interval_seconds:
            self._unnamed[kind] = self._unnamed.get(kind, 0) + 1
            log.debug("%s", text)
            return
        self._last[kind] = now
        unnamed = self._unnamed.pop(kind, 0)
        if unnamed:
            text += f" ({unnamed} more {kind} object(s) skipped since the last such line)"
        log.warning("%s", text)
