"""Opening a store file: cold, warm, or moved aside and rebuilt — never a crash loop;
and the file's settings (WAL, synchronous) are what the store promises."""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncEngine

from volsched.cache.errors import StoreError
from volsched.cache.store import OpenResult, Store

from .conftest import Query, assert_no_tasks_left, clock

# The fixed clock, as the moved-aside suffix spells it.
STAMP = "20231114T221320Z"


async def open_and_close(path: Path) -> OpenResult:
    store, opened = await Store.open(str(path), clock=clock)
    await store.close()
    assert_no_tasks_left()
    return opened


async def make_store(path: Path, objects: int = 3) -> None:
    store, _ = await Store.open(str(path), clock=clock)
    for index in range(objects):
        store.put_object("Pod", f"ns/p{index}", {"padding": "x" * 2000, "index": index})
    store.set_resume_point("Pod", "7")
    await store.journal_open("ns/p0", "node-1", {})
    await store.close()


async def stored_pods(path: Path) -> int:
    store, _ = await Store.open(str(path), clock=clock)
    try:
        return len((await store.load()).objects.get("Pod", {}))
    finally:
        await store.close()


def assert_rebuilt(opened: OpenResult, path: Path) -> Path:
    assert opened.state == "rebuilt"
    assert opened.moved_to == f"{path}.corrupt-{STAMP}"
    moved = Path(opened.moved_to)
    assert moved.exists()
    return moved


# -- states ---------------------------------------------------------------------------


async def test_a_missing_file_is_a_cold_start_in_a_new_directory(db_path: Path) -> None:
    assert not db_path.parent.exists()
    assert await open_and_close(db_path) == OpenResult("cold", None)
    assert db_path.exists()


async def test_an_existing_store_is_a_warm_start(db_path: Path) -> None:
    await make_store(db_path)
    assert await open_and_close(db_path) == OpenResult("warm", None)
    assert await stored_pods(db_path) == 3


async def test_an_empty_file_is_a_cold_start(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.touch()
    assert await open_and_close(db_path) == OpenResult("cold", None)


async def test_a_stale_wal_without_its_database_is_removed(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    Path(f"{db_path}-wal").write_bytes(b"stale" * 100)
    Path(f"{db_path}-shm").write_bytes(b"stale")
    assert (await open_and_close(db_path)).state == "cold"
    assert await stored_pods(db_path) == 0


# -- bad files: moved aside, rebuilt ---------------------------------------------------


async def test_garbage_is_moved_aside_with_its_companions(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"this is not a database\n" * 100)
    Path(f"{db_path}-wal").write_bytes(b"wal")
    Path(f"{db_path}-shm").write_bytes(b"shm")
    opened = await open_and_close(db_path)
    moved = assert_rebuilt(opened, db_path)
    assert moved.read_bytes().startswith(b"this is not a database")
    assert Path(f"{moved}-wal").read_bytes() == b"wal"
    assert Path(f"{moved}-shm").read_bytes() == b"shm"
    assert await stored_pods(db_path) == 0


async def test_a_truncated_database_is_moved_aside(db_path: Path) -> None:
    await make_store(db_path, objects=200)
    size = db_path.stat().st_size
    with db_path.open("r+b") as handle:
        handle.truncate(size // 2)
    opened = await open_and_close(db_path)
    assert_rebuilt(opened, db_path)
    assert await stored_pods(db_path) == 0


async def test_a_database_with_a_damaged_page_is_moved_aside(db_path: Path) -> None:
    await make_store(db_path, objects=200)
    with db_path.open("r+b") as handle:
        handle.seek(4096 * 3)
        handle.write(os.urandom(4096 * 4))
    assert_rebuilt(await open_and_close(db_path), db_path)


async def test_a_revision_from_the_future_is_moved_aside(db_path: Path, on_disk: Query) -> None:
    await make_store(db_path)
    on_disk("UPDATE alembic_version SET version_num = '9999_from_the_future'")
    moved = assert_rebuilt(await open_and_close(db_path), db_path)
    with sqlite3.connect(moved) as kept:  # nothing is lost: the old file is intact
        assert kept.execute("SELECT count(*) FROM objects").fetchone() == (3,)
    kept.close()
    assert await stored_pods(db_path) == 0


async def test_some_other_database_is_moved_aside(db_path: Path, on_disk: Query) -> None:
    db_path.parent.mkdir(parents=True)
    on_disk("CREATE TABLE users (name TEXT)")
    assert_rebuilt(await open_and_close(db_path), db_path)


async def test_a_second_rebuild_in_the_same_second_gets_its_own_name(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"garbage one")
    first = await open_and_close(db_path)
    db_path.write_bytes(b"garbage two")
    Path(f"{db_path}-wal").unlink(missing_ok=True)
    second = await open_and_close(db_path)
    assert first.moved_to == f"{db_path}.corrupt-{STAMP}"
    assert second.moved_to == f"{db_path}.corrupt-{STAMP}-2"
    assert Path(second.moved_to).read_bytes() == b"garbage two"


# -- the machine's trouble: StoreError, the file left alone ------------------------------


async def test_a_directory_that_cannot_be_created_is_a_store_error(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("a file where the directory should be")
    path = blocker / "volsched.db"
    with pytest.raises(StoreError, match=str(path)):
        await Store.open(str(path))
    assert blocker.read_text() == "a file where the directory should be"
    assert_no_tasks_left()


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes to read-only directories")
async def test_a_directory_that_cannot_be_written_is_a_store_error(tmp_path: Path) -> None:
    directory = tmp_path / "readonly"
    directory.mkdir()
    directory.chmod(0o500)
    try:
        with pytest.raises(StoreError, match="not writable"):
            await Store.open(str(directory / "volsched.db"))
    finally:
        directory.chmod(0o700)


async def test_a_directory_in_place_of_the_file_is_a_store_error(db_path: Path) -> None:
    db_path.mkdir(parents=True)
    with pytest.raises(StoreError, match=f"{db_path}: is a directory"):
        await Store.open(str(db_path))
    assert db_path.is_dir()


async def test_bad_arguments_are_refused(db_path: Path) -> None:
    with pytest.raises(ValueError, match="flush_interval_seconds"):
        await Store.open(str(db_path), flush_interval_seconds=0)
    with pytest.raises(ValueError, match="max_pending"):
        await Store.open(str(db_path), max_pending=0)
    assert not db_path.exists()


# -- settings -----------------------------------------------------------------------------


async def pragma(engine: AsyncEngine, name: str) -> object:
    async with engine.connect() as connection:
        return await connection.scalar(text(f"PRAGMA {name}"))


async def test_wal_and_synchronous_are_set(store: Store, on_disk: Query) -> None:
    cache_engine, journal_engine = store._engines.cache, store._engines.journal
    assert await pragma(cache_engine, "journal_mode") == "wal"
    assert await pragma(cache_engine, "synchronous") == 1  # NORMAL
    assert await pragma(cache_engine, "busy_timeout") == 5000
    assert await pragma(cache_engine, "foreign_keys") == 1
    assert await pragma(journal_engine, "synchronous") == 2  # FULL
    assert await pragma(journal_engine, "journal_mode") == "wal"
    assert on_disk("PRAGMA journal_mode") == [("wal",)]  # stored in the file itself
