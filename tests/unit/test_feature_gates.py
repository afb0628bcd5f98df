"""kube-scheduler's ``--feature-gates`` flag and volsched's ``featureGates`` key."""

from __future__ import annotations

from pathlib import Path

import pytest

from volsched.cache.errors import ConfigError
from volsched.daemon.config.loading import load_settings
from volsched.scheduling.scheduler_config.feature_gates import (
    parse_feature_gates_flag,
    parse_feature_gates_mapping,
)


@pytest.mark.parametrize(
    ("flag", "expected"),
    [
        ("StorageCapacityScoring=true", {"StorageCapacityScoring": True}),
        ("StorageCapacityScoring=false", {"StorageCapacityScoring": False}),
        (" StorageCapacityScoring = T ,", {"StorageCapacityScoring": True}),
        ("StorageCapacityScoring=0", {"StorageCapacityScoring": False}),
        ("", {}),
    ],
)
def test_the_flag_reads_as_kube_scheduler_reads_it(flag: str, expected: dict[str, bool]) -> None:
    assert parse_feature_gates_flag(flag) == expected


@pytest.mark.parametrize(
    ("flag", "message"),
    [
        ("Bogus=true", "--feature-gates: unrecognized feature gate: Bogus"),
        (
            "StorageCapacityScoring",
            "--feature-gates: missing bool value for StorageCapacityScoring",
        ),
        (
            "StorageCapacityScoring=yes",
            "--feature-gates: invalid value of StorageCapacityScoring=yes, err: not a boolean",
        ),
    ],
)
def test_a_bad_flag_is_one_error(flag: str, message: str) -> None:
    with pytest.raises(ConfigError) as refused:
        parse_feature_gates_flag(flag)
    assert str(refused.value).startswith(message)


def test_the_key_must_map_known_gates_to_booleans() -> None:
    assert parse_feature_gates_mapping({"StorageCapacityScoring": True}, "c.yaml") == {
        "StorageCapacityScoring": True
    }
    with pytest.raises(ConfigError, match=r"c.yaml: featureGates.StorageCapacityScoring: must"):
        parse_feature_gates_mapping({"StorageCapacityScoring": "on"}, "c.yaml")
    with pytest.raises(ConfigError, match=r"c.yaml: featureGates: unrecognized feature gate: X"):
        parse_feature_gates_mapping({"X": True}, "c.yaml")


def test_the_flag_overrides_the_file_and_reaches_the_profiles(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "featureGates: {StorageCapacityScoring: true}\n---\n"
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
    )
    on = load_settings(str(path), environ={})
    assert on.feature_gates.storage_capacity_scoring
    (profile,) = on.profiles
    assert "VolumeBinding" in [p.name for p in profile.policy.priorities]
    off = load_settings(str(path), environ={}, feature_gates="StorageCapacityScoring=false")
    assert not off.feature_gates.storage_capacity_scoring
    (profile,) = off.profiles
    assert "VolumeBinding" not in [p.name for p in profile.policy.priorities]
