"""A damaged database never stops a start: the daemon's own identity check and load
(``CacheSync``) and the journal read of recovery run over every file of the damage corpus,
and each ends as the corpus says — moved aside and rebuilt, or the bad part skipped with
a log line naming it — never an exception; the scheduler places a new pod after it; and
the damage is gone for the next start."""

from __future__ import annotations

import gc
import logging
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.store.damage import (
    DAMAGES,
    DISCARDED,
    DROPPED,
    LEFT_OUT,
    REBUILT,
    ROWS,
    SKIPPED,
    Damage,
    healthy_store,
)
from tests.store.damage_kit import NODE, POD
from volsched.cache.cluster import ClusterCache
from volsched.cache.store import Store, check_file
from volsched.daemon.watch.cache_sync import CacheSync
from volsched.daemon.watch.ingest import Ingest
from volsched.daemon.watch.watching import WatchSettings
from volsched.scheduling.framework.runner import Scheduler
from volsched.scheduling.profile_builder import PluginFactory, build_profile
from volsched.scheduling.scheduler_config import default_profile
from volsched.scheduling.simulation import simulate

NOW = 1_700_000_000.0


def clock() -> float:
    return NOW


class ThisCluster:
    """The one thing the start asks the API server before the load: the cluster's
    identity, the one the healthy file records."""

    async def get(self, kind: str, name: str) -> dict[str, Any]:
        assert (kind, name) == ("Namespace", "kube-system")
        return {"metadata": {"uid": "uid-1"}}


@pytest.fixture(autouse=True)
def _unfreeze_after_load() -> Iterator[None]:
    yield
    gc.unfreeze()


NEW_POD: dict[str, Any] = {
    **POD,
    "metadata": {"name": "after", "namespace": "ns", "uid": "u-after", "resourceVersion": "20"},
}


def placed_after_the_start(sync: CacheSync) -> str | None:
    """Where the scheduler puts a new pod once the start is over. A rebuilt or discarded
    store is empty until the relist, which brings the node back."""
    if "node-1" not in sync.cluster.nodes:
        sync.ingest.upsert("Node", NODE, persist=False)
    sync.ingest.upsert("Pod", NEW_POD, persist=False)
    cluster = sync.cluster
    profile = build_profile(default_profile(with_storage=True).policy, PluginFactory(cluster))
    result = simulate(cluster, Scheduler(cluster, profile, random.Random(0)), None)
    return next(o.decision.node for o in result.pods if o.decision.pod.meta.name == "after")


async def start_like_the_daemon(path: Path) -> tuple[CacheSync, list[int]]:
    """Open the store, load it and read the journal as a start does; the sync and the
    ids of the journal entries recovery would see."""
    cluster = ClusterCache()
    store, opened = await Store.open(str(path), clock=clock)
    try:
        ingest = Ingest(cluster, None, "default-scheduler", store)
        sync = CacheSync(
            ThisCluster(),  # type: ignore[arg-type]  # the load asks nothing else
            store,
            opened,
            ingest,
            cluster,
            WatchSettings(),
            str(path),
            on_restart=lambda kind: None,
        )
        await sync.check_cluster_identity()
        await sync.load_from_disk()
        entries = await store.journal_pending()
        sync.drop_restored()
    finally:
        await store.close()
    return sync, [entry.id for entry in entries]


def ends_as_the_corpus_says(
    damage: Damage, sync: CacheSync, journal: list[int], path: Path, said: list[str]
) -> None:
    """The start's outcome is the corpus's, and what it left on disk is healed."""
    if damage.outcome == REBUILT:
        assert sync.opened.state == "rebuilt"
        assert sync.opened.moved_to is not None and Path(sync.opened.moved_to).exists()
        assert not sync.cluster.nodes and journal == []
        assert check_file(path).healthy
        return
    assert sync.opened.state == "warm"
    if damage.outcome == DISCARDED:
        assert any("identity is unknown" in m and damage.says in m for m in said)
        assert sync.discarded_foreign_state
        assert not sync.cluster.nodes and journal == []
        assert check_file(path).healthy
        return
    assert not sync.discarded_foreign_state
    assert "node-1" in sync.cluster.nodes
    if damage.outcome == SKIPPED:
        assert any("skipping and removing the entry" in m and damage.says in m for m in said)
        assert journal == ([] if damage.name != "a second journal row, malformed" else [1])
        # The bad row went with the close's flush: the next start does not meet it.
        remaining = sqlite3.connect(path).execute("SELECT id FROM journal").fetchall()
        assert remaining == [(entry,) for entry in journal]
    else:
        assert journal == [1]
    if damage.outcome == ROWS:
        assert not sync.loaded_from_snapshot
        assert any("snapshot unusable" in m for m in said)
        assert set(sync.cluster.pods) == {"ns/p"}
    if damage.outcome == LEFT_OUT:
        assert not sync.cluster.pods
        assert any("skipping a malformed object" in m and damage.says in m for m in said)
    if damage.outcome == DROPPED:
        assert set(sync.cluster.pods) == {"ns/p"}
    if damage.outcome in (SKIPPED, DROPPED):
        # Skipped journal rows and dropped assumptions went with the flush at the close.
        assert check_file(path).healthy


@pytest.mark.parametrize("damage", DAMAGES, ids=[d.name for d in DAMAGES])
async def test_a_damaged_store_is_rebuilt_or_worked_around_never_crashed_on(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, damage: Damage
) -> None:
    path = tmp_path / "volsched.db"
    await healthy_store(path, clock)
    if damage.outcome != ROWS:
        # A start that finds the parsed snapshot reads no object row; the damage is met
        # by the next start that reads them (after a crash, or any change on disk).
        with sqlite3.connect(path) as connection:
            connection.execute("DELETE FROM snapshot")
        connection.close()
    damage.apply(path)
    with caplog.at_level(logging.INFO):
        sync, journal = await start_like_the_daemon(path)
    said = [record.getMessage() for record in caplog.records]
    assert all("\n" not in message for message in said)
    assert all(record.exc_info is None for record in caplog.records)
    ends_as_the_corpus_says(damage, sync, journal, path, said)
    assert placed_after_the_start(sync) == "node-1"


@pytest.mark.parametrize("damage", DAMAGES, ids=[d.name for d in DAMAGES])
async def test_the_resume_points_peeked_before_the_load_are_text_or_none(
    tmp_path: Path, damage: Damage
) -> None:
    """The watches open on the resume points before the load judges the file: a point
    that is not text is no point at all, never a watch resumed from b'\\x00\\xff'."""
    path = tmp_path / "volsched.db"
    await healthy_store(path, clock)
    damage.apply(path)
    store, _ = await Store.open(str(path), clock=clock)
    try:
        points = await store.peek_resume_points()
    finally:
        await store.close()
    assert all(isinstance(k, str) and isinstance(v, str) for k, v in points.items())
    if "resume" in damage.name or "resource version" in damage.name:
        assert points == {}
