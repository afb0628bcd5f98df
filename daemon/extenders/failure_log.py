"""Logging an extender's failures once, not once per pod.

An ignorable extender that fails, fails for every pod of every cycle, with the same
text; logging each one buries everything else (an extender's 3 MB ``Error`` was once
written out in full at every cycle). So a failure is logged when it first happens or
its text changes, and then at most once per ``interval_seconds``, saying how many times
it repeated in between.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass


@dataclass
class _Seen:
    text: str
    logged_at: float
    repeats: int = 0


class FailureLog:
    """The failures of each extender and verb, logged without repeating themselves."""

    def __init__(
        self,
        log: logging.Logger,
        interval_seconds: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.log = log
        self.interval_seconds = interval_seconds
        self.clock = clock
        self._seen: dict[tuple[str, str], _Seen] = {}

    def failed(self, extender: str, verb: str, what: str, text: str) -> None:
        """``what`` says what the failure cost ("skipped in filter (ignorable)"); ``text``
        is the error, already cut to a line (``answers.shortened``)."""
        now = self.clock()
        seen = self._seen.get((extender, verb))
        if seen is not None and seen.text == text:
            if now - seen.logged_at < self.interval_seconds:
                seen.repeats += 1
                return
            self.log.warning(
                "extender %s %s: %s (%d more times since it was last logged)",
                extender,
                what,
                text,
                seen.repeats,
            )
            seen.logged_at, seen.repeats = now, 0
            return
        self._seen[(extender, verb)] = _Seen(text, now)
        self.log.warning("extender %s %s: %s", extender, what, text)

    def recovered(self, extender: str, verb: str) -> None:
        """A success: the next failure is news again."""
        seen = self._seen.pop((extender, verb), None)
        if seen is not None and seen.repeats:
            self.log.info(
                "extender %s answers %s again (%d failures not logged before that)",
                extender,
                verb,
                seen.repeats,
            )
