"""Where the replica scheduler refuses, in longhorn-manager's words: a waiting Replica
object that failed before it was ever healthy (ScheduleReplica), and the reasons of a
node's other disks when disk anti-affinity removes the only disk that qualified
(filterNodeDisksForReplica collects every disk's reason)."""

from __future__ import annotations

from tests.unit.replicas.builders import GB, Disk, Host, replica, schedule, volume, zones_hosts

DEGRADED_AT = "2026-01-01T00:00:00Z"


def test_an_unused_failed_replica_is_refused_and_nothing_is_placed() -> None:
    existing = [
        replica("v-r-a", "v"),  # waiting, would be filled
        replica("v-r-c", "v", "n11", "d1"),
        replica("v-r-d", "v", failedAt=DEGRADED_AT),  # failed before it was ever healthy
    ]
    result = schedule(volume("v", GB, 3), zones_hosts(3, 2), existing)
    assert result is not None
    assert result.placed == ()
    assert result.message == "unused failed replica is not supported"


def test_a_waiting_replica_that_was_healthy_once_is_filled() -> None:
    existing = [
        replica("v-r-c", "v", "n11", "d1"),
        replica("v-r-d", "v", failedAt=DEGRADED_AT, healthyAt=DEGRADED_AT),
    ]
    result = schedule(volume("v", GB, 2), zones_hosts(3, 2), existing)
    assert result is not None and len(result.placed) == 1 and result.unplaced == 0


def test_disk_anti_affinity_leaves_the_other_disks_reasons() -> None:
    """One node: d1 fits but already holds a replica of the volume (hard disk
    anti-affinity); d2 lacks the volume's disk tag. The user reads why d2 could not."""
    host = Host(
        "n1",
        disks={"d1": Disk(100 * GB, tags=("ssd",)), "d2": Disk(100 * GB)},
    )
    existing = [replica("v-r-1", "v", "n1", "d1")]
    result = schedule(
        volume("v", GB, 2, diskSelector=["ssd"]),
        [host],
        existing,
        replica_node_level_soft_anti_affinity=True,
        replica_disk_level_soft_anti_affinity=False,
    )
    assert result is not None and result.placed == ()
    assert result.message == "tags not fulfilled"
