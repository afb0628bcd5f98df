"""The replica scheduler's settings as a Longhorn cluster sets them.

Longhorn keeps its settings as ``Setting`` objects; those volsched reads override the
configured ``replicaScheduling`` values, so the scheduler decides with the numbers
Longhorn's own replica scheduler will use.  Values were checked when the Settings were
read.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from volsched.cache.objects.longhorn import (
    SETTING_ALLOW_EMPTY_DISK_SELECTOR_VOLUME,
    SETTING_ALLOW_EMPTY_NODE_SELECTOR_VOLUME,
    SETTING_DEFAULT_DATA_LOCALITY,
    SETTING_DEFAULT_REPLICA_COUNT,
    SETTING_DISABLE_SCHEDULING_ON_CORDONED_NODE,
    SETTING_REPLICA_DISK_SOFT_ANTI_AFFINITY,
    SETTING_REPLICA_REPLENISHMENT_WAIT_INTERVAL,
    SETTING_REPLICA_SOFT_ANTI_AFFINITY,
    SETTING_REPLICA_ZONE_SOFT_ANTI_AFFINITY,
    SETTING_STORAGE_MINIMAL_AVAILABLE_PERCENTAGE,
    SETTING_STORAGE_OVER_PROVISIONING_PERCENTAGE,
    setting_value,
)
from volsched.cache.objects.replicated import DATA_LOCALITY_DISABLED
from volsched.scheduling.replicas.settings import ReplicaSchedulingSettings

# Longhorn's setting name → the attribute of ReplicaSchedulingSettings it sets.
_ATTRIBUTES = {
    SETTING_REPLICA_SOFT_ANTI_AFFINITY: "replica_node_level_soft_anti_affinity",
    SETTING_REPLICA_ZONE_SOFT_ANTI_AFFINITY: "replica_zone_level_soft_anti_affinity",
    SETTING_REPLICA_DISK_SOFT_ANTI_AFFINITY: "replica_disk_level_soft_anti_affinity",
    SETTING_ALLOW_EMPTY_NODE_SELECTOR_VOLUME: "allow_empty_node_selector_volume",
    SETTING_ALLOW_EMPTY_DISK_SELECTOR_VOLUME: "allow_empty_disk_selector_volume",
    SETTING_DISABLE_SCHEDULING_ON_CORDONED_NODE: "disable_scheduling_on_cordoned_node",
    SETTING_STORAGE_MINIMAL_AVAILABLE_PERCENTAGE: "storage_minimal_available_percentage",
    SETTING_STORAGE_OVER_PROVISIONING_PERCENTAGE: "storage_over_provisioning_percentage",
    SETTING_REPLICA_REPLENISHMENT_WAIT_INTERVAL: "replica_replenishment_wait_interval_seconds",
}

# Longhorn's defaults for a StorageClass parameter left out.
DEFAULT_REPLICA_COUNT = 3


def settings_with_longhorn(
    base: ReplicaSchedulingSettings, values: Mapping[str, str]
) -> ReplicaSchedulingSettings:
    changes: dict[str, Any] = {}
    for name, attribute in _ATTRIBUTES.items():
        if name not in values:
            continue
        text = setting_value(values[name])
        changes[attribute] = text == "true" if text in ("true", "false") else int(text)
    return dataclasses.replace(base, **changes) if changes else base


def default_replica_count(values: Mapping[str, str]) -> int:
    text = setting_value(values.get(SETTING_DEFAULT_REPLICA_COUNT, ""))
    if not (text.isascii() and text.isdigit() and len(text) <= 19):
        return DEFAULT_REPLICA_COUNT
    return int(text) if int(text) > 0 else DEFAULT_REPLICA_COUNT


def default_data_locality(values: Mapping[str, str]) -> str:
    return setting_value(values.get(SETTING_DEFAULT_DATA_LOCALITY, "")) or DATA_LOCALITY_DISABLED
