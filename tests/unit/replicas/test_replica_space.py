"""Longhorn's two space conditions, in integer bytes, including the seeds' worked example."""

from __future__ import annotations

import pytest

from tests.unit.replicas.builders import (
    GB,
    Disk,
    Host,
    cluster,
    schedule,
    settings,
    spots,
    volume,
)
from volsched.scheduling.replicas import ScheduledSpace, schedule_volume
from volsched.scheduling.replicas.cluster import DiskInfo
from volsched.scheduling.replicas.disks import (
    minimal_available,
    over_provisioning_limit,
    space_fits,
)


def disk_info(maximum: int, available: int, scheduled: int = 0, reserved: int = 0) -> DiskInfo:
    return DiskInfo("d", frozenset(), True, maximum, available, reserved, scheduled)


SPACE_CASES = [
    # (id, maximum, available, scheduled, reserved, size, actual, minimal %, over %, fits)
    ("seed disk X: 1 of 4 GB at 25 % (1 GB is not > 1 GB)", 4 * GB, 1 * GB, 0, 0, 1, 0, 25, 100, False),
    ("seed disk Y: limit (8 - 1) GB = 7 GB takes 5 GB + 2 GB", 8 * GB, 2 * GB, 2 * GB, 1 * GB, 5 * GB, 0, 10, 100, True),
    ("seed disk Y: one byte past the 7 GB limit", 8 * GB, 2 * GB, 2 * GB, 1 * GB, 5 * GB + 1, 0, 10, 100, False),
    ("minimal available is strict: equal fails", 100, 26, 0, 0, 1, 1, 25, 100, False),
    ("minimal available: one byte above passes", 100, 27, 0, 0, 1, 1, 25, 100, True),
    ("actual size is taken from available", 100 * GB, 30 * GB, 0, 0, GB, 6 * GB, 25, 100, False),
    ("minimal threshold floors: 999 × 25 // 100 = 249", 999, 250, 0, 0, 1, 0, 25, 100, True),
    ("minimal threshold floors: 249 is not above 249", 999, 249, 0, 0, 1, 0, 25, 100, False),
    ("limit floors: (999 - 0) × 50 // 100 = 499", 999, 999, 0, 0, 499, 0, 0, 50, True),
    ("limit floors: 500 > 499", 999, 999, 0, 0, 500, 0, 0, 50, False),
    ("over-provisioning above 100 %", 10 * GB, 10 * GB, 15 * GB, 0, 5 * GB, 0, 25, 200, True),
    ("over-provisioning above 100 %, full", 10 * GB, 10 * GB, 15 * GB, 0, 5 * GB + 1, 0, 25, 200, False),
    ("reserved shrinks the limit", 10 * GB, 10 * GB, 0, 6 * GB, 5 * GB, 0, 25, 100, False),
    ("storage maximum 0", 0, 10, 0, 0, 1, 0, 0, 100, False),
    ("storage available 0", 10 * GB, 0, 0, 0, 1, 0, 0, 100, False),
    ("minimal 0 %: any available byte", 10 * GB, 1, 0, 0, GB, 0, 0, 100, True),
]  # fmt: skip


@pytest.mark.parametrize(
    ("maximum", "available", "scheduled", "reserved", "size", "actual", "minimal", "over", "fits"),
    [case[1:] for case in SPACE_CASES],
    ids=[case[0] for case in SPACE_CASES],
)
def test_space_conditions(
    maximum: int,
    available: int,
    scheduled: int,
    reserved: int,
    size: int,
    actual: int,
    minimal: int,
    over: int,
    fits: bool,
) -> None:
    chosen = settings(
        storage_minimal_available_percentage=minimal, storage_over_provisioning_percentage=over
    )
    info = disk_info(maximum, available, scheduled, reserved)
    assert space_fits(info, 0, size, actual, chosen) is fits
    # The scheduler applies the same conditions.
    host = Host("n1", disks={"d1": Disk(maximum, available, scheduled, reserved)})
    result = schedule(
        volume("v", size, 1, status={"actualSize": actual}),
        [host],
        storage_minimal_available_percentage=minimal,
        storage_over_provisioning_percentage=over,
    )
    assert result is not None
    assert (result.unplaced == 0) is fits
    if not fits:
        assert result.reasons == ("insufficient storage",)


def test_seed_worked_example_figures() -> None:
    assert minimal_available(4 * GB, 25) == 1 * GB
    assert minimal_available(8 * GB, 10) == 800_000_000
    assert over_provisioning_limit(8 * GB, 1 * GB, 100) == 7 * GB


def test_seed_worked_example_picks_disk_y() -> None:
    host = Host(
        "n1",
        disks={
            "disk-x": Disk(4 * GB, 1 * GB),
            "disk-y": Disk(8 * GB, 2 * GB, scheduled=2 * GB, reserved=1 * GB),
        },
    )
    # Minimal available 10 % lets disk X pass the first condition (1 GB > 0.4 GB) but it
    # has no room for 5 GB; at 25 % it fails outright.  Disk Y fits either way at 10 %.
    result = schedule(volume("v", 5 * GB, 1), [host], storage_minimal_available_percentage=10)
    assert spots(result) == [("n1", "disk-y")]


def test_placements_of_the_pass_count_as_scheduled() -> None:
    # 10 GB disk at 100 %: two 4 GB volumes fit, the third does not.
    hosts = [Host("n1", disks={"d1": Disk(10 * GB)})]
    view = cluster(hosts)
    scheduled = ScheduledSpace()
    chosen = settings(storage_minimal_available_percentage=0)
    results = [
        schedule_volume(volume(f"v{i}", 4 * GB, 1), view, chosen, 0.0, scheduled) for i in range(3)
    ]
    assert [r.unplaced if r else None for r in results] == [0, 0, 1]
    assert results[2] is not None and results[2].message == "insufficient storage"
    assert scheduled.get("n1", "d1") == 8 * GB


def test_earlier_scheduled_space_is_respected() -> None:
    hosts = [Host("n1", disks={"d1": Disk(10 * GB)})]
    scheduled = ScheduledSpace()
    scheduled.add("n1", "d1", 7 * GB)
    result = schedule_volume(volume("v", 4 * GB, 1), cluster(hosts), settings(), 0.0, scheduled)
    assert result is not None and result.unplaced == 1
    assert scheduled.get("n1", "d1") == 7 * GB  # nothing recorded for a failure


def test_a_volume_spreads_its_own_replicas_by_space() -> None:
    # One node, node anti-affinity soft: the second replica of the same volume sees the
    # first one's bytes on its disk.
    hosts = [Host("n1", disks={"d1": Disk(10 * GB)})]
    result = schedule(
        volume("v", 6 * GB, 2),
        hosts,
        replica_node_level_soft_anti_affinity=True,
        storage_minimal_available_percentage=0,
    )
    assert result is not None
    assert spots(result) == [("n1", "d1")]
    assert result.unplaced == 1 and result.reasons == ("insufficient storage",)


def test_an_over_committed_disk_never_takes_a_replica() -> None:
    # d1 is already promised more than its limit; d2 is empty.  Both have the same room,
    # so most-usable would pick d1 by name if d1 were (wrongly) a candidate.
    host = Host(
        "n1",
        disks={
            "d1": Disk(20 * GB, 10 * GB, scheduled=40 * GB),
            "d2": Disk(20 * GB, 10 * GB),
        },
    )
    for strategy in ("balanced", "most-usable"):
        result = schedule(
            volume("v", GB, 1),
            [host],
            disk_selection=strategy,
            storage_minimal_available_percentage=0,
        )
        assert spots(result) == [("n1", "d2")]
