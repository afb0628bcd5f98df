"""The parsed-cache snapshot: used only while it mirrors the rows and was taken by this
code, and a hostile one is refused without running anything."""

from __future__ import annotations

import copyreg
import logging
import pickle
from pathlib import Path
from typing import Any

import pytest

from volsched.cache.objects.core import Node
from volsched.cache.objects.registry import KINDS
from volsched.cache.store import Store
from volsched.cache.store import snapshot as codec

from .conftest import Query, clock

NODE: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "node-1", "resourceVersion": "5", "labels": {"zone": "a"}},
    "status": {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}},
}
PV: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "PersistentVolume",
    "metadata": {"name": "pv-1", "resourceVersion": "9"},
    "spec": {
        "capacity": {"storage": "10Gi"},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "local",
        "nodeAffinity": {
            "required": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n"]}
                        ]
                    }
                ]
            }
        },
    },
}
PV_TEXT = '{"kind":"PersistentVolume"}'


def parsed() -> dict[str, dict[str, Any]]:
    return {
        "Node": {"node-1": KINDS["Node"].parse(NODE)},
        "PersistentVolume": {"pv-1": KINDS["PersistentVolume"].parse(PV)},
    }


async def kept(store: Store) -> None:
    store.put_object("Node", "node-1", NODE)
    store.put_object("PersistentVolume", "pv-1", PV)
    parts = codec.encode(parsed(), {"PersistentVolume": {"pv-1": PV_TEXT}})
    assert await store.write_snapshot(codec.fingerprint(), parts)


async def test_a_kept_snapshot_replaces_the_rows_at_load(store: Store) -> None:
    await kept(store)
    state = await store.load(snapshot_fingerprint=codec.fingerprint())
    assert state.objects == {}
    assert state.snapshot is not None
    assert state.snapshot.views == parsed()
    assert state.snapshot.raw == {"PersistentVolume": {"pv-1": PV_TEXT}}
    # Without a fingerprint (other readers of the file), the rows as always.
    assert (await store.load()).objects["Node"] == {"node-1": NODE}


@pytest.mark.parametrize(
    "change",
    [
        lambda store: store.put_object("Node", "node-2", {**NODE, "metadata": {"name": "node-2"}}),
        lambda store: store.delete_object("PersistentVolume", "pv-1"),
        lambda store: store.replace_kind("Node", {"node-1": NODE}, "12"),
    ],
    ids=["put", "delete", "relist"],
)
async def test_any_object_write_ends_the_snapshot(
    store: Store, on_disk: Query, change: Any
) -> None:
    await kept(store)
    store.set_resume_point("Node", "11")
    await store.flush()
    assert on_disk("SELECT count(*) FROM snapshot") == [(2,)]  # resume points leave it be
    change(store)
    await store.flush()
    assert on_disk("SELECT count(*) FROM snapshot") == [(0,)]
    state = await store.load(snapshot_fingerprint=codec.fingerprint())
    assert state.snapshot is None and "Node" in state.objects


async def test_a_snapshot_from_other_code_is_not_used(
    store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    await kept(store)
    with caplog.at_level(logging.INFO, "volsched.store"):
        state = await store.load(snapshot_fingerprint="another build")
    assert state.snapshot is None
    assert state.objects["PersistentVolume"] == {"pv-1": PV}
    assert "taken by other code" in caplog.text


class Explode:
    """Unpickling this would run os.system."""

    def __reduce__(self) -> tuple[Any, ...]:
        import os

        return (os.system, ("echo pwned > /dev/null",))


class ShortState:
    """Pickles as a Node whose state has one field, as a damaged file could hold it
    (pickle checks that the object is of the class it is rebuilt as)."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return Node

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (copyreg.__newobj__, (Node,), ("only one field",))


@pytest.mark.parametrize(
    ("body", "why"),
    [
        (b"not a pickle", "does not start as a pickle"),
        # Calling anything (REDUCE) is refused before the unpickler runs, naming a
        # callable that is not a view class once it does.
        (pickle.dumps((codec.FORMAT, {"Node": Explode()}, {})), "opcode 0x52"),
        (pickle.dumps((codec.FORMAT, {"Node": Path("/")}, {})), "opcode 0x52"),
        (pickle.dumps(Path, protocol=5), "which is not a view class"),
        (pickle.dumps((codec.FORMAT + 1, {}, {})), "not in this version's format"),
        (pickle.dumps(["a list"]), "not in this version's format"),
        (
            pickle.dumps((codec.FORMAT, {"Node": {"node-1": ShortState()}}, {})),
            "ValueError: Node: a pickled state of 1 fields",
        ),
    ],
    ids=["garbage", "code", "foreign-call", "foreign-class", "format", "shape", "short-state"],
)
async def test_an_unusable_snapshot_falls_back_to_the_rows_without_running_anything(
    store: Store, caplog: pytest.LogCaptureFixture, body: bytes, why: str
) -> None:
    store.put_object("Node", "node-1", NODE)
    good = codec.encode(parsed(), {})
    assert await store.write_snapshot(codec.fingerprint(), [*good, body])
    with caplog.at_level(logging.WARNING, "volsched.store"):
        state = await store.load(snapshot_fingerprint=codec.fingerprint())
    assert state.snapshot is None
    assert state.objects == {"Node": {"node-1": NODE}}
    assert "snapshot unusable" in caplog.text and why in caplog.text


async def test_the_snapshot_survives_a_reopen_and_is_discarded_with_the_cluster_state(
    db_path: Path,
) -> None:
    store, _ = await Store.open(str(db_path), clock=clock)
    await kept(store)
    await store.close()
    store, _ = await Store.open(str(db_path), clock=clock)
    try:
        assert (await store.load(snapshot_fingerprint=codec.fingerprint())).snapshot is not None
        await store.discard_cluster_state()
        state = await store.load(snapshot_fingerprint=codec.fingerprint())
        assert state.snapshot is None and state.objects == {}
    finally:
        await store.close()


async def test_a_snapshot_is_kept_in_parts_made_one_at_a_time(store: Store, on_disk: Query) -> None:
    views = {
        "Node": {
            f"node-{i}": KINDS["Node"].parse({**NODE, "metadata": {"name": f"node-{i}"}})
            for i in range(7)
        },
        "PersistentVolume": parsed()["PersistentVolume"],
    }
    made: list[int] = []

    def parts() -> Any:
        for body in codec.encode(views, {"PersistentVolume": {"pv-1": PV_TEXT}}, 3):
            made.append(len(body))
            yield body

    assert await store.write_snapshot(codec.fingerprint(), parts()) == sum(made)
    assert len(made) == 4  # 3 + 3 + 1 nodes, then the PV
    assert on_disk("SELECT id FROM snapshot ORDER BY id") == [(0,), (1,), (2,), (3,)]
    state = await store.load(snapshot_fingerprint=codec.fingerprint())
    assert state.snapshot is not None
    assert state.snapshot.views == views
    assert state.snapshot.raw == {"PersistentVolume": {"pv-1": PV_TEXT}}


def test_the_fingerprint_names_the_code_that_parses() -> None:
    assert codec.fingerprint() == codec.fingerprint()
    assert len(codec.fingerprint()) == 64
