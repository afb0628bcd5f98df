"""StorageNode, Volume and Replica views: what they read, and the errors they raise."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from volsched.cache.errors import ObjectError
from volsched.cache.objects.registry import KINDS
from volsched.cache.objects.replicated import (
    DiskStatus,
    parse_replica,
    parse_storage_node,
    parse_volume,
)

GI = 2**30

STORAGE_NODE: dict[str, Any] = {
    "apiVersion": "volsched.io/v1alpha1",
    "kind": "StorageNode",
    "metadata": {"name": "n1", "resourceVersion": "7"},
    "spec": {
        "allowScheduling": True,
        "evictionRequested": False,
        "computeOnly": False,
        "tags": ["fast"],
        "disks": {
            "disk-b": {"path": "/mnt/b", "tags": ["hdd"]},
            "disk-a": {
                "path": "/mnt/a",
                "allowScheduling": True,
                "evictionRequested": False,
                "storageReserved": "1Gi",
                "tags": ["ssd"],
            },
        },
    },
    "status": {
        "ready": True,
        "disks": {
            "disk-a": {"storageMaximum": "8Gi", "storageAvailable": "2Gi", "storageScheduled": 2},
            "ghost": {"storageMaximum": "1Gi"},
        },
    },
}

VOLUME: dict[str, Any] = {
    "kind": "Volume",
    "metadata": {"name": "vol-a"},
    "spec": {
        "size": "10Gi",
        "numberOfReplicas": 3,
        "nodeSelector": ["fast"],
        "diskSelector": ["ssd"],
        "dataLocality": "best-effort",
        "nodeID": "n1",
        "replicaNodeLevelSoftAntiAffinity": "enabled",
        "replicaZoneLevelSoftAntiAffinity": "disabled",
        "replicaDiskLevelSoftAntiAffinity": "ignored",
    },
    "status": {
        "robustness": "degraded",
        "actualSize": "512Mi",
        "lastDegradedAt": "2024-05-01T10:00:00Z",
    },
}

REPLICA: dict[str, Any] = {
    "kind": "Replica",
    "metadata": {"name": "vol-a-r-1"},
    "spec": {
        "volumeName": "vol-a",
        "nodeID": "n1",
        "diskID": "disk-a",
        "primary": True,
        "evictionRequested": False,
        "failedAt": "2024-05-01T10:00:00Z",
        "healthyAt": "",
        "rebuildRetryCount": 2,
    },
    "status": {"synced": False},
}


def test_storage_node_reads_spec_and_status() -> None:
    node = parse_storage_node(STORAGE_NODE)
    assert node.name == "n1"
    assert node.ready and node.allow_scheduling and not node.compute_only
    assert node.tags == ("fast",)
    assert [d.name for d in node.disks] == ["disk-a", "disk-b"]  # sorted; status-only left out
    disk_a = node.disk("disk-a")
    assert disk_a is not None
    assert disk_a.storage_reserved == GI
    assert disk_a.tags == ("ssd",)
    assert disk_a.status == DiskStatus(8 * GI, 2 * GI, 2)
    disk_b = node.disk("disk-b")
    assert disk_b is not None
    assert disk_b.allow_scheduling and disk_b.status is None  # not reported yet


def test_storage_node_defaults() -> None:
    node = parse_storage_node({"metadata": {"name": "n1"}})
    assert node.allow_scheduling and not node.eviction_requested and not node.compute_only
    assert not node.ready  # the agent has not said it is ready
    assert node.disks == ()


def test_volume_reads_spec_and_status() -> None:
    volume = parse_volume(VOLUME)
    assert volume.size == 10 * GI
    assert volume.number_of_replicas == 3
    assert volume.node_selector == ("fast",)
    assert volume.disk_selector == ("ssd",)
    assert volume.data_locality == "best-effort"
    assert volume.node_id == "n1" and volume.attached
    assert volume.replica_node_level_soft_anti_affinity == "enabled"
    assert volume.replica_zone_level_soft_anti_affinity == "disabled"
    assert volume.replica_disk_level_soft_anti_affinity == "ignored"
    assert volume.robustness == "degraded"
    assert volume.actual_size == 512 * 2**20
    assert volume.last_degraded_at == 1714557600.0


def test_volume_defaults() -> None:
    volume = parse_volume({"metadata": {"name": "v"}, "spec": {"size": 1000}})
    assert volume.number_of_replicas == 3
    assert volume.data_locality == "disabled"
    assert volume.replica_zone_level_soft_anti_affinity == "ignored"
    assert volume.robustness == "unknown"
    assert volume.last_degraded_at is None
    assert not volume.attached


def test_strict_local_with_one_replica_is_valid() -> None:
    spec = {"size": "1Gi", "numberOfReplicas": 1, "dataLocality": "strict-local"}
    raw = {"metadata": {"name": "v"}, "spec": spec}
    assert parse_volume(raw).data_locality == "strict-local"


def test_replica_reads_spec_and_status() -> None:
    replica = parse_replica(REPLICA)
    assert replica.volume_name == "vol-a"
    assert replica.node_id == "n1" and replica.disk_id == "disk-a"
    assert replica.primary
    assert replica.failed and replica.failed_at == 1714557600.0
    assert replica.healthy_at is None  # Longhorn writes "" for never
    assert replica.rebuild_retry_count == 2
    assert not replica.synced
    assert replica.potentially_reusable


def test_replica_defaults() -> None:
    replica = parse_replica({"metadata": {"name": "r"}, "spec": {"volumeName": "v"}})
    assert replica.node_id == "" and not replica.failed and replica.synced
    assert not replica.potentially_reusable


@pytest.mark.parametrize(
    ("retries", "evicting", "node", "disk", "reusable"),
    [
        (0, False, "n1", "d1", True),
        (4, False, "n1", "d1", True),
        (5, False, "n1", "d1", False),
        (0, True, "n1", "d1", False),
        (0, False, "", "d1", False),
        (0, False, "n1", "", False),
    ],
)
def test_potentially_reusable(
    retries: int, evicting: bool, node: str, disk: str, reusable: bool
) -> None:
    raw = copy.deepcopy(REPLICA)
    raw["spec"].update(
        rebuildRetryCount=retries, evictionRequested=evicting, nodeID=node, diskID=disk
    )
    assert parse_replica(raw).potentially_reusable is reusable


def _with(base: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    raw = copy.deepcopy(base)
    *parents, last = path.split("/")
    target = raw
    for key in parents:
        target = target.setdefault(key, {})
    if value is _DELETE:
        del target[last]
    else:
        target[last] = value
    return raw


_DELETE = object()

BAD_OBJECTS = [
    # (parser, base, path to change, new value, field named in the error)
    (parse_volume, VOLUME, "spec/dataLocality", "local", "spec.dataLocality"),
    (
        parse_volume,
        VOLUME,
        "spec/replicaNodeLevelSoftAntiAffinity",
        "on",
        "spec.replicaNodeLevelSoftAntiAffinity",
    ),
    (
        parse_volume,
        VOLUME,
        "spec/replicaZoneLevelSoftAntiAffinity",
        True,
        "spec.replicaZoneLevelSoftAntiAffinity",
    ),
    (
        parse_volume,
        VOLUME,
        "spec/replicaDiskLevelSoftAntiAffinity",
        "soft",
        "spec.replicaDiskLevelSoftAntiAffinity",
    ),
    (parse_volume, VOLUME, "status/robustness", "sick", "status.robustness"),
    (parse_volume, VOLUME, "spec/dataLocality", "strict-local", "spec.dataLocality"),
    (parse_volume, VOLUME, "spec/size", "-1Gi", "spec.size"),
    (parse_volume, VOLUME, "spec/size", "ten", "spec.size"),
    (parse_volume, VOLUME, "spec/size", _DELETE, "spec.size"),
    (parse_volume, VOLUME, "spec/numberOfReplicas", 0, "spec.numberOfReplicas"),
    (parse_volume, VOLUME, "spec/numberOfReplicas", "3", "spec.numberOfReplicas"),
    (parse_volume, VOLUME, "spec/nodeSelector", "fast", "spec.nodeSelector"),
    (parse_volume, VOLUME, "status/actualSize", -5, "status.actualSize"),
    (parse_volume, VOLUME, "status/lastDegradedAt", "yesterday", "status.lastDegradedAt"),
    (parse_storage_node, STORAGE_NODE, "spec/allowScheduling", "yes", "spec.allowScheduling"),
    (parse_storage_node, STORAGE_NODE, "spec/computeOnly", 1, "spec.computeOnly"),
    (parse_storage_node, STORAGE_NODE, "status/ready", "true", "status.ready"),
    (parse_storage_node, STORAGE_NODE, "spec/disks", ["disk-a"], "spec.disks"),
    (
        parse_storage_node,
        STORAGE_NODE,
        "spec/disks/disk-a/storageReserved",
        "-1Gi",
        "spec.disks.disk-a.storageReserved",
    ),
    (
        parse_storage_node,
        STORAGE_NODE,
        "spec/disks/disk-a/evictionRequested",
        "no",
        "spec.disks.disk-a.evictionRequested",
    ),
    (
        parse_storage_node,
        STORAGE_NODE,
        "status/disks/disk-a/storageMaximum",
        "8 gigs",
        "status.disks.disk-a.storageMaximum",
    ),
    (
        parse_storage_node,
        STORAGE_NODE,
        "status/disks/disk-a/storageAvailable",
        -1,
        "status.disks.disk-a.storageAvailable",
    ),
    (parse_replica, REPLICA, "spec/volumeName", _DELETE, "spec.volumeName"),
    (parse_replica, REPLICA, "spec/failedAt", "2024-05-01", "spec.failedAt"),
    (parse_replica, REPLICA, "spec/healthyAt", 12, "spec.healthyAt"),
    (parse_replica, REPLICA, "spec/rebuildRetryCount", -1, "spec.rebuildRetryCount"),
    (parse_replica, REPLICA, "spec/primary", "true", "spec.primary"),
    (parse_replica, REPLICA, "status/synced", "yes", "status.synced"),
]


@pytest.mark.parametrize(
    ("parse", "base", "path", "value", "field"),
    BAD_OBJECTS,
    ids=[
        f"{row[0].__name__}:{row[2]}" + ("=<deleted>" if row[3] is _DELETE else f"={row[3]!r}")
        for row in BAD_OBJECTS
    ],
)
def test_bad_values_name_the_field(
    parse: Any, base: dict[str, Any], path: str, value: Any, field: str
) -> None:
    with pytest.raises(ObjectError) as caught:
        parse(_with(base, path, value))
    assert caught.value.field == field
    assert field in str(caught.value)
    assert caught.value.name == base["metadata"]["name"]


def test_registry_knows_the_storage_kinds() -> None:
    for kind, plural in (("StorageNode", "storagenodes"), ("Volume", "volumes")):
        info = KINDS[kind]
        assert info.api_version == "volsched.io/v1alpha1"
        assert info.plural == plural
        assert not info.namespaced
    replica = KINDS["Replica"]
    assert replica.plural == "replicas" and not replica.namespaced
    assert replica.parse(REPLICA).volume_name == "vol-a"
