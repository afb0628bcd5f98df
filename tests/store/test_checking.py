"""``volsched migrate --check`` decodes every row, changes nothing and reports each
problem with what the daemon does about it; ``volsched migrate`` moves aside what the
daemon would move aside. Run over the whole damage corpus."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from volsched.cache.store import check_file
from volsched.daemon.cli.main import main

from .conftest import clock
from .damage import DAMAGES, REBUILT, ROWS, Damage, healthy_store


@pytest.fixture(autouse=True)
def _unfreeze() -> Iterator[None]:
    yield
    gc.unfreeze()


def files(path: Path) -> dict[str, bytes]:
    """The database and its write-ahead log (SQLite may create an empty log and its
    shared-memory index to read a WAL-mode file; neither changes what it holds)."""
    found = {p.name: p.read_bytes() for p in path.parent.iterdir() if p.name.startswith(path.name)}
    found.pop(f"{path.name}-shm", None)
    if not found.get(f"{path.name}-wal", b"x"):
        del found[f"{path.name}-wal"]
    return found


async def test_a_healthy_file_is_verified_and_every_row_counted(db_path: Path) -> None:
    await healthy_store(db_path, clock)
    report = check_file(db_path)
    assert report.healthy
    assert report.lines() == [f"{db_path}: schema verified at revision 0003; 10 rows decoded"]


def test_a_missing_file_is_not_a_problem(db_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["migrate", "--check", "--database", str(db_path)]) == 0
    assert capsys.readouterr().out.startswith(f"{db_path}: no such file")
    assert not db_path.exists()


@pytest.mark.parametrize("damage", DAMAGES, ids=[d.name for d in DAMAGES])
async def test_check_reports_every_damage_and_changes_nothing(
    db_path: Path, capsys: pytest.CaptureFixture[str], damage: Damage
) -> None:
    await healthy_store(db_path, clock)
    damage.apply(db_path)
    before = files(db_path)
    assert main(["migrate", "--check", "--database", str(db_path)]) == 1
    captured = capsys.readouterr()
    assert captured.err == ""
    lines = captured.out.splitlines()
    assert len(lines) >= 2 and all(line.startswith(f"{db_path}: ") for line in lines)
    assert damage.says in captured.out
    # A damaged value is named by its table, its row and its column.
    where = damage.name.split(" ")[0]
    if "." in where:
        table, column = where.split(".")
        assert column in captured.out
        assert f"{table} row" in captured.out or table == "alembic_version"
    if damage.outcome == ROWS:
        assert "snapshot row " in captured.out
    rebuilds = damage.outcome == REBUILT
    assert ("volsched migrate moves the file aside" in lines[-1]) == rebuilds
    assert files(db_path) == before


@pytest.mark.parametrize("damage", DAMAGES, ids=[d.name for d in DAMAGES])
async def test_migrate_moves_aside_what_the_daemon_would_and_lists_the_rest(
    db_path: Path, capsys: pytest.CaptureFixture[str], damage: Damage
) -> None:
    await healthy_store(db_path, clock)
    damage.apply(db_path)
    assert main(["migrate", "--database", str(db_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    if damage.outcome == REBUILT:
        assert lines[0].startswith(f"{db_path}: unusable (")
        assert lines[1] == f"{db_path}: rebuilt, schema at revision 0003"
        assert check_file(db_path).healthy
    else:
        assert lines[0] == f"{db_path}: schema verified at revision 0003"
        assert len(lines) > 1 and damage.says in "\n".join(lines[1:])
