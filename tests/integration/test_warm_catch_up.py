"""A warm start catches up with the API server before it decides anything: changes made
while the daemon was down (a node deleted, another tainted) are in the cache by the
time it is ready, and no pod goes where they forbid."""

from __future__ import annotations

import aiohttp

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import node, pod


async def test_a_warm_restart_never_uses_a_deleted_or_newly_tainted_node(cluster: Cluster) -> None:
    server = cluster.server
    server.load([node("node-1"), node("node-2"), node("node-3")])
    first = await cluster.start_daemon()
    assert set(first.cluster.nodes) == {"node-1", "node-2", "node-3"}
    await cluster.stop_daemon(first)

    # While it is down: node-1 goes away, node-2 is tainted.
    async with aiohttp.ClientSession() as session:
        async with session.delete(f"{server.url}/api/v1/nodes/node-1") as response:
            assert response.status == 200
        async with session.get(f"{server.url}/api/v1/nodes/node-2") as response:
            tainted = await response.json()
        tainted.setdefault("spec", {})["taints"] = [
            {"key": "maintenance", "value": "yes", "effect": "NoSchedule"}
        ]
        async with session.put(f"{server.url}/api/v1/nodes/node-2", json=tainted) as response:
            assert response.status == 200

    # The resumed watches are slow to deliver what changed (a busy API server).
    server.faults.stall_watches(1.5)
    second = await cluster.start_daemon()
    assert second.sync.warm
    # Ready means caught up: the stale copies are gone before anything is decided.
    assert "node-1" not in second.cluster.nodes
    assert second.cluster.nodes["node-2"].node.taints
    server.load([pod(f"p{i}") for i in range(6)])
    await eventually(lambda: all(cluster.node_of(f"p{i}") for i in range(6)), what="pods placed")
    assert {cluster.node_of(f"p{i}") for i in range(6)} == {"node-3"}


async def test_a_garbage_resume_point_relists_instead_of_failing_forever(cluster: Cluster) -> None:
    server = cluster.server
    server.load([node("node-1")])
    first = await cluster.start_daemon()
    await cluster.stop_daemon(first)
    # Corrupt every stored resume point: the server answers 400 to such a watch.
    import sqlite3

    with sqlite3.connect(cluster.db_path) as connection:
        connection.execute("UPDATE resume_points SET resource_version = 'not-a-version'")
    connection.close()
    server.load([node("node-2")])
    second = await cluster.start_daemon()
    assert set(second.cluster.nodes) == {"node-1", "node-2"}
    assert all(w.state.synced for w in second.sync.watchers)
