"""Longhorn's objects read into the replica scheduler's views, and refused with one
error naming the field when malformed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.support import node
from tests.unit.longhorn.objects import (
    GIB,
    LonghornDisk,
    Raw,
    disk_uuid,
    longhorn_node,
    longhorn_replica,
    longhorn_setting,
    longhorn_volume,
)
from volsched.cache.errors import ObjectError
from volsched.cache.objects.longhorn import (
    parse_longhorn_node,
    parse_longhorn_replica,
    parse_longhorn_setting,
    parse_longhorn_volume,
)
from volsched.daemon.cli.snapshot_files import load_snapshot


def test_a_node_is_read_with_its_disks_named_by_uuid() -> None:
    disks = {
        "ssd": LonghornDisk(
            maximum=200 * GIB,
            available=150 * GIB,
            scheduled=20 * GIB,
            reserved=10 * GIB,
            tags=("ssd",),
        ),
        "gone": LonghornDisk(ready=False),
        "off": LonghornDisk(allow=False),
    }
    view = parse_longhorn_node(longhorn_node("n1", disks, tags=("fast",)))
    assert view.name == "n1" and view.ready and view.allow_scheduling
    assert view.tags == ("fast",)
    by_name = {disk.path.rsplit("/", 1)[1]: disk for disk in view.disks}
    ssd = by_name["ssd"]
    assert ssd.name == disk_uuid("n1", "ssd")
    assert ssd.tags == ("ssd",) and ssd.storage_reserved == 10 * GIB
    assert ssd.status is not None
    assert (ssd.status.storage_maximum, ssd.status.storage_available) == (200 * GIB, 150 * GIB)
    assert ssd.status.storage_scheduled == 20 * GIB
    assert by_name["gone"].status is None  # a disk Longhorn marked not Ready holds nothing
    assert not by_name["off"].allow_scheduling


def test_a_block_disk_serves_only_the_v2_engine() -> None:
    raw = longhorn_node("n1")
    raw["spec"]["disks"]["default-disk-1"]["diskType"] = "block"
    (disk,) = parse_longhorn_node(raw).disks
    assert not disk.allow_scheduling


@pytest.mark.parametrize(
    ("flags", "ready", "allow"),
    [
        ({}, True, True),
        ({"ready": False}, False, True),
        ({"schedulable": False}, True, False),
        ({"allow": False}, True, False),
    ],
)
def test_node_conditions(flags: dict[str, Any], ready: bool, allow: bool) -> None:
    view = parse_longhorn_node(longhorn_node("n1", **flags))
    assert (view.ready, view.allow_scheduling) == (ready, allow)


VOLUME_CASES: list[tuple[str, Raw, dict[str, Any]]] = [
    (
        "attached best-effort",
        longhorn_volume(
            "v", 5 * GIB, 2, "best-effort", node="n2", replicaSoftAntiAffinity="enabled"
        ),
        {
            "size": 5 * GIB,
            "number_of_replicas": 2,
            "data_locality": "best-effort",
            "node_id": "n2",
            "robustness": "healthy",
            "replica_node_level_soft_anti_affinity": "enabled",
        },
    ),
    (
        "detached reports unknown robustness: its data is intact",
        longhorn_volume("v", state="detached", robustness="unknown"),
        {"node_id": "", "robustness": "healthy"},
    ),
    (
        "a faulted detached volume stays faulted",
        longhorn_volume("v", state="detached", robustness="faulted"),
        {"robustness": "faulted"},
    ),
    (
        "empty overrides and locality mean Longhorn's defaults",
        longhorn_volume("v", dataLocality="", replicaZoneSoftAntiAffinity=""),
        {"data_locality": "disabled", "replica_zone_level_soft_anti_affinity": "ignored"},
    ),
]


@pytest.mark.parametrize(("case", "raw", "fields"), VOLUME_CASES, ids=[c[0] for c in VOLUME_CASES])
def test_volumes(case: str, raw: Raw, fields: dict[str, Any]) -> None:
    view = parse_longhorn_volume(raw)
    assert {key: getattr(view, key) for key in fields} == fields


REPLICA_CASES: list[tuple[str, Raw, bool, bool, bool]] = [
    # (case, replica, failed, synced, running)
    ("running", longhorn_replica("r", "v", "n1"), False, True, True),
    (
        "stopped (volume detached)",
        longhorn_replica("r", "v", "n1", state="stopped"),
        False,
        True,
        False,
    ),
    (
        "rebuilding, never healthy",
        longhorn_replica("r", "v", "n1", healthy_at=""),
        False,
        False,
        True,
    ),
    (
        "failed",
        longhorn_replica("r", "v", "n1", state="error", failed_at="2026-11-01T11:00:00Z"),
        True,
        False,
        False,
    ),
]


@pytest.mark.parametrize(
    ("case", "raw", "failed", "synced", "running"),
    REPLICA_CASES,
    ids=[c[0] for c in REPLICA_CASES],
)
def test_replicas(case: str, raw: Raw, failed: bool, synced: bool, running: bool) -> None:
    view = parse_longhorn_replica(raw)
    assert view.volume_name == "v" and view.node_id == "n1"
    assert view.disk_id == disk_uuid("n1", "default-disk-1")
    assert (view.failed, view.synced, view.running) == (failed, synced, running)


def _broken(raw: Raw, path: str, value: Any) -> Raw:
    target = raw
    *parents, last = path.split(".")
    for key in parents:
        target = target[key]
    target[last] = value
    return raw


MALFORMED: list[tuple[str, Any, Raw, str]] = [
    (
        "volume size not a number",
        parse_longhorn_volume,
        _broken(longhorn_volume("v"), "spec.size", "ten"),
        "spec.size",
    ),
    (
        "strict-local with three replicas",
        parse_longhorn_volume,
        longhorn_volume("v", replicas=3, locality="strict-local"),
        "spec.dataLocality",
    ),
    (
        "unknown data locality",
        parse_longhorn_volume,
        longhorn_volume("v", locality="nearby"),
        "spec.dataLocality",
    ),
    (
        "node conditions as a map (the v1beta1 shape)",
        parse_longhorn_node,
        _broken(longhorn_node("n1"), "status.conditions", {"Ready": {"status": "True"}}),
        "status.conditions",
    ),
    (
        "replica without a volume",
        parse_longhorn_replica,
        _broken(longhorn_replica("r", "v", "n1"), "spec.volumeName", ""),
        "spec.volumeName",
    ),
    (
        "a boolean setting that is not true or false",
        parse_longhorn_setting,
        longhorn_setting("replica-soft-anti-affinity", "yes"),
        "value",
    ),
    (
        "a percentage that is not a number",
        parse_longhorn_setting,
        longhorn_setting("storage-over-provisioning-percentage", "lots"),
        "value",
    ),
]


@pytest.mark.parametrize(
    ("case", "parse", "raw", "field"), MALFORMED, ids=[c[0] for c in MALFORMED]
)
def test_malformed_objects_name_the_field(case: str, parse: Any, raw: Raw, field: str) -> None:
    with pytest.raises(ObjectError) as caught:
        parse(raw)
    assert field in str(caught.value)


def test_settings_volsched_does_not_read_are_kept_as_they_are() -> None:
    setting = parse_longhorn_setting(longhorn_setting("backup-target", "s3://bucket@us/"))
    assert (setting.name, setting.value) == ("backup-target", "s3://bucket@us/")


def test_a_snapshot_tells_longhorn_nodes_from_kubernetes_nodes(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    objects = [
        node("n1"),
        longhorn_node("n1"),
        longhorn_volume("v", replicas=1),
        longhorn_replica("v-r-1", "v", "n1"),
        longhorn_setting("storage-over-provisioning-percentage", "150"),
    ]
    path.write_text(yaml.safe_dump_all(objects))
    cluster = load_snapshot([path])
    assert cluster.nodes["n1"].node.meta.name == "n1"
    assert cluster.storage.storage_nodes["n1"].ready
    assert cluster.storage.volumes["v"].number_of_replicas == 1
    assert list(cluster.replicas_by_volume["v"]) == ["v-r-1"]
    assert cluster.longhorn_settings() == {"storage-over-provisioning-percentage": "150"}


def test_a_malformed_longhorn_object_in_a_snapshot_names_the_file(tmp_path: Path) -> None:
    path = tmp_path / "cluster.yaml"
    path.write_text(yaml.safe_dump(longhorn_setting("replica-soft-anti-affinity", "maybe")))
    with pytest.raises(ObjectError) as caught:
        load_snapshot([path])
    assert str(path) in str(caught.value) and "value" in str(caught.value)
