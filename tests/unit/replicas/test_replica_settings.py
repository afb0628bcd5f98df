"""The ``replicaScheduling`` config section: Longhorn's defaults and the checks."""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest

from volsched.cache.errors import ConfigError
from volsched.scheduling.replicas import ReplicaSchedulingSettings, settings_from_mapping


def test_defaults_are_longhorns() -> None:
    settings = settings_from_mapping({}, "config.yaml")
    assert settings == ReplicaSchedulingSettings()
    assert settings.replica_node_level_soft_anti_affinity is False
    assert settings.replica_zone_level_soft_anti_affinity is True
    assert settings.replica_disk_level_soft_anti_affinity is True
    assert settings.storage_minimal_available_percentage == 25
    assert settings.storage_over_provisioning_percentage == 100
    assert settings.allow_empty_node_selector_volume is True
    assert settings.allow_empty_disk_selector_volume is True
    assert settings.disable_scheduling_on_cordoned_node is True
    assert settings.replica_replenishment_wait_interval_seconds == 600
    assert settings.disk_selection == "balanced"


def test_every_key_is_read() -> None:
    settings = settings_from_mapping(
        {
            "replicaNodeLevelSoftAntiAffinity": True,
            "replicaZoneLevelSoftAntiAffinity": False,
            "replicaDiskLevelSoftAntiAffinity": False,
            "storageMinimalAvailablePercentage": 10,
            "storageOverProvisioningPercentage": 200,
            "allowEmptyNodeSelectorVolume": False,
            "allowEmptyDiskSelectorVolume": False,
            "disableSchedulingOnCordonedNode": False,
            "replicaReplenishmentWaitIntervalSeconds": 0,
            "diskSelection": "most-usable",
        },
        "config.yaml",
    )
    assert settings == ReplicaSchedulingSettings(
        replica_node_level_soft_anti_affinity=True,
        replica_zone_level_soft_anti_affinity=False,
        replica_disk_level_soft_anti_affinity=False,
        storage_minimal_available_percentage=10,
        storage_over_provisioning_percentage=200,
        allow_empty_node_selector_volume=False,
        allow_empty_disk_selector_volume=False,
        disable_scheduling_on_cordoned_node=False,
        replica_replenishment_wait_interval_seconds=0,
        disk_selection="most-usable",
    )


@pytest.mark.parametrize(
    ("key", "attribute", "value"),
    [
        ("storageMinimalAvailablePercentage", "storage_minimal_available_percentage", 0),
        ("storageMinimalAvailablePercentage", "storage_minimal_available_percentage", 100),
        ("storageOverProvisioningPercentage", "storage_over_provisioning_percentage", 0),
        ("storageOverProvisioningPercentage", "storage_over_provisioning_percentage", 1000),
        (
            "replicaReplenishmentWaitIntervalSeconds",
            "replica_replenishment_wait_interval_seconds",
            86400,
        ),
    ],
)
def test_bounds_are_inclusive(key: str, attribute: str, value: int) -> None:
    settings = settings_from_mapping({key: value}, "config.yaml")
    assert getattr(settings, attribute) == value
    assert settings == dataclasses.replace(ReplicaSchedulingSettings(), **{attribute: value})


@pytest.mark.parametrize(
    ("key", "value", "problem"),
    [
        ("replicaSoftAntiAffinity", True, "unknown key"),
        ("replicaNodeLevelSoftAntiAffinity", "true", "must be true or false"),
        ("disableSchedulingOnCordonedNode", 1, "must be true or false"),
        ("storageMinimalAvailablePercentage", 101, "between 0 and 100"),
        ("storageMinimalAvailablePercentage", -1, "between 0 and 100"),
        ("storageMinimalAvailablePercentage", 25.5, "must be an integer"),
        ("storageMinimalAvailablePercentage", True, "must be an integer"),
        ("storageOverProvisioningPercentage", 1001, "between 0 and 1000"),
        ("storageOverProvisioningPercentage", "100", "must be an integer"),
        ("replicaReplenishmentWaitIntervalSeconds", -1, "at least 0"),
        ("diskSelection", "random", "balanced, most-usable"),
        ("diskSelection", None, "balanced, most-usable"),
    ],
)
def test_bad_values_name_source_and_key(key: str, value: Any, problem: str) -> None:
    with pytest.raises(ConfigError) as caught:
        settings_from_mapping({key: value}, "/etc/volsched/config.yaml")
    message = str(caught.value)
    assert message.startswith(f"/etc/volsched/config.yaml: replicaScheduling.{key}: ")
    assert problem in message


def test_section_must_be_a_mapping() -> None:
    with pytest.raises(ConfigError, match=r"^cfg: replicaScheduling: must be a mapping$"):
        settings_from_mapping(["balanced"], "cfg")  # type: ignore[arg-type]
