"""A clean stop keeps the parsed cache; the next start loads it instead of parsing every
stored object, ends with exactly the cache a start from the rows builds, and schedules
on it. After any change to the objects on disk, or a crash, the rows are read."""

from __future__ import annotations

import sqlite3
from typing import Any

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import claim, local_pv, node, pod, storage_class
from volsched.daemon.runtime.app import Daemon


def snapshot_rows(cluster: Cluster) -> int:
    with sqlite3.connect(cluster.db_path) as connection:
        (count,) = connection.execute("SELECT count(*) FROM snapshot").fetchone()
    connection.close()
    return int(count)


def drop_snapshot(cluster: Cluster) -> None:
    with sqlite3.connect(cluster.db_path) as connection:
        connection.execute("DELETE FROM snapshot")
    connection.close()


def cache_image(daemon: Daemon) -> tuple[Any, ...]:
    """Everything a start puts in the cache, comparably."""
    views = daemon.ingest.views()
    raw = {kind: by_key for kind, by_key in daemon.ingest.raw.items() if by_key}
    nodes = {name: sorted(info.pods) for name, info in daemon.cluster.nodes.items()}
    return views, raw, nodes, sorted(daemon.queue.lengths().items())


async def test_a_clean_stop_keeps_a_snapshot_that_loads_the_same_cache(cluster: Cluster) -> None:
    server = cluster.server
    tainted = node("node-2", "zone-b")
    tainted["spec"] = {"taints": [{"key": "gpu", "value": "yes", "effect": "NoSchedule"}]}
    server.load(
        [
            node("node-1", "zone-a"),
            tainted,
            storage_class("local"),
            *(local_pv(f"pv-{i}", f"node-{1 + i % 2}") for i in range(6)),
            claim("c1"),
            pod("running", cpu="1"),
        ]
    )
    first = await cluster.start_daemon()
    await eventually(lambda: cluster.node_of("running"), what="a pod placed")
    await cluster.stop_daemon(first)
    assert snapshot_rows(cluster) > 0

    from_snapshot = await cluster.start_daemon()
    assert from_snapshot.sync.warm and from_snapshot.sync.loaded_from_snapshot
    image = cache_image(from_snapshot)
    await cluster.stop_daemon(from_snapshot)

    drop_snapshot(cluster)
    from_rows = await cluster.start_daemon()
    assert from_rows.sync.warm and not from_rows.sync.loaded_from_snapshot
    assert cache_image(from_rows) == image
    await cluster.stop_daemon(from_rows)

    # And it schedules: a claim waiting for its first consumer gets a node-1 volume.
    again = await cluster.start_daemon()
    assert again.sync.loaded_from_snapshot
    server.load([pod("db", ("c1",))])
    await eventually(lambda: cluster.node_of("db") == "node-1", what="db placed on node-1")


async def test_after_a_change_on_disk_or_a_crash_the_rows_are_read(cluster: Cluster) -> None:
    server = cluster.server
    server.load([node("node-1"), storage_class("local"), local_pv("pv-1", "node-1")])
    first = await cluster.start_daemon()
    await cluster.stop_daemon(first)
    assert snapshot_rows(cluster) > 0

    # A daemon that changes objects on disk and then dies without a clean stop.
    await cluster.kill_daemon_once(
        [local_pv("pv-2", "node-1")],
        lambda: snapshot_rows(cluster) == 0,
        what="the new PV written, ending the snapshot",
    )
    second = await cluster.start_daemon()
    assert second.sync.warm and not second.sync.loaded_from_snapshot
    assert {pv.meta.name for pv in second.cluster.pvs.values()} == {"pv-1", "pv-2"}
