"""A corpus of damaged store files: a healthy file with every table filled (see
``damage_kit``), and the ways it can go wrong underneath SQLite — torn writes, hand
edits, a disk returning the wrong bytes, a file of a newer version or of something else:

- the file itself and its schema (below);
- every column of every table, each way its values can be wrong (``damage_columns``);
- the snapshot's bodies (``damage_snapshots``);
- rows that decode but do not parse, and a bad journal row beside a good one (below).

Each damage names what the daemon does about it (``REBUILT``, ``SKIPPED``, ``ROWS``,
``LEFT_OUT``, ``DROPPED``, ``DISCARDED``: see ``damage_kit``) and a word the report of
``volsched migrate --check`` — and the daemon's log — must hold.
"""

from __future__ import annotations

from .damage_columns import COLUMN_DAMAGES
from .damage_kit import (
    DEEP_OBJECTS,
    DISCARDED,
    DROPPED,
    LEFT_OUT,
    REBUILT,
    ROWS,
    SKIPPED,
    Damage,
    healthy_store,
    overwrite,
    replace_file,
    sql,
    truncate,
)
from .damage_snapshots import SNAPSHOT_DAMAGES

__all__ = [
    "DAMAGES",
    "DISCARDED",
    "DROPPED",
    "LEFT_OUT",
    "REBUILT",
    "ROWS",
    "SKIPPED",
    "Damage",
    "healthy_store",
]

FILE_DAMAGES: list[Damage] = [
    # -- the file itself ---------------------------------------------------------------
    Damage("truncated to half", truncate(-1), REBUILT, ""),
    Damage("truncated to its header", truncate(100), REBUILT, ""),
    Damage("not a database", replace_file(b"this is not a database" * 100), REBUILT, "SQLite"),
    Damage(
        "header, then garbage", replace_file(b"SQLite format 3\x00" + b"\xff" * 8000), REBUILT, ""
    ),
    Damage("a page zeroed", overwrite(4096, b"\x00" * 4096), REBUILT, ""),
    Damage("a page scrambled", overwrite(4096 * 2, bytes(range(256)) * 16), REBUILT, ""),
    # -- the schema ---------------------------------------------------------------------
    Damage("objects dropped", sql("DROP TABLE objects"), REBUILT, "objects is missing"),
    Damage("assumed dropped", sql("DROP TABLE assumed"), REBUILT, "assumed is missing"),
    Damage("resume points dropped", sql("DROP TABLE resume_points"), REBUILT, "missing"),
    Damage("journal dropped", sql("DROP TABLE journal"), REBUILT, "journal is missing"),
    Damage("meta dropped", sql("DROP TABLE meta"), REBUILT, "meta is missing"),
    Damage("snapshot dropped", sql("DROP TABLE snapshot"), REBUILT, "snapshot is missing"),
    Damage("a column dropped", sql("ALTER TABLE objects DROP COLUMN body"), REBUILT, "lacks body"),
    Damage("a table renamed", sql("ALTER TABLE objects RENAME TO things"), REBUILT, "missing"),
    Damage(
        "two rows in alembic_version",
        sql("INSERT INTO alembic_version VALUES ('0002')"),
        REBUILT,
        "alembic_version holds 2 rows",
    ),
    Damage(
        "alembic_version emptied",
        sql("DELETE FROM alembic_version"),
        REBUILT,
        "alembic_version holds 0 rows",
    ),
    Damage(
        "a revision from the future",
        sql("UPDATE alembic_version SET version_num = '9999'"),
        REBUILT,
        "unknown",
    ),
    Damage(
        "alembic_version holds a blob",
        sql("UPDATE alembic_version SET version_num = X'00'"),
        REBUILT,
        "not a revision",
    ),
    Damage(
        "alembic_version dropped",
        sql("DROP TABLE alembic_version"),
        REBUILT,
        "not a volsched store",
    ),
    # -- rows that decode, and do not parse or restore ----------------------------------
    Damage(
        "a body of 300 nested objects",
        sql("UPDATE objects SET body = ? WHERE kind = 'Node'", params=(DEEP_OBJECTS,)),
        REBUILT,
        "nested deeper",
    ),
    Damage(
        "an object that does not parse",
        sql(
            "UPDATE objects SET body = ? WHERE kind = 'Pod'",
            params=('{"metadata": {"name": "p", "namespace": "ns"}, "spec": {"priority": 1e99}}',),
        ),
        LEFT_OUT,
        "priority",
    ),
    Damage(
        "a key that is a blob, in a row of its own",
        sql("INSERT INTO objects (kind, key, body) VALUES ('Node', X'6E', '{}')"),
        REBUILT,
        "key is bytes",
    ),
    Damage(
        "an assumed pod whose spec is a list",
        sql("UPDATE assumed SET body = '{\"spec\": [1]}'"),
        DROPPED,
        "spec",
    ),
    Damage(
        "an assumed volume that does not parse",
        sql(
            "INSERT INTO assumed (kind, key, body) VALUES ('PersistentVolume', 'pv-1', ?)",
            params=('{"metadata": {"name": "pv-1"}, "spec": {"capacity": {"storage": "lots"}}}',),
        ),
        DROPPED,
        "lots",
    ),
    Damage(
        "a second journal row, malformed",
        sql(
            "INSERT INTO journal (pod, node, intent, state, created_at, updated_at)"
            " VALUES ('ns/q', 'node-1', '{oops', 'open', 0, 0)"
        ),
        SKIPPED,
        "journal row 2",
    ),
]

DAMAGES: list[Damage] = [*FILE_DAMAGES, *COLUMN_DAMAGES, *SNAPSHOT_DAMAGES]
