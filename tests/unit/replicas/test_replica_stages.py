"""Node stage and disk stage filters, and the Longhorn reasons they give."""

from __future__ import annotations

from typing import Any

import pytest

from tests.unit.replicas.builders import GB, Disk, Host, schedule, spots, volume

DROPPED_NODES = [
    ("kubernetes node not ready", {"ready": False}),
    ("storage agent not ready", {"storage_ready": False}),
    ("storage-cordoned", {"allow": False}),
    ("draining (eviction requested)", {"evicting": True}),
    ("compute-only", {"compute_only": True}),
    ("no kubernetes node", {"kube": False}),
    ("no storage node", {"storage": False}),
    ("kubernetes-cordoned", {"cordoned": True}),
]


@pytest.mark.parametrize(
    "flags", [row[1] for row in DROPPED_NODES], ids=[row[0] for row in DROPPED_NODES]
)
def test_unusable_nodes_are_dropped(flags: dict[str, Any]) -> None:
    hosts = [Host("a-bad", zone="z1", **flags), Host("b-good", zone="z2")]
    assert spots(schedule(volume("v", GB, 1), hosts)) == [("b-good", "d1")]
    # With nothing else left: "nodes are unavailable".
    result = schedule(volume("v", GB, 1), hosts[:1])
    assert result is not None
    assert result.placed == () and result.unplaced == 1
    assert result.reasons == ("nodes are unavailable",)
    assert result.message == "nodes are unavailable"


def test_cordoned_node_is_usable_when_the_setting_allows() -> None:
    hosts = [Host("n1", cordoned=True)]
    result = schedule(volume("v", GB, 1), hosts, disable_scheduling_on_cordoned_node=False)
    assert spots(result) == [("n1", "d1")]


TAG_CASES = [
    # (id, node tags, selector, allow empty selector, schedulable)
    ("all selector tags present", ("fast", "ssd"), ["fast"], True, True),
    ("every tag is needed", ("fast",), ["fast", "nvme"], True, False),
    ("empty selector, allowed: tagged node", ("fast",), [], True, True),
    ("empty selector, not allowed: tagged node", ("fast",), [], False, False),
    ("empty selector, not allowed: untagged node", (), [], False, True),
]


@pytest.mark.parametrize(
    ("tags", "selector", "allow_empty", "ok"),
    [row[1:] for row in TAG_CASES],
    ids=[row[0] for row in TAG_CASES],
)
def test_node_tags(tags: tuple[str, ...], selector: list[str], allow_empty: bool, ok: bool) -> None:
    result = schedule(
        volume("v", GB, 1, nodeSelector=selector),
        [Host("n1", tags=tags)],
        allow_empty_node_selector_volume=allow_empty,
    )
    assert result is not None
    assert (result.unplaced == 0) is ok
    if not ok:
        # longhorn-manager gives a node that does not match no reason of its own.
        assert result.reasons == ("replica scheduling failed",)


@pytest.mark.parametrize(
    ("tags", "selector", "allow_empty", "ok"),
    [row[1:] for row in TAG_CASES],
    ids=[row[0] for row in TAG_CASES],
)
def test_disk_tags(tags: tuple[str, ...], selector: list[str], allow_empty: bool, ok: bool) -> None:
    host = Host("n1", disks={"d1": Disk(100 * GB, tags=tags)})
    result = schedule(
        volume("v", GB, 1, diskSelector=selector),
        [host],
        allow_empty_disk_selector_volume=allow_empty,
    )
    assert result is not None
    assert (result.unplaced == 0) is ok
    if not ok:
        assert result.reasons == ("tags not fulfilled",)


UNAVAILABLE_DISKS = [
    ("scheduling not allowed", Disk(100 * GB, allow=False)),
    ("evicting", Disk(100 * GB, evicting=True)),
    ("not reported by the agent", Disk(100 * GB, reported=False)),
]


@pytest.mark.parametrize(
    "disk", [row[1] for row in UNAVAILABLE_DISKS], ids=[row[0] for row in UNAVAILABLE_DISKS]
)
def test_unavailable_disks(disk: Disk) -> None:
    host = Host("n1", disks={"bad": disk, "good": Disk(100 * GB)})
    assert spots(schedule(volume("v", GB, 1), [host])) == [("n1", "good")]
    result = schedule(volume("v", GB, 1), [Host("n1", disks={"bad": disk})])
    assert result is not None and result.reasons == ("disks are unavailable",)


def test_node_without_disks_is_unavailable() -> None:
    result = schedule(volume("v", GB, 1), [Host("n1", disks={})])
    assert result is not None and result.reasons == ("disks are unavailable",)


def test_space_is_checked_before_tags() -> None:
    host = Host("n1", disks={"d1": Disk(10 * GB, 1 * GB, tags=("hdd",))})
    result = schedule(volume("v", GB, 1, diskSelector=["ssd"]), [host])
    assert result is not None and result.reasons == ("insufficient storage",)


def test_reasons_are_distinct_sorted_and_joined() -> None:
    hosts = [
        Host("n1", zone="z1", disks={"d1": Disk(10 * GB, 1 * GB)}),
        Host("n2", zone="z2", disks={"d1": Disk(100 * GB, tags=("hdd",))}),
        Host("n3", zone="z3", disks={"d1": Disk(100 * GB, allow=False)}),
        Host("n4", zone="z3", disks={"d1": Disk(10 * GB, 2 * GB)}),
    ]
    result = schedule(volume("v", GB, 2, diskSelector=["ssd"]), hosts)
    assert result is not None
    assert result.placed == () and result.unplaced == 2
    assert result.reasons == ("disks are unavailable", "insufficient storage", "tags not fulfilled")
    assert result.message == "disks are unavailable; insufficient storage; tags not fulfilled"


def test_success_has_no_reasons() -> None:
    result = schedule(volume("v", GB, 1), [Host("n1")])
    assert result is not None
    assert result.unplaced == 0 and result.reasons == () and result.message is None
