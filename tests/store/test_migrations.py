"""The schema comes from the alembic versions in ``migrations/``, applied by the store and
by ``migrate()``; ``schema.py`` and the versions agree."""

from __future__ import annotations

import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext

from volsched.cache.store import migrate
from volsched.cache.store.connecting import create_sync_engine
from volsched.cache.store.migrating import (
    alembic_config,
    head_revision,
    known_revisions,
    upgrade_to_head,
)
from volsched.cache.store.schema import REVISION, metadata

ROOT = Path(__file__).resolve().parents[2]
TABLES = {"alembic_version", "objects", "assumed", "resume_points", "journal", "meta", "snapshot"}


def tables(path: Path) -> set[str]:
    with sqlite3.connect(path) as connection:
        rows = connection.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'"
        ).fetchall()
    connection.close()
    return {row[0] for row in rows}


def test_migrate_builds_the_schema_and_is_idempotent(db_path: Path) -> None:
    assert migrate(str(db_path)) == head_revision() == "0003"
    assert tables(db_path) == TABLES
    assert migrate(str(db_path)) == "0003"
    assert tables(db_path) == TABLES


def test_migrate_works_from_any_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert migrate("relative/volsched.db") == "0003"
    assert tables(elsewhere / "relative" / "volsched.db") == TABLES


def test_migrate_rebuilds_a_bad_file(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True)
    db_path.write_bytes(b"garbage")
    assert migrate(str(db_path)) == "0003"
    assert tables(db_path) == TABLES
    assert [p.name for p in db_path.parent.glob("*.corrupt-*")]


def ddl(path: Path) -> list[tuple[str, str, str]]:
    """Every table and index of a file as SQLite keeps its definition."""
    with sqlite3.connect(path) as connection:
        rows = connection.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
            "ORDER BY type, name"
        ).fetchall()
    connection.close()
    return [(kind, name, " ".join(str(sql).split())) for kind, name, sql in rows]


def test_a_new_store_is_built_as_the_versions_build_it(tmp_path: Path) -> None:
    """A new file is made from schema.py and stamped, without running the versions one
    by one: it must come out exactly as the versions make it."""
    by_versions = tmp_path / "by-versions.db"
    by_versions.parent.mkdir(parents=True, exist_ok=True)
    assert upgrade_to_head(by_versions) == REVISION
    fresh = tmp_path / "fresh.db"
    assert migrate(str(fresh)) == REVISION
    assert ddl(fresh) == ddl(by_versions)
    with sqlite3.connect(fresh) as connection:
        assert connection.execute("SELECT version_num FROM alembic_version").fetchall() == [
            (REVISION,)
        ]
    connection.close()


def test_the_versions_build_exactly_schema_py(db_path: Path) -> None:
    db_path.parent.mkdir(parents=True, exist_ok=True)
    assert upgrade_to_head(db_path) == REVISION == head_revision()
    engine = create_sync_engine(db_path)
    try:
        with engine.connect() as connection:
            differences = compare_metadata(MigrationContext.configure(connection), metadata)
    finally:
        engine.dispose()
    assert differences == []


def test_every_version_downgrades_and_upgrades_again(db_path: Path) -> None:
    migrate(str(db_path))
    engine = create_sync_engine(db_path)
    try:
        with engine.begin() as connection:
            command.downgrade(alembic_config(connection), "base")
        assert tables(db_path) == {"alembic_version"}
        with engine.begin() as connection:
            command.upgrade(alembic_config(connection), "head")
    finally:
        engine.dispose()
    assert tables(db_path) == TABLES
    assert known_revisions() == {"0001", "0002", "0003"}


def test_the_developer_alembic_ini_works(tmp_path: Path) -> None:
    alembic = shutil.which("alembic", path=str(Path(sys.executable).parent))
    if alembic is None:
        pytest.skip("the alembic command is not installed")
    path = tmp_path / "dev.db"
    result = subprocess.run(
        [alembic, "-c", str(ROOT / "alembic.ini"), "-x", f"db={path}", "upgrade", "head"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert tables(path) == TABLES
    assert migrate(str(path)) == "0003"
