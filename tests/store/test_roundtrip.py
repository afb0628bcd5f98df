"""Everything written comes back from ``load()`` after a restart, table by table."""

from __future__ import annotations

import gc
from pathlib import Path
from typing import Any

import pytest

from volsched.cache.errors import StoreError
from volsched.cache.store import Store, StoredState

from .conftest import NOW, Query, clock

POD: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web-0", "namespace": "team-a", "resourceVersion": "17"},
    "spec": {
        "nodeName": "",
        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "d"}}],
    },
}
PV: dict[str, Any] = {
    "apiVersion": "v1",
    "kind": "PersistentVolume",
    "metadata": {"name": "pv-1", "resourceVersion": "9", "annotations": {"note": "zoné ✓"}},
    "spec": {"capacity": {"storage": "10Gi"}, "claimRef": {"namespace": "team-a", "name": "d"}},
}


async def reopened(path: Path) -> StoredState:
    store, opened = await Store.open(str(path), clock=clock)
    try:
        assert opened.state == "warm"
        return await store.load()
    finally:
        await store.close()


async def test_a_new_store_loads_empty(store: Store) -> None:
    assert await store.load() == StoredState(objects={}, assumed={}, resume_points={}, journal=[])


async def test_objects_round_trip(store: Store, db_path: Path) -> None:
    store.put_object("Pod", "team-a/web-0", POD)
    store.put_object("PersistentVolume", "pv-1", PV)
    await store.close()
    state = await reopened(db_path)
    assert state.objects == {"Pod": {"team-a/web-0": POD}, "PersistentVolume": {"pv-1": PV}}
    assert state.assumed == {}


async def test_assumed_round_trip(store: Store, db_path: Path) -> None:
    claimed = {**PV, "spec": {**PV["spec"], "claimRef": {"namespace": "team-a", "name": "x"}}}
    store.put_object("PersistentVolume", "pv-1", PV)
    store.put_assumed("PersistentVolume", "pv-1", claimed)
    store.put_assumed("Pod", "team-a/web-0", {**POD, "spec": {"nodeName": "node-1"}})
    await store.close()
    state = await reopened(db_path)
    assert state.objects == {"PersistentVolume": {"pv-1": PV}}
    assert state.assumed == {
        "PersistentVolume": {"pv-1": claimed},
        "Pod": {"team-a/web-0": {**POD, "spec": {"nodeName": "node-1"}}},
    }


async def test_deletes_round_trip(store: Store, db_path: Path) -> None:
    store.put_object("Pod", "team-a/web-0", POD)
    store.put_assumed("Pod", "team-a/web-0", POD)
    await store.flush()
    store.delete_object("Pod", "team-a/web-0")
    store.delete_assumed("Pod", "team-a/web-0")
    store.delete_object("Pod", "never/was")
    await store.close()
    state = await reopened(db_path)
    assert state.objects == {} and state.assumed == {}


async def test_resume_points_round_trip(store: Store, db_path: Path) -> None:
    store.set_resume_point("Pod", "100")
    store.set_resume_point("Node", "7")
    store.set_resume_point("Pod", "101")
    await store.close()
    assert (await reopened(db_path)).resume_points == {"Pod": "101", "Node": "7"}


async def test_journal_round_trip(store: Store, db_path: Path) -> None:
    intent = {"prebind": {"pv-1": "team-a/d"}, "annotate": ["team-a/e"], "replicas": []}
    first = await store.journal_open("team-a/web-0", "node-1", intent)
    second = await store.journal_open("team-a/web-1", "node-2", {})
    await store.journal_update(second, state="prebound")
    await store.close()
    journal = (await reopened(db_path)).journal
    assert [(e.id, e.pod, e.node, e.intent, e.state) for e in journal] == [
        (first, "team-a/web-0", "node-1", intent, "open"),
        (second, "team-a/web-1", "node-2", {}, "prebound"),
    ]
    assert all(e.created_at == NOW and e.updated_at == NOW for e in journal)


async def test_stored_bodies_are_compact_json(store: Store, on_disk: Query) -> None:
    store.put_object("PersistentVolume", "pv-1", PV)
    await store.flush()
    ((body,),) = on_disk("SELECT body FROM objects")
    assert ": " not in body and ", " not in body
    assert "zoné ✓" in body  # UTF-8 text, not \\u escapes


async def test_load_freezes_the_loaded_heap_unless_told_not_to(store: Store) -> None:
    store.put_object("Pod", "team-a/web-0", POD)
    gc.unfreeze()
    await store.load(freeze=False)
    assert gc.get_freeze_count() == 0
    await store.load()
    assert gc.get_freeze_count() > 0
    assert gc.isenabled()


async def test_load_after_close_is_refused(db_path: Path) -> None:
    store, _ = await Store.open(str(db_path))
    await store.close()
    with pytest.raises(StoreError, match="closed"):
        await store.load()
