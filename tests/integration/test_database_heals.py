"""A database that heals: anything unreadable in the file (a row, a table) means the file
is moved aside and rebuilt from a relist, with one log line — never a crash loop — except
a journal entry, which is skipped with a log line while recovery finishes the others;
and ``volsched migrate`` verifies the schema and says what is wrong."""

from __future__ import annotations

import logging
import sqlite3
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.integration.conftest import ROOT, Cluster, eventually
from tests.integration.objects import claim, local_pv, node, pod, storage_class
from tests.integration.test_resilience import kill_after_prebind
from tests.store.damage_kit import snapshot_body, sql
from tests.store.damage_snapshots import MEMO_SLOT_200_MILLION, damaged_meta
from volsched.emulator import ControllerSettings


def damage(path: Path, statement: str) -> None:
    with sqlite3.connect(path) as connection:
        connection.execute(statement)
    connection.close()


@pytest.mark.parametrize(
    ("statement", "why"),
    [
        ("UPDATE objects SET body = '{not json' WHERE kind = 'Node'", "cannot be decoded"),
        ("UPDATE objects SET body = '[1, 2]' WHERE kind = 'Node'", "not a JSON object"),
        (
            "UPDATE objects SET body = '" + "[" * 5000 + "]" * 5000 + "' WHERE kind = 'Node'",
            "nested deeper than",
        ),
        (
            "INSERT INTO assumed (kind, key, body) VALUES ('PersistentVolume', 'pv', 'x')",
            "cannot be decoded",
        ),
        ("DROP TABLE journal", "table journal is missing at revision"),
        ("DROP TABLE resume_points", "table resume_points is missing at revision"),
        (
            "UPDATE objects SET body = CAST(X'FF' AS TEXT) || body WHERE kind = 'Node'",
            "body is not UTF-8 text",
        ),
        (
            "UPDATE alembic_version SET version_num = CAST(X'FF' AS TEXT) || version_num",
            "version_num is not UTF-8 text",
        ),
        (
            "UPDATE resume_points SET resource_version = CAST(X'FF' AS TEXT) || resource_version",
            "resource_version is not UTF-8 text",
        ),
        ("UPDATE resume_points SET updated_at = 9e999", "updated_at is inf, not a time"),
    ],
    ids=[
        "bad body",
        "body not an object",
        "body nested",
        "bad assumed row",
        "journal",
        "resume points",
        "body not UTF-8",
        "stamp not UTF-8",
        "resume point not UTF-8",
        "resume time infinite",
    ],
)
async def test_an_unreadable_database_is_rebuilt_not_crashed_on(
    cluster: Cluster, caplog: pytest.LogCaptureFixture, statement: str, why: str
) -> None:
    cluster.server.load([node("node-1")])
    first = await cluster.start_daemon()
    await cluster.stop_daemon(first)
    # A start that finds the parsed snapshot reads no object row; the damage is met by
    # the next start that reads the rows (after a crash, or any change on disk).
    damage(cluster.db_path, "DELETE FROM snapshot")
    damage(cluster.db_path, statement)
    with caplog.at_level(logging.WARNING):
        second = await cluster.start_daemon()
    assert second.sync.opened.state == "rebuilt"
    assert second.sync.opened.moved_to is not None and Path(second.sync.opened.moved_to).exists()
    assert not second.sync.warm
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any(why in m for m in messages), messages
    # It schedules from the relist as if nothing had happened.
    assert "node-1" in second.cluster.nodes
    cluster.server.load([pod("p-after")])
    await eventually(
        lambda: cluster.node_of("p-after") == "node-1", what="scheduling after rebuild"
    )


@pytest.mark.parametrize(
    ("apply", "said"),
    [
        (snapshot_body(damaged_meta(labels=None)), ".meta.labels is NoneType, not dict"),
        (snapshot_body(MEMO_SLOT_200_MILLION), "which volsched never writes"),
        (sql("UPDATE meta SET value = CAST(X'FF' AS TEXT) || value"), "identity is unknown"),
    ],
    ids=["snapshot labels None", "snapshot memo slot", "identity not UTF-8"],
)
async def test_a_damaged_snapshot_or_identity_is_worked_around_and_scheduling_goes_on(
    cluster: Cluster, caplog: pytest.LogCaptureFixture, apply: Callable[[Path], None], said: str
) -> None:
    """The file is kept: a snapshot that cannot be used means the rows are read, an
    identity that cannot be read means the state is discarded and relisted."""
    cluster.server.load([node("node-1")])
    first = await cluster.start_daemon()
    await cluster.stop_daemon(first)
    apply(cluster.db_path)
    with caplog.at_level(logging.WARNING):
        second = await cluster.start_daemon()
    assert second.sync.opened.state == "warm"
    assert not second.sync.loaded_from_snapshot
    messages = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert any(said in m for m in messages), messages
    assert "node-1" in second.cluster.nodes
    cluster.server.load([pod("p-after")])
    await eventually(lambda: cluster.node_of("p-after") == "node-1", what="scheduling goes on")


@pytest.mark.parametrize(
    "controllers",
    [ControllerSettings(pv_bind_delay_seconds=8.0, provision_delay_seconds=0.05)],
)
@pytest.mark.parametrize("intent", ["[]", "garbage"])
async def test_a_bad_journal_row_is_skipped_and_recovery_finishes_the_rest(
    cluster: Cluster,
    controllers: ControllerSettings,
    caplog: pytest.LogCaptureFixture,
    intent: str,
) -> None:
    """Killed between the PV prebind and the pod binding, with a malformed intent beside
    the real one in the journal: the restart skips the bad row (one log line naming it),
    releases the prebind the good one recorded, and places the pod — the file is kept."""
    server = cluster.server
    nodes = [node("node-1"), node("node-2", "zone-b")]
    server.load([*nodes, storage_class("local"), local_pv("pv-1", "node-1"), claim("c1")])
    await kill_after_prebind(cluster, pod("p", ("c1",)), "pv-1")
    damage(
        cluster.db_path,
        "INSERT INTO journal (pod, node, intent, state, created_at, updated_at)"
        f" VALUES ('default/q', 'node-2', '{intent}', 'open', 0, 0)",
    )
    with caplog.at_level(logging.WARNING):
        daemon = await cluster.start_daemon()
    assert daemon.sync.opened.state == "warm"
    assert daemon.recovered is not None
    assert (daemon.recovered.released, daemon.recovered.kept) == (1, 0)
    skipped = [r.getMessage() for r in caplog.records if "skipping and removing" in r.getMessage()]
    assert len(skipped) == 1 and "journal row 2: intent" in skipped[0]
    await eventually(lambda: cluster.node_of("p") == "node-1", timeout=30, what="pod placed")
    await eventually(lambda: daemon.store.stats.journal_depth == 0, what="journal emptied")


@pytest.mark.parametrize(
    ("intent", "said"),
    [
        ('{"pod": "default/q", "prebinds": [5]}', "prebinds[0] is int, not an object"),
        ('{"pod": ["default", "q"]}', "pod is list, not text"),
        ('{"pod": "default/q", "replicas": [{"name": "r"}]}', "replicas[0].volume is missing"),
    ],
    ids=["prebind not an object", "pod a list", "replica without volume"],
)
async def test_a_journal_intent_that_is_no_binding_is_dropped_with_one_line(
    cluster: Cluster, caplog: pytest.LogCaptureFixture, intent: str, said: str
) -> None:
    """An intent that decodes but describes no binding cycle cannot be finished or
    undone: recovery drops it with one line naming the field — no traceback — and the
    daemon schedules."""
    cluster.server.load([node("node-1")])
    first = await cluster.start_daemon()
    await cluster.stop_daemon(first)
    damage(
        cluster.db_path,
        "INSERT INTO journal (pod, node, intent, state, created_at, updated_at)"
        f" VALUES ('default/q', 'node-1', '{intent}', 'open', 0, 0)",
    )
    with caplog.at_level(logging.WARNING):
        daemon = await cluster.start_daemon()
    assert daemon.sync.opened.state == "warm"
    dropped = [r for r in caplog.records if "dropping it" in r.getMessage()]
    assert len(dropped) == 1 and dropped[0].exc_info is None
    assert said in dropped[0].getMessage()
    assert daemon.store.stats.journal_depth == 0
    cluster.server.load([pod("p-after")])
    await eventually(lambda: cluster.node_of("p-after") == "node-1", what="scheduling goes on")


def test_migrate_verifies_and_says_what_is_wrong(tmp_path: Path) -> None:
    path = tmp_path / "volsched.db"

    def migrate() -> list[str]:
        done = subprocess.run(
            [sys.executable, "-m", "volsched", "migrate", "--database", str(path)],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert "Traceback" not in done.stderr
        return done.stdout.strip().splitlines()

    assert migrate()[-1].endswith("schema verified at revision 0003")
    assert migrate() == [f"{path}: schema verified at revision 0003"]
    damage(path, "DROP TABLE meta")
    report = migrate()
    assert report[0].startswith(
        f"{path}: unusable (table meta is missing at revision 0003); moved to "
    )
    assert report[1] == f"{path}: rebuilt, schema at revision 0003"
    assert migrate() == [f"{path}: schema verified at revision 0003"]
