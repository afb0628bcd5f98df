"""The ingest keeps one copy of each object — the one the cache accepted — and counts
what a relist found gone per kind of its own owner."""

from __future__ import annotations

from typing import Any

from tests.integration.objects import storage_node
from tests.unit.longhorn.objects import longhorn_node
from volsched.cache.cluster import ClusterCache
from volsched.daemon.watch.ingest import Ingest

Raw = dict[str, Any]


def test_a_relist_of_volsched_storage_nodes_never_counts_longhorn_nodes_as_vanished() -> None:
    cluster = ClusterCache()
    ingest = Ingest(cluster, None, "volsched")
    ingest.upsert("LonghornNode", longhorn_node("n1"))
    ingest.upsert("StorageNode", storage_node("n2"))

    assert ingest.replace("StorageNode", [storage_node("n2")], "10") == 0
    assert ingest.replace("LonghornNode", [longhorn_node("n1")], "11") == 0
    assert set(cluster.storage.storage_nodes) == {"n1", "n2"}

    assert ingest.replace("StorageNode", [], "12") == 1
    assert set(cluster.storage.storage_nodes) == {"n1"}
