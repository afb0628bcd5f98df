"""Longhorn's own objects (``longhorn.io/v1beta2``), read as longhorn-manager writes them.

Longhorn's Node, Volume and Replica are parsed straight into the replica scheduler's
views (``StorageNode``, ``Volume``, ``Replica``), so the replica scheduler and pod
locality serve Longhorn with the code path they already use for ``volsched.io`` objects.
volsched only reads these objects; Longhorn writes them.

Where Longhorn's shape differs from volsched's:

- a Longhorn disk is named in ``spec.disks`` but a Replica names its disk by the disk's
  UUID (``spec.diskID``), so a disk's view is named by ``status.diskStatus.<name>.diskUUID``
  once Longhorn reported it;
- readiness is a list of conditions (``Ready``, ``Schedulable``) rather than a flag;
- a detached volume reports robustness ``unknown`` and its replicas ``stopped``: its data
  is intact, so the view calls it healthy, as a pod restarted after a detach is the case
  locality matters most for;
- numbers of bytes are int64 values, ``spec.size`` of a Volume as a string.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass

from volsched.cache.objects.fields import Fields, Raw, shown
from volsched.cache.objects.meta import ObjectMeta, parse_meta
from volsched.cache.objects.replicated import (
    ANTI_AFFINITY_IGNORED,
    ANTI_AFFINITY_OVERRIDES,
    DATA_LOCALITIES,
    DATA_LOCALITY_DISABLED,
    DATA_LOCALITY_STRICT_LOCAL,
    ROBUSTNESS_HEALTHY,
    ROBUSTNESS_UNKNOWN,
    ROBUSTNESS_VALUES,
    DiskStatus,
    Replica,
    StorageDisk,
    StorageNode,
    Volume,
)
from volsched.cache.quantity import ceil_value

API_VERSION = "longhorn.io/v1beta2"
CSI_DRIVER = "driver.longhorn.io"

# Longhorn's replica states (status.currentState) that hold the volume's data.
REPLICA_RUNNING = "running"
REPLICA_DATA_STATES = (REPLICA_RUNNING, "stopped", "starting", "stopping")
VOLUME_DETACHED = "detached"


# The names of the Longhorn Settings volsched reads (longhorn-manager's SettingName*).
SETTING_REPLICA_SOFT_ANTI_AFFINITY = "replica-soft-anti-affinity"
SETTING_REPLICA_ZONE_SOFT_ANTI_AFFINITY = "replica-zone-soft-anti-affinity"
SETTING_REPLICA_DISK_SOFT_ANTI_AFFINITY = "replica-disk-soft-anti-affinity"
SETTING_ALLOW_EMPTY_NODE_SELECTOR_VOLUME = "allow-empty-node-selector-volume"
SETTING_ALLOW_EMPTY_DISK_SELECTOR_VOLUME = "allow-empty-disk-selector-volume"
SETTING_DISABLE_SCHEDULING_ON_CORDONED_NODE = "disable-scheduling-on-cordoned-node"
SETTING_STORAGE_MINIMAL_AVAILABLE_PERCENTAGE = "storage-minimal-available-percentage"
SETTING_STORAGE_OVER_PROVISIONING_PERCENTAGE = "storage-over-provisioning-percentage"
SETTING_REPLICA_REPLENISHMENT_WAIT_INTERVAL = "replica-replenishment-wait-interval"
SETTING_DEFAULT_REPLICA_COUNT = "default-replica-count"
SETTING_DEFAULT_DATA_LOCALITY = "default-data-locality"

# The Settings volsched reads, by the type Longhorn gives their values; Longhorn's webhook
# refuses other values, so a snapshot holding one is refused here the same way.
SETTING_TYPES = {
    SETTING_REPLICA_SOFT_ANTI_AFFINITY: "bool",
    SETTING_REPLICA_ZONE_SOFT_ANTI_AFFINITY: "bool",
    SETTING_REPLICA_DISK_SOFT_ANTI_AFFINITY: "bool",
    SETTING_ALLOW_EMPTY_NODE_SELECTOR_VOLUME: "bool",
    SETTING_ALLOW_EMPTY_DISK_SELECTOR_VOLUME: "bool",
    SETTING_DISABLE_SCHEDULING_ON_CORDONED_NODE: "bool",
    SETTING_STORAGE_MINIMAL_AVAILABLE_PERCENTAGE: "int",
    SETTING_STORAGE_OVER_PROVISIONING_PERCENTAGE: "int",
    SETTING_REPLICA_REPLENISHMENT_WAIT_INTERVAL: "int",
    SETTING_DEFAULT_REPLICA_COUNT: "int",
    SETTING_DEFAULT_DATA_LOCALITY: "locality",
}


def setting_value(value: str) -> str:
    """The value for the v1 data engine: recent Longhorn releases keep some settings per
    data engine, as JSON (``{"v1":"3","v2":"3"}``)."""
    text = value.strip()
    if text.startswith("{"):
        try:
            decoded = json.loads(text)
        except ValueError:
            return text
        if isinstance(decoded, dict) and "v1" in decoded:
            return str(decoded["v1"]).strip()
    return text


def _is_int64_digits(text: str) -> bool:
    """What Longhorn's strconv reading of an int setting takes: ASCII digits, an int64."""
    digits = text.lstrip("0") or "0"
    return text.isascii() and text.isdigit() and len(digits) <= 19 and int(digits) < 2**63


def _check_setting(fields: Fields, name: str, value: str) -> None:
    kind = SETTING_TYPES.get(name)
    text = setting_value(value)
    if kind == "bool" and text not in ("true", "false"):
        raise fields.fail("value", f'must be "true" or "false", not {value!r}')
    if kind == "int" and not _is_int64_digits(text):
        raise fields.fail("value", f"must be a non-negative integer, not {shown(value)}")
    if kind == "locality" and text not in DATA_LOCALITIES:
        raise fields.fail("value", f"{value!r} is not one of {', '.join(DATA_LOCALITIES)}")


@dataclass(frozen=True, slots=True)
class LonghornSetting:
    """One Longhorn Setting: its name is the setting (``storage-over-provisioning-
    percentage``), its ``value`` a string, as Longhorn keeps every setting."""

    meta: ObjectMeta
    value: str

    @property
    def name(self) -> str:
        return self.meta.name


def is_longhorn(view: StorageNode | Volume | Replica) -> bool:
    """Whether a view came from a Longhorn object: Longhorn's kinds are namespaced
    (``longhorn-system``), volsched's are cluster-scoped."""
    return bool(view.meta.namespace)


def _bytes(fields: Fields, key: str) -> int:
    quantity = fields.quantity(key)
    if quantity is None:
        return 0
    if quantity < 0:
        raise fields.fail(key, "must not be negative")
    return ceil_value(quantity)


def _conditions(fields: Fields, key: str) -> dict[str, str]:
    """``type → status`` of a v1beta2 condition list."""
    value = fields.raw(key)
    if value is None:
        return {}
    if not isinstance(value, list):
        raise fields.fail(key, "must be a list of conditions")
    found: dict[str, str] = {}
    for index, item in enumerate(value):
        if not isinstance(item, Mapping):
            raise fields.fail(f"{key}[{index}]", "must be a mapping with type and status")
        found[str(item.get("type", ""))] = str(item.get("status", ""))
    return found


def _choice(fields: Fields, key: str, allowed: tuple[str, ...], default: str) -> str:
    value = fields.str(key) or default
    if value not in allowed:
        raise fields.fail(key, f"{value!r} is not one of {', '.join(allowed)}")
    return value


def _names(fields: Fields, key: str) -> list[str]:
    value = fields.raw(key)
    if value is None:
        return []
    if not isinstance(value, Mapping):
        raise fields.fail(key, "must be a mapping of disk name to disk")
    return sorted(str(name) for name in value)


def _disk(name: str, spec: Fields, status: Fields | None) -> StorageDisk:
    # A block disk serves only the v2 data engine, which volsched does not place.
    allow = spec.bool("allowScheduling", True) and spec.str("diskType") != "block"
    measured = None
    view_name = name
    if status is not None:
        conditions = _conditions(status, "conditions")
        view_name = status.str("diskUUID") or name
        # A disk Longhorn marked not Ready (missing, wrong filesystem) holds nothing.
        if conditions.get("Ready", "True") == "True":
            measured = DiskStatus(
                storage_maximum=_bytes(status, "storageMaximum"),
                storage_available=_bytes(status, "storageAvailable"),
                storage_scheduled=_bytes(status, "storageScheduled"),
            )
        allow = allow and conditions.get("Schedulable", "True") == "True"
    return StorageDisk(
        name=view_name,
        path=spec.str("path"),
        allow_scheduling=allow,
        eviction_requested=spec.bool("evictionRequested"),
        storage_reserved=_bytes(spec, "storageReserved"),
        tags=spec.str_list("tags"),
        status=measured,
    )


def parse_longhorn_node(raw: Raw) -> StorageNode:
    meta = parse_meta(raw.get("metadata"), "Node", namespaced=True)
    spec = Fields(raw.get("spec"), "Node", meta.name, "spec")
    status = Fields(raw.get("status"), "Node", meta.name, "status")
    conditions = _conditions(status, "conditions")
    spec_disks = spec.sub("disks")
    status_disks = status.sub("diskStatus")
    reported = set(_names(status, "diskStatus"))
    disks = [
        _disk(name, spec_disks.sub(name), status_disks.sub(name) if name in reported else None)
        for name in _names(spec, "disks")
    ]
    disks.sort(key=lambda disk: disk.name)
    return StorageNode(
        meta=meta,
        allow_scheduling=spec.bool("allowScheduling", True)
        and conditions.get("Schedulable", "True") == "True",
        eviction_requested=spec.bool("evictionRequested"),
        tags=spec.str_list("tags"),
        disks=tuple(disks),
        ready=conditions.get("Ready") == "True",
    )


def _time(fields: Fields, key: str) -> float | None:
    """Longhorn writes "" for "never"."""
    if fields.raw(key) in ("", None):
        return None
    return fields.timestamp(key)


def parse_longhorn_volume(raw: Raw) -> Volume:
    meta = parse_meta(raw.get("metadata"), "Volume", namespaced=True)
    spec = Fields(raw.get("spec"), "Volume", meta.name, "spec")
    status = Fields(raw.get("status"), "Volume", meta.name, "status")
    if spec.raw("size") is None:
        raise spec.fail("size", "is required")
    replicas = spec.int("numberOfReplicas", 3) or 3
    if replicas < 1:
        raise spec.fail("numberOfReplicas", f"must be at least 1, not {replicas}")
    locality = _choice(spec, "dataLocality", DATA_LOCALITIES, DATA_LOCALITY_DISABLED)
    if locality == DATA_LOCALITY_STRICT_LOCAL and replicas != 1:
        raise spec.fail("dataLocality", f"strict-local needs numberOfReplicas 1, not {replicas}")
    state = status.str("state")
    robustness = _choice(status, "robustness", ROBUSTNESS_VALUES, ROBUSTNESS_UNKNOWN)
    if state == VOLUME_DETACHED and robustness == ROBUSTNESS_UNKNOWN:
        robustness = ROBUSTNESS_HEALTHY

    def override(key: str) -> str:
        return _choice(spec, key, ANTI_AFFINITY_OVERRIDES, ANTI_AFFINITY_IGNORED)

    return Volume(
        meta=meta,
        size=_bytes(spec, "size"),
        number_of_replicas=replicas,
        node_selector=spec.str_list("nodeSelector"),
        disk_selector=spec.str_list("diskSelector"),
        data_locality=locality,
        node_id=status.str("currentNodeID"),
        replica_node_level_soft_anti_affinity=override("replicaSoftAntiAffinity"),
        replica_zone_level_soft_anti_affinity=override("replicaZoneSoftAntiAffinity"),
        replica_disk_level_soft_anti_affinity=override("replicaDiskSoftAntiAffinity"),
        robustness=robustness,
        actual_size=_bytes(status, "actualSize"),
        last_degraded_at=_time(status, "lastDegradedAt"),
    )


def parse_longhorn_replica(raw: Raw) -> Replica:
    meta = parse_meta(raw.get("metadata"), "Replica", namespaced=True)
    spec = Fields(raw.get("spec"), "Replica", meta.name, "spec")
    status = Fields(raw.get("status"), "Replica", meta.name, "status")
    volume_name = spec.str("volumeName")
    if not volume_name:
        raise spec.fail("volumeName", "is required")
    state = status.str("currentState")
    retries = spec.int("rebuildRetryCount")
    if retries < 0:
        raise spec.fail("rebuildRetryCount", f"must not be negative, not {retries}")
    return Replica(
        meta=meta,
        volume_name=volume_name,
        node_id=spec.str("nodeID"),
        disk_id=spec.str("diskID"),
        eviction_requested=spec.bool("evictionRequested"),
        failed_at=_time(spec, "failedAt"),
        healthy_at=_time(spec, "healthyAt"),
        rebuild_retry_count=retries,
        # A replica not yet started (or never reported) is still being rebuilt.
        # longhorn-manager sets healthyAt once the engine has the replica in RW mode, and
        # clears it when it reuses a failed replica for a rebuild.
        synced=state in REPLICA_DATA_STATES and _time(spec, "healthyAt") is not None,
        running=state == REPLICA_RUNNING,
    )


def parse_longhorn_setting(raw: Raw) -> LonghornSetting:
    meta = parse_meta(raw.get("metadata"), "Setting", namespaced=True)
    fields = Fields(raw, "Setting", meta.name, "")
    value = fields.raw("value")
    if value is None:
        value = ""
    if not isinstance(value, str):
        raise fields.fail("value", f"must be a string, not {value!r}")
    _check_setting(fields, meta.name, value)
    return LonghornSetting(meta=meta, value=value)
