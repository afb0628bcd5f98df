"""Whether the store can write, and if not why: the state behind the daemon's
``database`` readiness check.

A full disk is the usual reason. SQLite reports it as SQLITE_FULL ("database or disk is
full"), the filesystem as ENOSPC; ``store_error`` turns either into ``StoreFull``, and any
other failure into a plain ``StoreError``. Reads keep working meanwhile, and no write is
lost: queued cache writes stay queued and the flusher retries them with backoff, and the
caller of a journal write is told (a binding cycle then fails cleanly and its pod is
retried).

Each writer (the write-behind flush, the binding journal) is followed on its own, and
the store is writable when the latest attempt of every writer succeeded: a small write
that still fits must not declare a full disk healed while the flush keeps failing.
Turning unwritable and turning writable again are one log line each; the failures in
between log at debug level, so a disk full for an hour is two lines, not a traceback
per retry.
"""

from __future__ import annotations

import errno
import logging
import sqlite3
import time
from collections.abc import Callable
from pathlib import Path

from sqlalchemy.exc import DBAPIError

from volsched.cache.errors import StoreError, StoreFull

log = logging.getLogger("volsched.store")

# SQLite's own words for SQLITE_FULL, for drivers that do not carry the code.
FULL_MESSAGE = "database or disk is full"


def is_disk_full(error: BaseException) -> bool:
    """True when ``error`` (a driver error or an OSError) says the disk is full."""
    if isinstance(error, sqlite3.Error):
        code = getattr(error, "sqlite_errorcode", None)
        if isinstance(code, int) and code & 0xFF == sqlite3.SQLITE_FULL:
            return True
        return FULL_MESSAGE in str(error)
    if isinstance(error, OSError):
        return error.errno == errno.ENOSPC
    return False


def store_error(path: Path, doing: str, error: BaseException) -> StoreError:
    """The store's error for a driver (SQLAlchemy, sqlite3) or filesystem failure."""
    cause = error.orig if isinstance(error, DBAPIError) and error.orig is not None else error
    if is_disk_full(cause):
        return StoreFull(f"{path}: {doing} failed: {cause}")
    return StoreError(f"{path}: {doing} failed: {cause}")


class WriteHealth:
    """The latest outcome of each writer's writes; see the module docstring."""

    def __init__(self, path: Path, clock: Callable[[], float] = time.monotonic) -> None:
        self.path = path
        self._clock = clock
        self._failing: dict[str, StoreError] = {}
        self._since: float | None = None

    @property
    def writable(self) -> bool:
        return not self._failing

    def failing(self, writer: str) -> bool:
        return writer in self._failing

    @property
    def problem(self) -> str | None:
        """None while writes succeed; else the latest failure, and for how long."""
        if not self._failing or self._since is None:
            return None
        latest = next(reversed(self._failing.values()))
        seconds = max(0.0, self._clock() - self._since)
        return f"{latest} (writes failing for {seconds:.0f}s)"

    def failed(self, writer: str, error: StoreError) -> None:
        if not self._failing:
            self._since = self._clock()
            log.warning(
                "database %s: %s; cache writes are kept and retried, and journal entries "
                "refused, until it can be written",
                "is full" if isinstance(error, StoreFull) else "cannot be written",
                error,
            )
        else:
            log.debug("database still cannot be written (%s): %s", writer, error)
        self._failing.pop(writer, None)  # the latest failure last, for ``problem``
        self._failing[writer] = error

    def succeeded(self, writer: str) -> None:
        if self._failing.pop(writer, None) is None or self._failing:
            return
        seconds = 0.0 if self._since is None else self._clock() - self._since
        self._since = None
        log.info("database %s can be written again, after %.0fs", self.path, seconds)
