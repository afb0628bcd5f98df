"""volsched's and Longhorn's storage objects live in the store of their owner; decisions
read both through one merged view by name."""

from __future__ import annotations

from typing import Any

import pytest

from tests.integration.objects import storage_node
from tests.unit.longhorn.objects import longhorn_node, longhorn_replica, longhorn_volume
from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.registry import KINDS, kind_of

Raw = dict[str, Any]


def volsched_volume(name: str) -> Raw:
    return {
        "apiVersion": "volsched.io/v1alpha1",
        "kind": "Volume",
        "metadata": {"name": name},
        "spec": {"size": 2**30, "numberOfReplicas": 1},
    }


def volsched_replica(name: str, volume: str, node: str) -> Raw:
    return {
        "apiVersion": "volsched.io/v1alpha1",
        "kind": "Replica",
        "metadata": {"name": name},
        "spec": {"volumeName": volume, "nodeID": node, "diskID": "d1"},
    }


def put(cluster: ClusterCache, raw: Raw) -> str:
    kind = kind_of(raw["apiVersion"], raw["kind"])
    view = KINDS[kind].parse(raw)
    cluster.upsert(kind, view)
    return str(view.meta.key)


def test_each_system_keeps_its_own_objects() -> None:
    cluster = ClusterCache()
    put(cluster, storage_node("n1"))
    put(cluster, longhorn_node("n2"))
    put(cluster, volsched_volume("vol-a"))
    put(cluster, longhorn_volume("pvc-b"))
    assert set(cluster.storage.volsched.nodes) == {"n1"}
    assert set(cluster.storage.longhorn.nodes) == {"longhorn-system/n2"}
    assert set(cluster.storage.volsched.volumes) == {"vol-a"}
    assert set(cluster.storage.longhorn.volumes) == {"longhorn-system/pvc-b"}
    assert [n.meta.key for n in cluster.objects("StorageNode")] == ["n1"]
    assert [n.meta.key for n in cluster.objects("LonghornNode")] == ["longhorn-system/n2"]
    # Decisions read both, by name.
    assert set(cluster.storage.storage_nodes) == {"n1", "n2"}
    assert set(cluster.storage.volumes) == {"vol-a", "pvc-b"}


@pytest.mark.parametrize("first_written", ["volsched", "longhorn"])
def test_a_name_in_both_systems_shows_the_other_once_one_is_gone(first_written: str) -> None:
    cluster = ClusterCache()
    ours = (volsched_volume("same"), volsched_replica("same-r", "same", "n1"))
    theirs = (longhorn_volume("same"), longhorn_replica("same-r", "same", "n2"))
    first, second = (ours, theirs) if first_written == "volsched" else (theirs, ours)
    keys_first = [put(cluster, raw) for raw in first]
    keys_second = [put(cluster, raw) for raw in second]
    shown = cluster.storage.replicas_by_volume["same"]["same-r"]
    assert shown.node_id == ("n2" if first_written == "volsched" else "n1")

    second_kinds = [kind_of(raw["apiVersion"], raw["kind"]) for raw in second]
    for kind, key in zip(second_kinds, keys_second, strict=True):
        cluster.delete(kind, key)
    assert cluster.storage.replicas_by_volume["same"]["same-r"].node_id == (
        "n1" if first_written == "volsched" else "n2"
    )
    assert "same" in cluster.storage.volumes

    first_kinds = [kind_of(raw["apiVersion"], raw["kind"]) for raw in first]
    for kind, key in zip(first_kinds, keys_first, strict=True):
        cluster.delete(kind, key)
    assert "same" not in cluster.storage.volumes
    assert "same-r" not in cluster.storage.replicas
    assert cluster.storage.replicas_by_volume["same"] == {}


def test_a_replica_that_moves_to_another_volume_leaves_the_old_index() -> None:
    cluster = ClusterCache()
    put(cluster, volsched_replica("r", "vol-a", "n1"))
    put(cluster, volsched_replica("r", "vol-b", "n1"))
    assert cluster.storage.replicas_by_volume["vol-a"] == {}
    assert set(cluster.storage.replicas_by_volume["vol-b"]) == {"r"}


def test_every_storage_change_is_seen_by_the_replica_scheduler() -> None:
    cluster = ClusterCache()
    before = cluster.storage_generation
    key = put(cluster, volsched_volume("vol-a"))
    cluster.delete("Volume", key)
    assert cluster.storage_generation == before + 2
