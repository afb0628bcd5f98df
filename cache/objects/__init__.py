"""Typed views of Kubernetes objects, parsed once from raw JSON at ingestion.

Views are frozen dataclasses with slots: small, hashable by identity, safe to share
between the informer layer, the assume layer and a scheduling snapshot.
"""

import sys

from volsched.cache.objects import pickling
from volsched.cache.objects.core import (
    HostPort,
    Node,
    Pod,
    PodVolume,
    Taint,
    Toleration,
    parse_node,
    parse_pod,
)
from volsched.cache.objects.meta import ObjectMeta, OwnerReference
from volsched.cache.objects.registry import KINDS, KindInfo
from volsched.cache.objects.storage import (
    ClaimRef,
    CSIDriver,
    CSINode,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
    StorageClass,
)
from volsched.cache.objects.workloads import PriorityClass, Service, WorkloadSet

# The snapshot a warm start loads is these classes pickled: the quicker state for all.
pickling.install(sys.modules[__name__])

__all__ = [
    "KINDS",
    "CSIDriver",
    "CSINode",
    "CSIStorageCapacity",
    "ClaimRef",
    "HostPort",
    "KindInfo",
    "Node",
    "ObjectMeta",
    "OwnerReference",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "Pod",
    "PodVolume",
    "PriorityClass",
    "Service",
    "StorageClass",
    "Taint",
    "Toleration",
    "WorkloadSet",
    "parse_node",
    "parse_pod",
]
