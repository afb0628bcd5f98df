"""A warm start against an API server that bookmarks as kube-apiserver does (a 3 s
catch-up watch's bookmark up to 2.25 s in): ready no later than a cold start plus a
small margin, and still holding every change made while the daemon was down."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import aiohttp
import pytest

from tests.integration.conftest import FAST, Cluster
from tests.integration.objects import node, pod
from volsched.daemon.runtime.app import Daemon
from volsched.emulator import ApiServer

# How much later than the cold start the warm one may be ready (the load from disk).
MARGIN_SECONDS = 0.3
NODES, PODS = 30, 150


@pytest.fixture
async def cluster(tmp_path: Path) -> AsyncIterator[Cluster]:
    server = ApiServer(controllers=FAST, bookmark_cadence="apiserver", bookmark_seed=3)
    await server.start()
    placed = []
    for index in range(PODS):
        running = pod(f"p{index:03d}")
        running["spec"]["nodeName"] = f"node-{index % NODES:02d}"
        placed.append(running)
    server.load([node(f"node-{i:02d}") for i in range(NODES)] + placed)
    running_cluster = Cluster(server, tmp_path)
    yield running_cluster
    await running_cluster.close()
    await server.stop()


async def timed_start(cluster: Cluster) -> tuple[float, Daemon]:
    started = time.perf_counter()
    daemon = await cluster.start_daemon(lead=False)
    return time.perf_counter() - started, daemon


async def test_a_warm_start_is_ready_no_later_than_a_cold_one(cluster: Cluster) -> None:
    cold_seconds, cold = await timed_start(cluster)
    await cluster.stop_daemon(cold)
    server = cluster.server

    # While it is down: a pod goes away, a node is relabelled, a pod is added.
    async with aiohttp.ClientSession(server.url) as session:
        async with session.delete("/api/v1/namespaces/default/pods/p007") as response:
            assert response.status == 200
        async with session.get("/api/v1/nodes/node-05") as response:
            relabelled = await response.json()
        relabelled["metadata"]["labels"]["disk"] = "ssd"
        async with session.put("/api/v1/nodes/node-05", json=relabelled) as response:
            assert response.status == 200
    late = pod("late")
    late["spec"]["nodeName"] = "node-01"
    server.load([late])

    warm_seconds, warm = await timed_start(cluster)
    assert warm.sync.warm
    assert warm_seconds <= cold_seconds + MARGIN_SECONDS, (warm_seconds, cold_seconds)
    # Ready means caught up: every change made while it was down is in the cache.
    pods = warm.cluster.pods
    assert "default/p007" not in pods and "default/late" in pods
    assert warm.cluster.nodes["node-05"].node.meta.labels["disk"] == "ssd"
