"""A corpus of damaged store files: a healthy file with every table filled, and the ways
it can go wrong underneath SQLite (torn writes, hand edits, a disk returning the wrong
bytes, a file of a newer version or of something else).

Each damage names what the daemon does about it:

- ``REBUILT``: the file is moved aside and rebuilt (at open, or at the first load);
- ``SKIPPED``: a journal entry is skipped (and removed), the rest of the file kept;
- ``ROWS``: the snapshot is not used, the object rows are read instead;
- ``LEFT_OUT``: an object that decodes but does not parse is left out of the cache;
- ``DROPPED``: an assumption that decodes but cannot be restored is dropped;
- ``DISCARDED``: the stored state is discarded as another cluster's.
"""

from __future__ import annotations

import os
import pickle
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from volsched.cache.objects.registry import KINDS
from volsched.cache.store import Store
from volsched.cache.store import snapshot as codec

REBUILT = "rebuilt"
SKIPPED = "skipped"
ROWS = "rows"
LEFT_OUT = "left out"
DROPPED = "dropped"
DISCARDED = "discarded"

NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "node-1", "resourceVersion": "5"},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
}
POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "p", "namespace": "ns", "resourceVersion": "6"},
    "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
}
PV: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "PersistentVolume",
    "metadata": {"name": "pv-1", "resourceVersion": "9"},
    "spec": {"capacity": {"storage": "10Gi"}, "accessModes": ["ReadWriteOnce"]},
}
INTENT = {"pod": "ns/p", "podUID": "u", "node": "node-1", "prebinds": [], "provisions": []}


async def healthy_store(path: Path, clock: Callable[[], float]) -> None:
    """A file with rows in every table: objects, assumed, resume points, journal, meta
    and a snapshot taken by this code."""
    store, _ = await Store.open(str(path), clock=clock)
    for kind, raw in (("Node", NODE), ("Pod", POD), ("PersistentVolume", PV)):
        key = raw["metadata"]["name"]
        if "namespace" in raw["metadata"]:
            key = f"{raw['metadata']['namespace']}/{key}"
        store.put_object(kind, key, raw)
    store.put_assumed("Pod", "ns/p", {**POD, "spec": {**POD["spec"], "nodeName": "node-1"}})
    store.set_resume_point("Node", "5")
    await store.journal_open("ns/p", "node-1", INTENT)
    await store.write_meta("cluster.kube-system-uid", "uid-1")
    views = {kind: {key: view} for kind, key, view in _views()}
    parts = codec.encode(views, {"PersistentVolume": {"pv-1": '{"kind":"PersistentVolume"}'}})
    assert await store.write_snapshot(codec.fingerprint(), parts)
    await store.close()


def _views() -> list[tuple[str, str, Any]]:
    return [
        ("Node", "node-1", KINDS["Node"].parse(NODE)),
        ("Pod", "ns/p", KINDS["Pod"].parse(POD)),
        ("PersistentVolume", "pv-1", KINDS["PersistentVolume"].parse(PV)),
    ]


@dataclass(frozen=True)
class Damage:
    name: str
    apply: Callable[[Path], None]
    outcome: str
    # A word the report (of the daemon's log, or ``migrate --check``) must hold.
    says: str


def sql(*statements: str, params: tuple[Any, ...] = ()) -> Callable[[Path], None]:
    def apply(path: Path) -> None:
        connection = sqlite3.connect(path)
        try:
            for statement in statements:
                connection.execute(statement, params if "?" in statement else ())
            connection.commit()
        finally:
            connection.close()

    return apply


def _pickled(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def snapshot_body(body: Any) -> Callable[[Path], None]:
    """Every snapshot row replaced by one part with ``body`` (this code's fingerprint)."""
    return sql(
        "DELETE FROM snapshot",
        "INSERT INTO snapshot (id, fingerprint, taken_at, body) VALUES (0, ?, 0, ?)",
        params=(codec.fingerprint(), body),
    )


def _truncate(size: int) -> Callable[[Path], None]:
    def apply(path: Path) -> None:
        _checkpoint(path)
        data = path.read_bytes()
        path.write_bytes(data[: size if size >= 0 else len(data) // 2])

    return apply


def _overwrite(offset: int, data: bytes) -> Callable[[Path], None]:
    def apply(path: Path) -> None:
        _checkpoint(path)
        with path.open("r+b") as handle:
            handle.seek(offset)
            handle.write(data)

    return apply


def _checkpoint(path: Path) -> None:
    """Fold the WAL into the main file, so damaging the file damages everything."""
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        connection.execute("PRAGMA journal_mode=DELETE")
    finally:
        connection.close()


def _replace_file(data: bytes) -> Callable[[Path], None]:
    def apply(path: Path) -> None:
        _checkpoint(path)
        path.write_bytes(data)

    return apply


DEEP_ARRAYS = "[" * 5000 + "]" * 5000
DEEP_OBJECTS = '{"a":' * 300 + "1" + "}" * 300
HUGE_NUMBER = '{"a":1' + "0" * 5000 + "}"


def _part(views: Any, raw: Any = None, fmt: int = codec.FORMAT) -> bytes:
    return _pickled((fmt, views, {} if raw is None else raw))


def _node_view() -> Any:
    return KINDS["Node"].parse(NODE)


DAMAGES: list[Damage] = [
    # -- the file itself ---------------------------------------------------------------
    Damage("truncated to half", _truncate(-1), REBUILT, ""),
    Damage("truncated to its header", _truncate(100), REBUILT, ""),
    Damage("not a database", _replace_file(b"this is not a database" * 100), REBUILT, "SQLite"),
    Damage(
        "header, then garbage", _replace_file(b"SQLite format 3\x00" + b"\xff" * 8000), REBUILT, ""
    ),
    Damage("a page zeroed", _overwrite(4096, b"\x00" * 4096), REBUILT, ""),
    Damage("a page scrambled", _overwrite(4096 * 2, bytes(range(256)) * 16), REBUILT, ""),
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
    # -- object rows --------------------------------------------------------------------
    Damage(
        "a body that is not JSON",
        sql("UPDATE objects SET body = '{not json' WHERE kind = 'Node'"),
        REBUILT,
        "cannot be decoded",
    ),
    Damage(
        "a body that is a list",
        sql("UPDATE objects SET body = '[1, 2]' WHERE kind = 'Node'"),
        REBUILT,
        "not a JSON object",
    ),
    Damage(
        "a body that is null",
        sql("UPDATE objects SET body = 'null' WHERE kind = 'Pod'"),
        REBUILT,
        "not a JSON object",
    ),
    Damage(
        "a body that is a number",
        sql("UPDATE objects SET body = 42 WHERE kind = 'Pod'"),
        REBUILT,
        "not a JSON object",
    ),
    Damage(
        "a body of 5,000 nested arrays",
        sql(
            "UPDATE objects SET body = ? WHERE kind = 'Node'", params=('{"a":' + DEEP_ARRAYS + "}",)
        ),
        REBUILT,
        "nested deeper",
    ),
    Damage(
        "a body of 300 nested objects",
        sql("UPDATE objects SET body = ? WHERE kind = 'Node'", params=(DEEP_OBJECTS,)),
        REBUILT,
        "nested deeper",
    ),
    Damage(
        "a body with a 5,000-digit number",
        sql("UPDATE objects SET body = ? WHERE kind = 'Node'", params=(HUGE_NUMBER,)),
        REBUILT,
        "cannot be decoded",
    ),
    Damage(
        "a body that is not UTF-8",
        sql("UPDATE objects SET body = X'FFFE7B7D' WHERE kind = 'Node'"),
        REBUILT,
        "not UTF-8",
    ),
    Damage(
        "a body that is a blob of JSON",
        sql("UPDATE objects SET body = CAST('[]' AS BLOB) WHERE kind = 'Node'"),
        REBUILT,
        "not a JSON object",
    ),
    Damage(
        "a kind that is a blob",
        sql("UPDATE objects SET kind = X'00' WHERE kind = 'Node'"),
        REBUILT,
        "not text",
    ),
    Damage(
        "a key that is a blob",
        sql("INSERT INTO objects (kind, key, body) VALUES ('Node', X'6E', '{}')"),
        REBUILT,
        "key is bytes",
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
    # -- assumed rows -------------------------------------------------------------------
    Damage(
        "an assumed body that is not JSON",
        sql("UPDATE assumed SET body = 'x'"),
        REBUILT,
        "cannot be decoded",
    ),
    Damage(
        "an assumed body nested 5,000 deep",
        sql("UPDATE assumed SET body = ?", params=('{"spec":' + DEEP_ARRAYS + "}",)),
        REBUILT,
        "nested deeper",
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
    # -- resume points ------------------------------------------------------------------
    Damage(
        "a resource version that is a blob",
        sql("UPDATE resume_points SET resource_version = X'00FF'"),
        REBUILT,
        "resource_version is bytes",
    ),
    Damage(
        "a resume kind that is a blob",
        sql("UPDATE resume_points SET kind = X'01'"),
        REBUILT,
        "kind is bytes",
    ),
    # -- journal rows -------------------------------------------------------------------
    Damage(
        "a journal intent that is not JSON",
        sql("UPDATE journal SET intent = 'garbage'"),
        SKIPPED,
        "journal row 1",
    ),
    Damage(
        "a journal intent that is a list",
        sql("UPDATE journal SET intent = '[]'"),
        SKIPPED,
        "not a JSON object",
    ),
    Damage(
        "a journal intent nested 5,000 deep",
        sql("UPDATE journal SET intent = ?", params=('{"pod":' + DEEP_ARRAYS + "}",)),
        SKIPPED,
        "nested deeper",
    ),
    Damage(
        "a journal time that is text",
        sql("UPDATE journal SET created_at = 'yesterday'"),
        SKIPPED,
        "created_at",
    ),
    Damage(
        "a journal pod that is a blob",
        sql("UPDATE journal SET pod = X'00'"),
        SKIPPED,
        "pod is bytes",
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
    # -- meta -------------------------------------------------------------------------------
    Damage(
        "a cluster identity that is a blob",
        sql("UPDATE meta SET value = X'00' WHERE key = 'cluster.kube-system-uid'"),
        DISCARDED,
        "value is bytes",
    ),
    # -- the snapshot -------------------------------------------------------------------
    Damage("a snapshot of garbage", snapshot_body(b"\x80\x05garbage"), ROWS, "cannot be read"),
    Damage("a snapshot that is text", snapshot_body("text"), ROWS, ""),
    Damage(
        "a snapshot that unpickles to an int",
        snapshot_body(_pickled(5)),
        ROWS,
        "format",
    ),
    Damage(
        "a snapshot of another format",
        snapshot_body(_part({}, fmt=99)),
        ROWS,
        "format",
    ),
    Damage(
        "a snapshot whose pod is an int",
        snapshot_body(_part({"Pod": {"ns/p": 5}})),
        ROWS,
        "is a int, not a Pod",
    ),
    Damage(
        "a snapshot whose pod is a node",
        snapshot_body(_part({"Pod": {"ns/p": _node_view()}})),
        ROWS,
        "is a Node, not a Pod",
    ),
    Damage(
        "a snapshot with a view under another key",
        snapshot_body(_part({"Node": {"elsewhere": _node_view()}})),
        ROWS,
        "another key",
    ),
    Damage(
        "a snapshot of an unknown kind",
        snapshot_body(_part({"Gadget": {"g": _node_view()}})),
        ROWS,
        "not of a kind",
    ),
    Damage(
        "a snapshot whose raw texts are ints",
        snapshot_body(_part({}, {"PersistentVolume": {"pv-1": 5}})),
        ROWS,
        "not text",
    ),
    Damage(
        "a snapshot naming os.system",
        snapshot_body(_pickled(os.system)),
        ROWS,
        "not a view class",
    ),
]
