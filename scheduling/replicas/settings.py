"""The ``replicaScheduling`` section of the config file: Longhorn's settings, typed.

Keys and defaults are Longhorn's (``replica-soft-anti-affinity`` … become camelCase keys
here).  Every value is checked once, when the file is read, so the scheduler never meets
an out-of-range percentage.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from volsched.cache.errors import ConfigError

DISK_SELECTION_BALANCED = "balanced"
DISK_SELECTION_MOST_USABLE = "most-usable"
DISK_SELECTIONS = (DISK_SELECTION_BALANCED, DISK_SELECTION_MOST_USABLE)

# Longhorn sets no upper bound on over-provisioning (its UI suggests up to a few hundred
# percent).  A thousand percent — promising ten times a disk's size — is far beyond any
# sane cluster, so a larger value is taken as a typo (an extra zero) rather than intent.
MAX_OVER_PROVISIONING_PERCENTAGE = 1000


@dataclass(frozen=True, slots=True)
class ReplicaSchedulingSettings:
    replica_node_level_soft_anti_affinity: bool = False
    replica_zone_level_soft_anti_affinity: bool = True
    replica_disk_level_soft_anti_affinity: bool = True
    storage_minimal_available_percentage: int = 25
    storage_over_provisioning_percentage: int = 100
    allow_empty_node_selector_volume: bool = True
    allow_empty_disk_selector_volume: bool = True
    disable_scheduling_on_cordoned_node: bool = True
    replica_replenishment_wait_interval_seconds: int = 600
    disk_selection: str = DISK_SELECTION_BALANCED


# config key -> (attribute, kind, minimum, maximum); kind is "bool", "int" or "choice".
_KEYS: dict[str, tuple[str, str, int, int | None]] = {
    "replicaNodeLevelSoftAntiAffinity": ("replica_node_level_soft_anti_affinity", "bool", 0, 0),
    "replicaZoneLevelSoftAntiAffinity": ("replica_zone_level_soft_anti_affinity", "bool", 0, 0),
    "replicaDiskLevelSoftAntiAffinity": ("replica_disk_level_soft_anti_affinity", "bool", 0, 0),
    "storageMinimalAvailablePercentage": ("storage_minimal_available_percentage", "int", 0, 100),
    "storageOverProvisioningPercentage": (
        "storage_over_provisioning_percentage",
        "int",
        0,
        MAX_OVER_PROVISIONING_PERCENTAGE,
    ),
    "allowEmptyNodeSelectorVolume": ("allow_empty_node_selector_volume", "bool", 0, 0),
    "allowEmptyDiskSelectorVolume": ("allow_empty_disk_selector_volume", "bool", 0, 0),
    "disableSchedulingOnCordonedNode": ("disable_scheduling_on_cordoned_node", "bool", 0, 0),
    "replicaReplenishmentWaitIntervalSeconds": (
        "replica_replenishment_wait_interval_seconds",
        "int",
        0,
        None,
    ),
    "diskSelection": ("disk_selection", "choice", 0, 0),
}

SECTION = "replicaScheduling"
_INT64_MAX = 2**63 - 1


def settings_from_mapping(data: Mapping[str, object], source: str) -> ReplicaSchedulingSettings:
    """Read the ``replicaScheduling`` mapping of ``source``; absent keys keep the defaults.

    Raises ``ConfigError`` naming ``source`` and the key for an unknown key, a value of the
    wrong type or a value out of range.
    """

    def fail(key: str, problem: str) -> ConfigError:
        return ConfigError(f"{source}: {SECTION}.{key}: {problem}")

    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: {SECTION}: must be a mapping")
    values: dict[str, Any] = {}  # checked above, key by key
    for key, value in data.items():
        if key not in _KEYS:
            known = ", ".join(sorted(_KEYS))
            raise fail(str(key), f"unknown key (known keys: {known})")
        attribute, kind, minimum, maximum = _KEYS[key]
        if kind == "bool":
            if not isinstance(value, bool):
                raise fail(key, f"must be true or false, not {value!r}")
        elif kind == "int":
            if isinstance(value, bool) or not isinstance(value, int):
                raise fail(key, f"must be an integer, not {value!r}")
            # Without a maximum of its own, a setting is an int64, as Longhorn reads it.
            if value < minimum or value > (_INT64_MAX if maximum is None else maximum):
                if maximum is None:
                    bound = f"at least {minimum} and at most {_INT64_MAX}"
                else:
                    bound = f"between {minimum} and {maximum}"
                raise fail(key, f"must be {bound}, not {value}")
        elif value not in DISK_SELECTIONS:
            raise fail(key, f"{value!r} is not one of {', '.join(DISK_SELECTIONS)}")
        values[attribute] = value
    return ReplicaSchedulingSettings(**values)
