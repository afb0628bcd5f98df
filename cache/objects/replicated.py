"""volsched's replicated block storage: StorageNodes, Volumes and Replicas.

Three cluster-scoped kinds of group ``volsched.io/v1alpha1``.  Field names follow
Longhorn's (``numberOfReplicas``, ``dataLocality``, ``storageReserved``, ``failedAt`` …) so
its users recognise them.  Sizes are Kubernetes quantities (``10Gi``) or integers of
bytes, rounded up to whole bytes; times are RFC 3339 strings or null and are kept as
epoch seconds.

Validation here is what the CRD's OpenAPI schema and CEL rule enforce in a cluster, so a
hand-written snapshot is rejected for the same reasons the API server would reject it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from volsched.cache.objects.fields import Fields, Raw
from volsched.cache.objects.meta import ObjectMeta, parse_meta
from volsched.cache.quantity import ceil_value

API_VERSION = "volsched.io/v1alpha1"
# The provisioner of the replicated volumes' StorageClasses, and the CSI driver of their PVs.
CSI_DRIVER = "replicated.volsched.io"

DATA_LOCALITY_DISABLED = "disabled"
DATA_LOCALITY_BEST_EFFORT = "best-effort"
DATA_LOCALITY_STRICT_LOCAL = "strict-local"
DATA_LOCALITIES = (DATA_LOCALITY_DISABLED, DATA_LOCALITY_BEST_EFFORT, DATA_LOCALITY_STRICT_LOCAL)

# Per-volume overrides of the cluster's soft anti-affinity settings.
ANTI_AFFINITY_IGNORED = "ignored"
ANTI_AFFINITY_ENABLED = "enabled"
ANTI_AFFINITY_DISABLED = "disabled"
ANTI_AFFINITY_OVERRIDES = (ANTI_AFFINITY_IGNORED, ANTI_AFFINITY_ENABLED, ANTI_AFFINITY_DISABLED)

ROBUSTNESS_HEALTHY = "healthy"
ROBUSTNESS_DEGRADED = "degraded"
ROBUSTNESS_FAULTED = "faulted"
ROBUSTNESS_UNKNOWN = "unknown"
ROBUSTNESS_VALUES = (
    ROBUSTNESS_HEALTHY,
    ROBUSTNESS_DEGRADED,
    ROBUSTNESS_FAULTED,
    ROBUSTNESS_UNKNOWN,
)

# longhorn-manager stops reusing a failed replica after this many rebuild attempts.
FAILED_REPLICA_MAX_RETRY_COUNT = 5


@dataclass(frozen=True, slots=True)
class DiskStatus:
    """What the storage agent measured on one disk, in bytes."""

    storage_maximum: int = 0
    storage_available: int = 0
    storage_scheduled: int = 0


@dataclass(frozen=True, slots=True)
class StorageDisk:
    """One disk of a StorageNode: its spec, and its status once the agent reported it."""

    name: str
    path: str = ""
    allow_scheduling: bool = True
    eviction_requested: bool = False
    storage_reserved: int = 0
    tags: tuple[str, ...] = ()
    status: DiskStatus | None = None


@dataclass(frozen=True, slots=True)
class StorageNode:
    """The storage side of one Kubernetes Node (same name).

    ``disks`` are the disks of ``spec.disks``, sorted by name; a disk listed only in
    ``status.disks`` is not configured and is left out.  ``ready`` is false until the
    storage agent says otherwise.
    """

    meta: ObjectMeta
    allow_scheduling: bool = True
    eviction_requested: bool = False
    compute_only: bool = False
    tags: tuple[str, ...] = ()
    disks: tuple[StorageDisk, ...] = ()
    ready: bool = False

    @property
    def name(self) -> str:
        return self.meta.name

    def disk(self, name: str) -> StorageDisk | None:
        for disk in self.disks:
            if disk.name == name:
                return disk
        return None


@dataclass(frozen=True, slots=True)
class Volume:
    meta: ObjectMeta
    size: int
    number_of_replicas: int = 3
    node_selector: tuple[str, ...] = ()
    disk_selector: tuple[str, ...] = ()
    data_locality: str = DATA_LOCALITY_DISABLED
    node_id: str = ""
    replica_node_level_soft_anti_affinity: str = ANTI_AFFINITY_IGNORED
    replica_zone_level_soft_anti_affinity: str = ANTI_AFFINITY_IGNORED
    replica_disk_level_soft_anti_affinity: str = ANTI_AFFINITY_IGNORED
    robustness: str = ROBUSTNESS_UNKNOWN
    actual_size: int = 0
    last_degraded_at: float | None = None

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def attached(self) -> bool:
        return bool(self.node_id)


@dataclass(frozen=True, slots=True)
class Replica:
    meta: ObjectMeta
    volume_name: str
    node_id: str = ""
    disk_id: str = ""
    primary: bool = False
    eviction_requested: bool = False
    failed_at: float | None = None
    healthy_at: float | None = None
    rebuild_retry_count: int = 0
    synced: bool = True
    # Whether the replica's instance runs. volsched's Replicas report no instance state
    # (always true); Longhorn's say ``status.currentState``.
    running: bool = True

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def failed(self) -> bool:
        return self.failed_at is not None

    @property
    def deleting(self) -> bool:
        return self.meta.deletion_timestamp is not None

    @property
    def potentially_reusable(self) -> bool:
        """A failed replica that may rejoin its volume (longhorn-manager's rule).

        It must still have its node and disk, not have failed too often, and not be
        leaving its disk.
        """
        return (
            self.failed
            and bool(self.node_id)
            and bool(self.disk_id)
            and self.rebuild_retry_count < FAILED_REPLICA_MAX_RETRY_COUNT
            and not self.eviction_requested
        )


def _bytes(fields: Fields, key: str, default: int | None = 0) -> int | None:
    quantity = fields.quantity(key)
    if quantity is None:
        return default
    if quantity < 0:
        raise fields.fail(key, "must not be negative")
    return ceil_value(quantity)


def _size(fields: Fields, key: str) -> int:
    value = _bytes(fields, key)
    assert value is not None  # the default is 0
    return value


def _choice(fields: Fields, key: str, allowed: tuple[str, ...], default: str) -> str:
    value = fields.str(key, default) or default
    if value not in allowed:
        raise fields.fail(key, f"{value!r} is not one of {', '.join(allowed)}")
    return value


def _count(fields: Fields, key: str, default: int, minimum: int) -> int:
    value = fields.int(key, default)
    if value < minimum:
        raise fields.fail(key, f"must be at least {minimum}, not {value}")
    return value


def _disk(name: str, spec: Fields, status: Fields | None) -> StorageDisk:
    disk_status = None
    if status is not None:
        disk_status = DiskStatus(
            storage_maximum=_size(status, "storageMaximum"),
            storage_available=_size(status, "storageAvailable"),
            storage_scheduled=_size(status, "storageScheduled"),
        )
    return StorageDisk(
        name=name,
        path=spec.str("path"),
        allow_scheduling=spec.bool("allowScheduling", True),
        eviction_requested=spec.bool("evictionRequested"),
        storage_reserved=_size(spec, "storageReserved"),
        tags=spec.str_list("tags"),
        status=disk_status,
    )


def _time(fields: Fields, key: str) -> float | None:
    """An RFC 3339 time; Longhorn writes "" for "never", so that is null too."""
    if fields.raw(key) == "":
        return None
    return fields.timestamp(key)


def _mapping_keys(fields: Fields, key: str) -> list[str]:
    value = fields.raw(key)
    if value is None:
        return []
    if not isinstance(value, Mapping):
        raise fields.fail(key, "must be a mapping of disk name to disk")
    return sorted(str(name) for name in value)


def parse_storage_node(raw: Raw) -> StorageNode:
    meta = parse_meta(raw.get("metadata"), "StorageNode", namespaced=False)
    spec = Fields(raw.get("spec"), "StorageNode", meta.name, "spec")
    status = Fields(raw.get("status"), "StorageNode", meta.name, "status")
    spec_disks = spec.sub("disks")
    status_disks = status.sub("disks")
    reported = set(_mapping_keys(status, "disks"))
    disks = []
    for name in _mapping_keys(spec, "disks"):
        disk_status = status_disks.sub(name) if name in reported else None
        disks.append(_disk(name, spec_disks.sub(name), disk_status))
    return StorageNode(
        meta=meta,
        allow_scheduling=spec.bool("allowScheduling", True),
        eviction_requested=spec.bool("evictionRequested"),
        compute_only=spec.bool("computeOnly"),
        tags=spec.str_list("tags"),
        disks=tuple(disks),
        ready=status.bool("ready"),
    )


def parse_volume(raw: Raw) -> Volume:
    meta = parse_meta(raw.get("metadata"), "Volume", namespaced=False)
    spec = Fields(raw.get("spec"), "Volume", meta.name, "spec")
    status = Fields(raw.get("status"), "Volume", meta.name, "status")
    size = _bytes(spec, "size", None)
    if size is None:
        raise spec.fail("size", "is required")
    replicas = _count(spec, "numberOfReplicas", 3, 1)
    locality = _choice(spec, "dataLocality", DATA_LOCALITIES, DATA_LOCALITY_DISABLED)
    if locality == DATA_LOCALITY_STRICT_LOCAL and replicas != 1:
        raise spec.fail("dataLocality", f"strict-local needs numberOfReplicas 1, not {replicas}")
    return Volume(
        meta=meta,
        size=size,
        number_of_replicas=replicas,
        node_selector=spec.str_list("nodeSelector"),
        disk_selector=spec.str_list("diskSelector"),
        data_locality=locality,
        node_id=spec.str("nodeID"),
        replica_node_level_soft_anti_affinity=_choice(
            spec, "replicaNodeLevelSoftAntiAffinity", ANTI_AFFINITY_OVERRIDES, "ignored"
        ),
        replica_zone_level_soft_anti_affinity=_choice(
            spec, "replicaZoneLevelSoftAntiAffinity", ANTI_AFFINITY_OVERRIDES, "ignored"
        ),
        replica_disk_level_soft_anti_affinity=_choice(
            spec, "replicaDiskLevelSoftAntiAffinity", ANTI_AFFINITY_OVERRIDES, "ignored"
        ),
        robustness=_choice(status, "robustness", ROBUSTNESS_VALUES, ROBUSTNESS_UNKNOWN),
        actual_size=_size(status, "actualSize"),
        last_degraded_at=_time(status, "lastDegradedAt"),
    )


def parse_replica(raw: Raw) -> Replica:
    meta = parse_meta(raw.get("metadata"), "Replica", namespaced=False)
    spec = Fields(raw.get("spec"), "Replica", meta.name, "spec")
    status = Fields(raw.get("status"), "Replica", meta.name, "status")
    volume_name = spec.str("volumeName")
    if not volume_name:
        raise spec.fail("volumeName", "is required")
    return Replica(
        meta=meta,
        volume_name=volume_name,
        node_id=spec.str("nodeID"),
        disk_id=spec.str("diskID"),
        primary=spec.bool("primary"),
        eviction_requested=spec.bool("evictionRequested"),
        failed_at=_time(spec, "failedAt"),
        healthy_at=_time(spec, "healthyAt"),
        rebuild_retry_count=_count(spec, "rebuildRetryCount", 0, 0),
        synced=status.bool("synced", True),
    )
