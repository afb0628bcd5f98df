"""Full disks for tests, made two real ways.

- ``small_disk``: a tmpfs of its own, filled with a file until the kernel answers ENOSPC,
  so SQLite fails exactly as on a full volume (SQLITE_FULL, "database or disk is full")
  for every commit that needs room, the WAL's appends included. Mounting needs root; the
  tests that use it are skipped without.
- ``PageCap``: SQLite's ``max_page_count`` on every connection of a store, so a write
  that needs a new page fails with SQLITE_FULL. Works anywhere, but only writes that
  grow the file fail (a row that fits in a page already there is written), so tests use
  it for large flushes only.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import event

from volsched.cache.store import Store

# SQLite's own default maximum, restored when a cap is lifted.
NO_CAP = 1073741823


class Disk:
    """A mounted tmpfs at ``path``, to fill and free."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._filler = path / "filler"

    def fill(self) -> None:
        """Take every byte left (the kernel says ENOSPC)."""
        descriptor = os.open(self._filler, os.O_WRONLY | os.O_CREAT | os.O_APPEND)
        try:
            for chunk in (1 << 20, 1 << 16, 1 << 12, 1):
                with contextlib.suppress(OSError):
                    while True:
                        os.write(descriptor, b"\0" * chunk)
        finally:
            os.close(descriptor)
        with pytest.raises(OSError) as refused:
            (self.path / "probe").write_bytes(b"\0" * 4096)
        assert refused.value.errno == errno.ENOSPC

    def free(self) -> None:
        """Space returns."""
        self._filler.unlink(missing_ok=True)
        (self.path / "probe").unlink(missing_ok=True)


@contextlib.contextmanager
def small_disk(path: Path, size: str = "4m") -> Iterator[Disk]:
    """A tmpfs of ``size`` mounted at ``path`` (created) for the block; unmounted after."""
    if not sys.platform.startswith("linux") or os.geteuid() != 0:
        pytest.skip("mounting a small tmpfs needs root on Linux")
    path.mkdir(parents=True, exist_ok=True)
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
        capture_output=True,
        text=True,
        check=False,
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield Disk(path)
    finally:
        done = subprocess.run(["umount", str(path)], capture_output=True, check=False)
        if done.returncode != 0:
            # Still busy (a test that failed half way): detach it now, free it when idle.
            subprocess.run(["umount", "-l", str(path)], capture_output=True, check=False)


class PageCap:
    """``PRAGMA max_page_count`` on every connection ``store`` checks out (the pragma is
    per connection): ``limit()`` holds the file at its current size, ``lift()`` undoes it.
    ``remove()`` takes the listeners off again."""

    def __init__(self, store: Store) -> None:
        self._engines = [store._engines.cache.sync_engine, store._engines.journal.sync_engine]
        self._pages = NO_CAP
        for engine in self._engines:
            event.listen(engine, "checkout", self._apply)

    def limit(self) -> None:
        # A maximum below the file's size holds it at its size (SQLite never shrinks it).
        self._pages = 1

    def lift(self) -> None:
        self._pages = NO_CAP

    def remove(self) -> None:
        for engine in self._engines:
            event.remove(engine, "checkout", self._apply)

    def _apply(self, dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA max_page_count={self._pages}")
        finally:
            cursor.close()
