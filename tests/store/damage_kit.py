"""What the damage corpus (``damage``) is built from: a healthy file with every table
filled, the ways to damage it, and what the daemon does about each damage:

- ``REBUILT``: the file is moved aside and rebuilt (at open, or at the first load);
- ``SKIPPED``: a journal entry is skipped (and removed), the rest of the file kept;
- ``ROWS``: the snapshot is not used, the object rows are read instead;
- ``LEFT_OUT``: an object that decodes but does not parse is left out of the cache;
- ``DROPPED``: an assumption that decodes but cannot be restored is dropped;
- ``DISCARDED``: the stored state is discarded as another cluster's.
"""

from __future__ import annotations

import pickle
import re
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


def allow_null(table: str, column: str) -> Callable[[Path], None]:
    """Drop the column's NOT NULL from the schema, as a hand edit of the file could (SQLite
    keeps the constraint otherwise, so no statement could store a NULL there)."""

    def apply(path: Path) -> None:
        connection = sqlite3.connect(path)
        try:
            (definition,) = connection.execute(
                "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)
            ).fetchone()
            loosened = re.sub(rf"(\b{column}\b[^,]*?) NOT NULL", r"\1", definition)
            assert loosened != definition, (table, column)
            connection.execute("PRAGMA writable_schema = ON")
            connection.execute(
                "UPDATE sqlite_master SET sql = ? WHERE type = 'table' AND name = ?",
                (loosened, table),
            )
            (version,) = connection.execute("PRAGMA schema_version").fetchone()
            connection.execute(f"PRAGMA schema_version = {version + 1}")
            connection.commit()
        finally:
            connection.close()

    return apply


def pickled(value: Any) -> bytes:
    return pickle.dumps(value, protocol=pickle.HIGHEST_PROTOCOL)


def snapshot_body(body: Any) -> Callable[[Path], None]:
    """Every snapshot row replaced by one part with ``body`` (this code's fingerprint)."""
    return sql(
        "DELETE FROM snapshot",
        "INSERT INTO snapshot (id, fingerprint, taken_at, body) VALUES (0, ?, 0, ?)",
        params=(codec.fingerprint(), body),
    )


def truncate(size: int) -> Callable[[Path], None]:
    def apply(path: Path) -> None:
        checkpoint(path)
        data = path.read_bytes()
        path.write_bytes(data[: size if size >= 0 else len(data) // 2])

    return apply


def overwrite(offset: int, data: bytes) -> Callable[[Path], None]:
    def apply(path: Path) -> None:
        checkpoint(path)
        with path.open("r+b") as handle:
            handle.seek(offset)
            handle.write(data)

    return apply


def checkpoint(path: Path) -> None:
    """Fold the WAL into the main file, so damaging the file damages everything."""
    connection = sqlite3.connect(path)
    try:
        connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        connection.execute("PRAGMA journal_mode=DELETE")
    finally:
        connection.close()


def replace_file(data: bytes) -> Callable[[Path], None]:
    def apply(path: Path) -> None:
        checkpoint(path)
        path.write_bytes(data)

    return apply


DEEP_ARRAYS = "[" * 5000 + "]" * 5000
DEEP_OBJECTS = '{"a":' * 300 + "1" + "}" * 300
HUGE_NUMBER = '{"a":1' + "0" * 5000 + "}"


def part(views: Any, raw: Any = None, fmt: int = codec.FORMAT) -> bytes:
    return pickled((fmt, views, {} if raw is None else raw))


def node_view() -> Any:
    return KINDS["Node"].parse(NODE)
