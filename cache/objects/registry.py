"""Which kinds volsched reads, and how each is parsed.

One table, so that the snapshot loader, the watchers and the store agree on the kinds,
whether they are namespaced, and the API group they live in.
"""

from __future__ import annotations

import functools
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from volsched.cache.objects.core import parse_node, parse_pod
from volsched.cache.objects.dra import API_VERSION as DRA_API_VERSION
from volsched.cache.objects.dra import parse_device_class, parse_resource_claim
from volsched.cache.objects.fields import Raw
from volsched.cache.objects.longhorn import API_VERSION as LONGHORN_API_VERSION
from volsched.cache.objects.longhorn import (
    parse_longhorn_node,
    parse_longhorn_replica,
    parse_longhorn_setting,
    parse_longhorn_volume,
)
from volsched.cache.objects.policy import parse_pod_disruption_budget
from volsched.cache.objects.replicated import API_VERSION as REPLICATED_API_VERSION
from volsched.cache.objects.replicated import parse_replica, parse_storage_node, parse_volume
from volsched.cache.objects.storage import (
    parse_csi_driver,
    parse_csi_node,
    parse_csi_storage_capacity,
    parse_persistent_volume,
    parse_persistent_volume_claim,
    parse_storage_class,
)
from volsched.cache.objects.workloads import (
    parse_namespace,
    parse_priority_class,
    parse_replica_set,
    parse_service,
    parse_stateful_set,
)


@dataclass(frozen=True, slots=True)
class KindInfo:
    kind: str
    api_version: str
    plural: str
    namespaced: bool
    parse: Callable[[Raw], Any]


KINDS: dict[str, KindInfo] = {
    info.kind: info
    for info in (
        KindInfo("Node", "v1", "nodes", False, parse_node),
        KindInfo("Pod", "v1", "pods", True, parse_pod),
        KindInfo("PersistentVolume", "v1", "persistentvolumes", False, parse_persistent_volume),
        KindInfo(
            "PersistentVolumeClaim",
            "v1",
            "persistentvolumeclaims",
            True,
            parse_persistent_volume_claim,
        ),
        KindInfo("StorageClass", "storage.k8s.io/v1", "storageclasses", False, parse_storage_class),
        KindInfo("CSINode", "storage.k8s.io/v1", "csinodes", False, parse_csi_node),
        KindInfo("CSIDriver", "storage.k8s.io/v1", "csidrivers", False, parse_csi_driver),
        KindInfo(
            "CSIStorageCapacity",
            "storage.k8s.io/v1",
            "csistoragecapacities",
            True,
            parse_csi_storage_capacity,
        ),
        KindInfo("Namespace", "v1", "namespaces", False, parse_namespace),
        KindInfo("Service", "v1", "services", True, parse_service),
        KindInfo("ReplicaSet", "apps/v1", "replicasets", True, parse_replica_set),
        KindInfo("StatefulSet", "apps/v1", "statefulsets", True, parse_stateful_set),
        KindInfo(
            "PriorityClass",
            "scheduling.k8s.io/v1",
            "priorityclasses",
            False,
            parse_priority_class,
        ),
        KindInfo(
            "PodDisruptionBudget",
            "policy/v1",
            "poddisruptionbudgets",
            True,
            parse_pod_disruption_budget,
        ),
        KindInfo("DeviceClass", DRA_API_VERSION, "deviceclasses", False, parse_device_class),
        KindInfo("ResourceClaim", DRA_API_VERSION, "resourceclaims", True, parse_resource_claim),
        KindInfo("StorageNode", REPLICATED_API_VERSION, "storagenodes", False, parse_storage_node),
        KindInfo("Volume", REPLICATED_API_VERSION, "volumes", False, parse_volume),
        KindInfo("Replica", REPLICATED_API_VERSION, "replicas", False, parse_replica),
        # Longhorn's kinds share names with core and volsched kinds, so they are known
        # here by the kind prefixed with "Longhorn"; ``kind_of`` maps an object to it.
        KindInfo("LonghornNode", LONGHORN_API_VERSION, "nodes", True, parse_longhorn_node),
        KindInfo("LonghornVolume", LONGHORN_API_VERSION, "volumes", True, parse_longhorn_volume),
        KindInfo("LonghornReplica", LONGHORN_API_VERSION, "replicas", True, parse_longhorn_replica),
        KindInfo("LonghornSetting", LONGHORN_API_VERSION, "settings", True, parse_longhorn_setting),
    )
}

# Kinds of other API groups that are read under a name of their own.
_GROUP_PREFIXES = {LONGHORN_API_VERSION.split("/")[0]: "Longhorn"}


def kind_of(api_version: str, kind: str) -> str:
    """The name volsched knows an object's kind by (``longhorn.io`` Node → LonghornNode)."""
    group = api_version.split("/")[0] if "/" in api_version else ""
    return _GROUP_PREFIXES.get(group, "") + kind


def register(info: KindInfo) -> None:
    """Add a kind (the storage CRDs register themselves here)."""
    KINDS[info.kind] = info
    view_class.cache_clear()


@functools.cache
def view_class(kind: str) -> type[Any] | None:
    """The class ``kind``'s parser returns (None for a kind volsched does not read): what
    a view read back from anywhere but the parser — a stored snapshot — must be."""
    info = KINDS.get(kind)
    if info is None:
        return None
    found = typing.get_type_hints(info.parse).get("return")
    return found if isinstance(found, type) else None
