"""Fixtures for the store tests: real SQLite files under ``tmp_path``, a fixed clock, and
a check that no store leaves a task running."""

from __future__ import annotations

import asyncio
import gc
import sqlite3
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from volsched.cache.store import Store

NOW = 1_700_000_000.0  # 2023-11-14T22:13:20Z

Query = Callable[..., list[tuple[Any, ...]]]


def clock() -> float:
    return NOW


def assert_no_tasks_left() -> None:
    current = asyncio.current_task()
    left = [task for task in asyncio.all_tasks() if task is not current and not task.done()]
    assert not left, f"tasks left running: {left}"


@pytest.fixture(autouse=True)
def _unfreeze_after_load() -> Iterator[None]:
    """``load()`` freezes the collector's view of the heap (right for a daemon); give the
    rest of the test session its collector back."""
    yield
    gc.unfreeze()


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "state" / "volsched.db"


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[Store]:
    """A store whose background flush would wait a minute: tests flush explicitly."""
    opened, _ = await Store.open(str(db_path), flush_interval_seconds=60.0, clock=clock)
    yield opened
    await opened.close()
    assert_no_tasks_left()


@pytest.fixture
def on_disk(db_path: Path) -> Query:
    """Query the file through a separate stdlib connection: what is really on disk."""

    def query(sql: str, *args: Any) -> list[tuple[Any, ...]]:
        connection = sqlite3.connect(db_path)
        try:
            rows = connection.execute(sql, args).fetchall()
            connection.commit()
            return rows
        finally:
            connection.close()

    return query
