"""The store file's two engines: one file, two durability promises.

Cache writes and every read go through ``cache`` (``synchronous=NORMAL``: a crash loses
at most the last flushes, which the next watch or relist rewrites); journal entries and
the file's own facts go through ``journal`` (``synchronous=FULL``: an intent must survive
a power cut too, because the API writes that follow it do). A rebuild disposes both and
makes them again in place, so whoever holds this object keeps a valid one.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy.ext.asyncio import AsyncEngine

from volsched.cache.store.connecting import create_store_engine


class StoreEngines:
    """See the module docstring; read ``cache`` and ``journal`` at each use, not once."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.cache, self.journal = self._create()

    def _create(self) -> tuple[AsyncEngine, AsyncEngine]:
        return create_store_engine(self.path), create_store_engine(self.path, synchronous="FULL")

    def recreate(self) -> None:
        """New engines for a file made again at the same path (after ``dispose``)."""
        self.cache, self.journal = self._create()

    async def dispose(self) -> None:
        try:
            await self.cache.dispose()
        finally:
            await self.journal.dispose()
