"""Data locality (best-effort, strict-local) and placing a volume that does not exist yet."""

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
)
from volsched.scheduling.replicas import ScheduledSpace, place_for_new_volume


def hosts() -> list[Host]:
    # Balanced placement prefers the big disks of n1 and n2; n3 is small but usable.
    return [
        Host("n1", zone="z1", disks={"d1": Disk(1000 * GB)}),
        Host("n2", zone="z2", disks={"d1": Disk(1000 * GB)}),
        Host("n3", zone="z3", disks={"d1": Disk(200 * GB)}),
        Host("n4", zone="z3", disks={"d1": Disk(1000 * GB)}),
    ]


def nodes(result: Any) -> list[str]:
    return [node for node, _disk in spots(result)]


def test_without_locality_the_big_disks_win() -> None:
    assert nodes(schedule(volume("v", 10 * GB, 2), hosts())) == ["n1", "n2"]


def test_best_effort_places_one_replica_on_the_volume_node_first() -> None:
    vol = volume("v", 10 * GB, 2, dataLocality="best-effort", nodeID="n3")
    assert nodes(schedule(vol, hosts())) == ["n3", "n1"]


def test_best_effort_detached_has_no_preference() -> None:
    vol = volume("v", 10 * GB, 2, dataLocality="best-effort")
    assert nodes(schedule(vol, hosts())) == ["n1", "n2"]


def test_best_effort_with_a_local_replica_has_no_preference() -> None:
    vol = volume("v", 10 * GB, 2, dataLocality="best-effort", nodeID="n3")
    existing = [replica("r1", "v", "n3", "d1")]
    assert nodes(schedule(vol, hosts(), existing)) == ["n1"]


def test_best_effort_with_a_failed_local_replica_still_prefers_the_node() -> None:
    vol = volume("v", 10 * GB, 2, dataLocality="best-effort", nodeID="n4")
    # The failed replica is beyond reuse, so it neither counts nor occupies n4.
    existing = [
        replica("r1", "v", "n1", "d1"),
        replica("r2", "v", "n4", "d1", failedAt="2023-01-01T00:00:00Z", rebuildRetryCount=5),
    ]
    assert nodes(schedule(vol, hosts(), existing)) == ["n4"]


def test_best_effort_falls_back_when_the_local_node_cannot_take_it() -> None:
    small = hosts()
    small[2] = Host("n3", zone="z3", disks={"d1": Disk(200 * GB, 10 * GB)})
    vol = volume("v", 10 * GB, 2, dataLocality="best-effort", nodeID="n3")
    result = schedule(vol, small)
    assert nodes(result) == ["n1", "n2"]


def test_best_effort_respects_hard_zone_anti_affinity() -> None:
    # n4 shares z3 with an existing replica: locality must not break the zone rule.
    vol = volume("v", 10 * GB, 2, dataLocality="best-effort", nodeID="n4")
    existing = [replica("r1", "v", "n3", "d1")]
    result = schedule(vol, hosts(), existing, replica_zone_level_soft_anti_affinity=False)
    assert nodes(result) == ["n1"]


def test_strict_local_detached_is_not_listed() -> None:
    vol = volume("v", 10 * GB, 1, dataLocality="strict-local")
    assert schedule(vol, hosts()) is None


def test_strict_local_goes_on_the_volume_node() -> None:
    vol = volume("v", 10 * GB, 1, dataLocality="strict-local", nodeID="n3")
    assert spots(schedule(vol, hosts())) == [("n3", "d1")]


def test_strict_local_with_its_replica_is_not_listed() -> None:
    vol = volume("v", 10 * GB, 1, dataLocality="strict-local", nodeID="n3")
    assert schedule(vol, hosts(), [replica("r1", "v", "n3", "d1")]) is None


STRICT_FAILURES: list[tuple[str, dict[str, Any], dict[str, Any], tuple[str, ...]]] = [
    # (id, the volume node's host, settings, reasons)
    ("node not ready", {"ready": False}, {}, ("hard affinity cannot be satisfied",)),
    ("storage-cordoned", {"allow": False}, {}, ("hard affinity cannot be satisfied",)),
    ("cordoned", {"cordoned": True}, {}, ("hard affinity cannot be satisfied",)),
    ("compute-only", {"compute_only": True}, {}, ("hard affinity cannot be satisfied",)),
    ("no storage node", {"storage": False}, {}, ("hard affinity cannot be satisfied",)),
    (
        "disk full",
        {"disks": {"d1": Disk(200 * GB, 20 * GB)}},
        {},
        ("insufficient storage",),
    ),
    (
        "disks unavailable",
        {"disks": {"d1": Disk(200 * GB, allow=False)}},
        {},
        ("disks are unavailable",),
    ),
]


@pytest.mark.parametrize(
    ("flags", "overrides", "reasons"),
    [row[1:] for row in STRICT_FAILURES],
    ids=[row[0] for row in STRICT_FAILURES],
)
def test_strict_local_failures(
    flags: dict[str, Any], overrides: dict[str, Any], reasons: tuple[str, ...]
) -> None:
    everything = hosts()
    everything[2] = Host("n3", zone="z3", **flags)
    vol = volume("v", 10 * GB, 1, dataLocality="strict-local", nodeID="n3")
    result = schedule(vol, everything, **overrides)
    assert result is not None
    assert result.placed == () and result.unplaced == 1
    assert result.reasons == reasons


def test_strict_local_on_an_unknown_node() -> None:
    vol = volume("v", 10 * GB, 1, dataLocality="strict-local", nodeID="elsewhere")
    result = schedule(vol, hosts())
    assert result is not None and result.reasons == ("hard affinity cannot be satisfied",)


# -- place_for_new_volume ---------------------------------------------------------------


def place(locality: str, attached: str, replicas: int = 2, **kwargs: Any) -> Any:
    view = kwargs.pop("view", None) or cluster(hosts())
    scheduled = kwargs.pop("scheduled", None) or ScheduledSpace()
    return place_for_new_volume(
        kwargs.pop("size", 10 * GB),
        replicas,
        locality,
        kwargs.pop("node_selector", ()),
        kwargs.pop("disk_selector", ()),
        attached,
        view,
        settings(**kwargs),
        scheduled,
        "pvc-1",
    )


@pytest.mark.parametrize(
    ("locality", "attached", "expected"),
    [
        ("disabled", "n3", ["n1", "n2"]),
        ("best-effort", "n3", ["n3", "n1"]),
        ("best-effort", "n4", ["n4", "n1"]),
        ("best-effort", "n1", ["n1", "n2"]),
    ],
)
def test_new_volume_as_if_attached(locality: str, attached: str, expected: list[str]) -> None:
    result = place(locality, attached)
    assert result.volume == "pvc-1"
    assert nodes(result) == expected


def test_new_strict_local_volume() -> None:
    assert spots(place("strict-local", "n3", 1)) == [("n3", "d1")]
    failed = place("strict-local", "n3", 1, size=500 * GB)
    assert failed.unplaced == 1 and failed.reasons == ("insufficient storage",)
    missing = place("strict-local", "nowhere", 1)
    assert missing.reasons == ("hard affinity cannot be satisfied",)


def test_new_volume_does_not_touch_scheduled_but_sees_it() -> None:
    view = cluster(hosts())
    scheduled = ScheduledSpace()
    scheduled.add("n1", "d1", 900 * GB)
    before = list(scheduled.items())
    result = place("disabled", "n3", view=view, scheduled=scheduled)
    assert list(scheduled.items()) == before and scheduled.version == 1
    assert "n1" not in nodes(result)


def test_many_pod_nodes_share_work_without_mixing_results() -> None:
    view = cluster(hosts())
    scheduled = ScheduledSpace()
    shared = {
        name: nodes(place("best-effort", name, view=view, scheduled=scheduled))
        for name in ("n1", "n2", "n3", "n4", "n1")
    }
    fresh = {name: nodes(place("best-effort", name)) for name in ("n1", "n2", "n3", "n4")}
    assert shared == fresh
    # A placement committed in between is seen by the next call.
    scheduled.add("n1", "d1", 950 * GB)
    assert "n1" not in nodes(place("best-effort", "n2", view=view, scheduled=scheduled))


@pytest.mark.parametrize(
    ("locality", "replicas"),
    [("nearby", 1), ("disabled", 0), ("strict-local", 2)],
)
def test_new_volume_rejects_bad_parameters(locality: str, replicas: int) -> None:
    with pytest.raises(ValueError):
        place(locality, "n1", replicas)
