"""A warm database from another cluster is discarded, not acted on; one from the same
cluster stays warm."""

from __future__ import annotations

import logging

import pytest

from tests.integration.conftest import FAST, Cluster
from tests.integration.objects import node
from volsched.emulator import ApiServer


async def test_a_database_from_another_cluster_is_discarded(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    cluster.server.load([node("only-in-a")])
    first = await cluster.start_daemon()
    assert "only-in-a" in first.cluster.nodes
    await cluster.stop_daemon(first)

    # The same database, the same cluster: warm, nothing discarded.
    again = await cluster.start_daemon()
    assert again.sync.warm and not again.sync.discarded_foreign_state
    await cluster.stop_daemon(again)

    # The same database file, another cluster (its own kube-system uid).
    other = ApiServer(controllers=FAST, bookmark_interval_seconds=0.5)
    await other.start()
    try:
        other.load([node("only-in-b")])
        elsewhere = Cluster(other, cluster.workdir)
        elsewhere.db_path = cluster.db_path
        with caplog.at_level(logging.WARNING, logger="volsched"):
            moved = await elsewhere.start_daemon()
        assert moved.sync.discarded_foreign_state
        assert not moved.sync.warm
        assert "only-in-a" not in moved.cluster.nodes
        assert "only-in-b" in moved.cluster.nodes
        assert any("belongs to another cluster" in r.getMessage() for r in caplog.records)
        await elsewhere.close()
    finally:
        await other.stop()
