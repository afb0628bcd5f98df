"""Anti-affinity tiers, per-volume overrides, and which existing replicas count or occupy."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.replicas.builders import (
    GB,
    Disk,
    Host,
    cluster,
    replica,
    schedule,
    settings,
    spots,
    volume,
    zones_hosts,
)
from volsched.cache.objects.replicated import parse_volume
from volsched.scheduling.replicas import ScheduledSpace, replicas_to_fill, schedule_volumes

T0 = 1_700_000_000.0
DEGRADED_AT = "2023-11-14T22:13:20Z"  # T0


def nodes_of(result: Any) -> list[str]:
    return [node for node, _disk in spots(result)]


def zone_of(node: str) -> str:
    return "z" + node[1]  # zones_hosts names nodes n<zone><index>


TIER_CASES = [
    # (id, zones, nodes per zone, replicas, settings, volume overrides, placed, distinct zones)
    ("one replica per zone", 3, 2, 3, {}, {}, 3, 3),
    ("zone soft: new node in a used zone", 2, 2, 3, {}, {}, 3, 2),
    (
        "zone hard: no second replica in a zone",
        2,
        2,
        3,
        {"replica_zone_level_soft_anti_affinity": False},
        {},
        2,
        2,
    ),
    (
        "zone hard stays hard with node soft",
        2,
        2,
        3,
        {
            "replica_zone_level_soft_anti_affinity": False,
            "replica_node_level_soft_anti_affinity": True,
        },
        {},
        2,
        2,
    ),
    ("node hard: one replica per node", 1, 2, 3, {}, {}, 2, 1),
    (
        "node soft: a used node takes another",
        1,
        2,
        3,
        {"replica_node_level_soft_anti_affinity": True},
        {},
        3,
        1,
    ),
    (
        "override enables node soft",
        1,
        2,
        3,
        {},
        {"replicaNodeLevelSoftAntiAffinity": "enabled"},
        3,
        1,
    ),
    (
        "override disables node soft",
        1,
        2,
        3,
        {"replica_node_level_soft_anti_affinity": True},
        {"replicaNodeLevelSoftAntiAffinity": "disabled"},
        2,
        1,
    ),
    (
        "override disables zone soft",
        2,
        2,
        3,
        {},
        {"replicaZoneLevelSoftAntiAffinity": "disabled"},
        2,
        2,
    ),
    (
        "override enables zone soft",
        2,
        2,
        3,
        {"replica_zone_level_soft_anti_affinity": False},
        {"replicaZoneLevelSoftAntiAffinity": "enabled"},
        3,
        2,
    ),
    (
        "ignored override keeps the setting",
        2,
        2,
        3,
        {"replica_zone_level_soft_anti_affinity": False},
        {"replicaZoneLevelSoftAntiAffinity": "ignored"},
        2,
        2,
    ),
]


@pytest.mark.parametrize(
    ("zones", "per_zone", "replicas", "overrides", "spec", "placed", "zones_used"),
    [row[1:] for row in TIER_CASES],
    ids=[row[0] for row in TIER_CASES],
)
def test_tiers(
    zones: int,
    per_zone: int,
    replicas: int,
    overrides: dict[str, Any],
    spec: dict[str, Any],
    placed: int,
    zones_used: int,
) -> None:
    result = schedule(volume("v", GB, replicas, **spec), zones_hosts(zones, per_zone), **overrides)
    assert result is not None
    nodes = nodes_of(result)
    assert len(nodes) == placed
    assert result.unplaced == replicas - placed
    assert len({zone_of(n) for n in nodes}) == zones_used
    if result.unplaced:
        # Anti-affinity filters give no reason of their own.
        assert result.reasons == ("replica scheduling failed",)


def test_unlabelled_nodes_share_one_zone() -> None:
    hosts = [Host("n1", zone=None), Host("n2", zone=None), Host("n3", zone="z1")]
    result = schedule(volume("v", GB, 3), hosts, replica_zone_level_soft_anti_affinity=False)
    assert result is not None
    assert len(result.placed) == 2 and result.unplaced == 1
    assert "n3" in nodes_of(result)


DISK_CASES = [
    # (id, disks on the one node, disk soft, placed disks)
    ("free disk preferred", ["d1", "d2"], True, ["d1", "d2"]),
    ("free disk preferred, hard", ["d1", "d2"], False, ["d1", "d2"]),
    ("soft: share a disk", ["d1"], True, ["d1", "d1"]),
    ("hard: never share a disk", ["d1"], False, ["d1"]),
]


@pytest.mark.parametrize(
    ("disks", "disk_soft", "placed"),
    [row[1:] for row in DISK_CASES],
    ids=[row[0] for row in DISK_CASES],
)
def test_disk_anti_affinity(disks: list[str], disk_soft: bool, placed: list[str]) -> None:
    host = Host("n1", disks={name: Disk(100 * GB) for name in disks})
    result = schedule(
        volume("v", GB, 2),
        [host],
        replica_node_level_soft_anti_affinity=True,
        replica_disk_level_soft_anti_affinity=disk_soft,
    )
    assert result is not None
    assert [disk for _node, disk in spots(result)] == placed
    # The per-volume override wins over the setting.
    override = "disabled" if disk_soft else "enabled"
    flipped = schedule(
        volume("v", GB, 2, replicaDiskLevelSoftAntiAffinity=override),
        [host],
        replica_node_level_soft_anti_affinity=True,
        replica_disk_level_soft_anti_affinity=disk_soft,
    )
    assert flipped is not None
    expected = 2 if len(disks) == 2 or not disk_soft else 1
    assert len(flipped.placed) == expected


def test_existing_replicas_occupy_their_zones() -> None:
    hosts = zones_hosts(3, 2)
    existing = [replica("r1", "v", "n11", "d1"), replica("r2", "v", "n21", "d1")]
    result = schedule(volume("v", GB, 3), hosts, existing)
    assert result is not None
    assert len(result.placed) == 1 and zone_of(nodes_of(result)[0]) == "z3"


def test_nothing_to_do_is_not_listed() -> None:
    existing = [replica(f"r{i}", "v", f"n{i}1", "d1") for i in (1, 2, 3)]
    assert schedule(volume("v", GB, 3), zones_hosts(3, 1), existing) is None
    assert schedule(volume("v", GB, 2), zones_hosts(3, 1), existing) is None


def test_evicting_replica_does_not_count_but_its_node_can_be_reused() -> None:
    # longhorn/longhorn#3076: a replica leaving one disk may move to another disk of the
    # same node, even with hard node anti-affinity.
    host = Host("n1", disks={"d1": Disk(100 * GB), "d2": Disk(100 * GB)})
    existing = [replica("r1", "v", "n1", "d1", evictionRequested=True)]
    assert spots(schedule(volume("v", GB, 1), [host], existing)) == [("n1", "d2")]
    hard = schedule(
        volume("v", GB, 1), [host], existing, replica_zone_level_soft_anti_affinity=False
    )
    assert spots(hard) == [("n1", "d2")]


def test_a_steady_replica_blocks_its_node() -> None:
    host = Host("n1", disks={"d1": Disk(100 * GB), "d2": Disk(100 * GB)})
    existing = [
        replica("r1", "v", "n1", "d1", evictionRequested=True),
        replica("r2", "v", "n1", "d2"),
    ]
    result = schedule(volume("v", GB, 2), [host], existing)
    assert result is not None
    assert result.placed == () and result.unplaced == 1
    assert result.reasons == ("replica scheduling failed",)


FAILED = {"failedAt": DEGRADED_AT, "healthyAt": DEGRADED_AT}

REPLENISH_CASES = [
    # (id, failed replica spec, lastDegradedAt, seconds after T0, new replica placed)
    ("reusable, within the wait", {}, DEGRADED_AT, 600, False),
    ("reusable, wait over", {}, DEGRADED_AT, 601, True),
    ("no lastDegradedAt: nothing to wait for", {}, None, 0, True),
    ("too many rebuild retries", {"rebuildRetryCount": 5}, DEGRADED_AT, 0, True),
    ("four retries is still reusable", {"rebuildRetryCount": 4}, DEGRADED_AT, 0, False),
    ("evicting failed replica", {"evictionRequested": True}, DEGRADED_AT, 0, True),
    ("being deleted", {"deletionTimestamp": DEGRADED_AT}, DEGRADED_AT, 0, True),
]


@pytest.mark.parametrize(
    ("extra", "degraded_at", "after", "replaced"),
    [row[1:] for row in REPLENISH_CASES],
    ids=[row[0] for row in REPLENISH_CASES],
)
def test_failed_replicas_and_the_replenishment_wait(
    extra: dict[str, Any], degraded_at: str | None, after: float, replaced: bool
) -> None:
    hosts = zones_hosts(3, 1)
    existing = [
        replica("r1", "v", "n11", "d1"),
        replica("r2", "v", "n21", "d1"),
        replica("r3", "v", "n31", "d1", **FAILED, **extra),
    ]
    status = {"robustness": "degraded", "lastDegradedAt": degraded_at}
    result = schedule(volume("v", GB, 3, status=status), hosts, existing, now=T0 + after)
    if not replaced:
        assert result is None
    else:
        # The failed replica no longer holds its zone: the replacement may go there.
        assert nodes_of(result) == ["n31"]


def test_reusable_failed_replica_still_occupies_its_zone() -> None:
    hosts = zones_hosts(3, 2)
    existing = [
        replica("r1", "v", "n11", "d1"),
        replica("r2", "v", "n21", "d1", **FAILED),
    ]
    status = {"lastDegradedAt": DEGRADED_AT}
    result = schedule(
        volume("v", GB, 3, status=status),
        hosts,
        existing,
        now=T0,
        replica_zone_level_soft_anti_affinity=False,
    )
    assert result is not None
    assert nodes_of(result) == ["n31"]


def test_unscheduled_replica_objects_are_filled_first() -> None:
    existing = [
        replica("v-r-b", "v"),
        replica("v-r-a", "v"),
        replica("v-r-c", "v", "n11", "d1"),
        replica("v-r-e", "v", deletionTimestamp=DEGRADED_AT),
    ]
    view = cluster(zones_hosts(3, 2), existing)
    assert [r.name for r in replicas_to_fill(volume("v", GB, 3), view)] == ["v-r-a", "v-r-b"]
    result = schedule(volume("v", GB, 3), zones_hosts(3, 2), existing)
    assert result is not None and len(result.placed) == 2 and result.unplaced == 0
    # More waiting objects than missing replicas: every object is still placed.
    many = [replica(f"v-r-{i}", "v") for i in range(4)]
    result = schedule(volume("v", GB, 3), zones_hosts(3, 2), many)
    assert result is not None and len(result.placed) == 4


def test_placements_after_a_failure_are_not_tried() -> None:
    result = schedule(volume("v", GB, 5), zones_hosts(2, 1))
    assert result is not None
    assert len(result.placed) == 2 and result.unplaced == 3


def test_deleting_volume_is_not_listed() -> None:
    vol = parse_volume(
        {
            "metadata": {"name": "v", "deletionTimestamp": DEGRADED_AT},
            "spec": {"size": GB, "numberOfReplicas": 1},
        }
    )
    assert schedule(vol, zones_hosts(1, 1)) is None


def test_schedule_volumes_goes_in_name_order_and_skips_nothing_to_do() -> None:
    hosts = [Host("n1", disks={"d1": Disk(10 * GB)})]
    view = cluster(hosts, [replica("done-r1", "done", "n1", "d1")])
    vols = [volume("vol-b", 4 * GB, 1), volume("done", GB, 1), volume("vol-a", 4 * GB, 1)]
    scheduled = ScheduledSpace()
    results = schedule_volumes(
        vols, view, settings(storage_minimal_available_percentage=0), 0.0, scheduled
    )
    assert [(r.volume, len(r.placed), r.unplaced) for r in results] == [
        ("vol-a", 1, 0),
        ("vol-b", 1, 0),
    ]
    assert scheduled.get("n1", "d1") == 8 * GB


# longhorn-manager replenishes only Degraded volumes: another volume's failed replicas
# keep their place however long ago the volume was degraded.
ROBUSTNESS_CASES = [
    ("degraded, wait over", "degraded", True),
    ("healthy", "healthy", False),
    ("faulted", "faulted", False),
    ("unknown (detached)", "unknown", False),
]


@pytest.mark.parametrize(
    ("robustness", "replaced"),
    [row[1:] for row in ROBUSTNESS_CASES],
    ids=[row[0] for row in ROBUSTNESS_CASES],
)
def test_only_degraded_volumes_replace_failed_replicas(robustness: str, replaced: bool) -> None:
    existing = [
        replica("r1", "v", "n11", "d1"),
        replica("r2", "v", "n21", "d1"),
        replica("r3", "v", "n31", "d1", **FAILED),
    ]
    status = {"robustness": robustness, "lastDegradedAt": DEGRADED_AT}
    result = schedule(volume("v", GB, 3, status=status), zones_hosts(3, 1), existing, now=T0 + 3600)
    if replaced:
        assert nodes_of(result) == ["n31"]
    else:
        assert result is None


# Disk anti-affinity counts a failed replica that may still be reused, even once the
# replenishment wait is over (longhorn-manager's filterDisksWithMatchingReplicas).
DISK_HOLD_CASES = [
    ("reusable failed replica holds its disk", {}, []),
    ("a replica past its retries does not", {"rebuildRetryCount": 5}, [("n11", "d2")]),
    ("an evicting failed replica does not", {"evictionRequested": True}, [("n11", "d2")]),
]


@pytest.mark.parametrize(
    ("extra", "placed"),
    [row[1:] for row in DISK_HOLD_CASES],
    ids=[row[0] for row in DISK_HOLD_CASES],
)
def test_failed_replicas_that_may_be_reused_keep_their_disk(
    extra: dict[str, Any], placed: list[tuple[str, str]]
) -> None:
    host = Host("n11", disks={"d1": Disk(100 * GB), "d2": Disk(100 * GB)})
    existing = [
        replica("r1", "v", "n11", "d1"),
        replica("r2", "v", "n11", "d2", **FAILED, **extra),
    ]
    status = {"robustness": "degraded", "lastDegradedAt": DEGRADED_AT}
    result = schedule(
        volume("v", GB, 2, status=status),
        [host],
        existing,
        now=T0 + 3600,
        replica_node_level_soft_anti_affinity=True,
        replica_disk_level_soft_anti_affinity=False,
    )
    assert result is not None
    assert spots(result) == placed
    assert result.unplaced == (0 if placed else 1)
