"""Best-disk selection: balanced (≥ 1.11) and most-usable (≤ 1.10), with name tie-breaks."""

from __future__ import annotations

from typing import Any

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
from volsched.scheduling.replicas.selection import most_even

# Minimal-available 0 % so that usable space alone decides.
FREE: dict[str, Any] = {"storage_minimal_available_percentage": 0}


def usable(amount: int) -> Disk:
    """A disk whose usable space (available − reserved − scheduled) is ``amount`` GB."""
    return Disk(maximum=1000 * GB, available=amount * GB)


def test_seed_balanced_example() -> None:
    hosts = [
        Host("node-a", disks={"a1": usable(900), "a2": usable(100)}),
        Host("node-b", disks={"b1": usable(600), "b2": usable(700)}),
    ]
    result = schedule(volume("v", 100 * GB, 1), hosts, **FREE)
    assert spots(result) == [("node-b", "b2")]


def test_seed_balanced_example_most_usable_differs() -> None:
    hosts = [
        Host("node-a", disks={"a1": usable(900), "a2": usable(100)}),
        Host("node-b", disks={"b1": usable(600), "b2": usable(700)}),
    ]
    result = schedule(volume("v", 100 * GB, 1), hosts, disk_selection="most-usable", **FREE)
    assert spots(result) == [("node-a", "a1")]


MOST_EVEN_CASES = [
    # (id, values, size, must fit, chosen position)
    ("seed nodes: A 1000, B 1300", [1000, 1300], 100, True, 1),
    ("seed disks of B: 600, 700", [600, 700], 100, False, 1),
    ("single value that fits", [500], 100, True, 0),
    ("single value exactly used up: mean 0", [100], 100, True, None),
    ("nothing fits", [50, 60], 100, True, None),
    ("ties go to the first position", [500, 500, 500], 100, True, 0),
    ("duplicated maximum", [900, 900, 100], 100, True, 0),
    ("disks may go below zero", [50, 400], 100, False, 1),
    ("empty", [], 100, True, None),
]


@pytest.mark.parametrize(
    ("values", "size", "must_fit", "chosen"),
    [row[1:] for row in MOST_EVEN_CASES],
    ids=[row[0] for row in MOST_EVEN_CASES],
)
def test_most_even(values: list[int], size: int, must_fit: bool, chosen: int | None) -> None:
    assert most_even(values, size, must_fit) == chosen


def _brute_force(values: list[int], size: int, must_fit: bool) -> int | None:
    best = None
    best_score = 0.0
    for i, value in enumerate(values):
        if must_fit and value < size:
            continue
        after = list(values)
        after[i] -= size
        mean = sum(after) / len(after)
        if mean <= 0:
            continue
        score = (max(after) - min(after)) / mean
        if best is None or score < best_score - 1e-12:
            best, best_score = i, score
    return best


@pytest.mark.parametrize(
    "values",
    [[3, 1, 4, 1, 5, 9, 2, 6], [10, 10, 10], [7, 7, 1], [1, 2], [0, 0, 5], [100, 1, 1, 1]],
)
@pytest.mark.parametrize("size", [0, 1, 2, 5])
@pytest.mark.parametrize("must_fit", [True, False])
def test_most_even_matches_brute_force(values: list[int], size: int, must_fit: bool) -> None:
    assert most_even(values, size, must_fit) == _brute_force(values, size, must_fit)


def test_balanced_ties_go_to_node_then_disk_name() -> None:
    hosts = [
        Host("n2", disks={"d1": usable(500), "d2": usable(500)}),
        Host("n1", disks={"d2": usable(500), "d1": usable(500)}),
    ]
    assert spots(schedule(volume("v", 100 * GB, 1), hosts, **FREE)) == [("n1", "d1")]


def test_most_usable_ties_go_to_node_then_disk_name() -> None:
    hosts = [
        Host("n2", disks={"d1": usable(500)}),
        Host("n1", disks={"d3": usable(500), "d2": usable(500), "d1": usable(400)}),
    ]
    result = schedule(volume("v", 100 * GB, 1), hosts, disk_selection="most-usable", **FREE)
    assert spots(result) == [("n1", "d2")]


def test_most_usable_ranks_available_minus_reserved_not_scheduled() -> None:
    hosts = [
        Host("n1", disks={"d1": Disk(1000 * GB, 800 * GB, scheduled=700 * GB)}),
        Host("n2", disks={"d1": Disk(1000 * GB, 700 * GB, reserved=50 * GB)}),
    ]
    result = schedule(volume("v", 10 * GB, 1), hosts, disk_selection="most-usable", **FREE)
    assert spots(result) == [("n1", "d1")]
    # Balanced counts scheduled bytes: n1 has 100 GB usable, n2 650 GB.
    assert spots(schedule(volume("v", 10 * GB, 1), hosts, **FREE)) == [("n2", "d1")]


def test_balanced_falls_back_to_most_usable_when_no_node_holds_the_replica() -> None:
    # Over-provisioned disks: the space conditions pass but usable space is zero
    # everywhere, so balanced cannot choose and the disk with most room wins.
    hosts = [
        Host("n1", disks={"d1": Disk(100 * GB, 80 * GB, scheduled=150 * GB)}),
        Host("n2", disks={"d1": Disk(100 * GB, 90 * GB, scheduled=150 * GB)}),
    ]
    result = schedule(
        volume("v", 10 * GB, 1), hosts, storage_over_provisioning_percentage=200, **FREE
    )
    assert spots(result) == [("n2", "d1")]


def test_soft_node_anti_affinity_still_prefers_new_nodes() -> None:
    hosts = [
        Host("n1", zone="z1", disks={"d1": usable(300)}),
        Host("n2", zone="z1", disks={"d1": usable(200)}),
        Host("n3", zone="z1", disks={"d1": usable(100)}),
    ]
    result = schedule(
        volume("v", 100 * GB, 3), hosts, replica_node_level_soft_anti_affinity=True, **FREE
    )
    assert spots(result) == [("n1", "d1"), ("n2", "d1"), ("n3", "d1")]


def test_balanced_keeps_nodes_even_over_a_pass() -> None:
    hosts = [
        Host("n1", zone="z1", disks={"d1": usable(300)}),
        Host("n2", zone="z1", disks={"d1": usable(200)}),
        Host("n3", zone="z1", disks={"d1": usable(100)}),
    ]
    view = cluster(hosts)
    scheduled = ScheduledSpace()
    chosen = settings(**FREE)
    placed = []
    for name in ("v0", "v1", "v2"):
        result = schedule_volume(volume(name, 100 * GB, 1), view, chosen, 0.0, scheduled)
        placed += spots(result)
    # 300/200/100 → n1 → 200/200/100 → n1 (tie with n2, name) → 100/200/100 → n2.
    assert placed == [("n1", "d1"), ("n1", "d1"), ("n2", "d1")]
