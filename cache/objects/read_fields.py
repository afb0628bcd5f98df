"""The fields of each kind that scheduling reads, and nothing else: what a snapshot of a
live cluster may carry out of it.

A snapshot is for deciding where pods go, so it needs what the parsers in this package
read (``parse_pod``, ``parse_persistent_volume``, …) and not a byte more. Above all it
must not carry a container's ``env``, ``args`` or ``command``, a volume's secret or
config-map source, or the ``kubectl.kubernetes.io/last-applied-configuration``
annotation (which repeats the whole manifest, environment included): those hold
credentials, and a snapshot is a file people attach to bug reports.

The shapes below are allow-lists. A field missing from one is dropped, so a parser that
starts reading a new field must add it here; ``tests/unit/test_read_fields.py`` parses
every example object before and after and fails when the two views differ.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, TypeAlias

from volsched.cache.objects.longhorn import SETTING_TYPES
from volsched.cache.objects.storage import (
    ANN_BETA_DEFAULT_CLASS,
    ANN_BETA_STORAGE_CLASS,
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_DEFAULT_CLASS,
    ANN_SELECTED_NODE,
)

# ``True`` keeps a value whole; a mapping keeps those keys of a mapping, each by its own
# shape; a one-element list applies its shape to every item of a list.
Shape: TypeAlias = bool | Mapping[str, "Shape"] | list["Shape"]
KEEP = True

# The annotations any parser reads; every other annotation stays in the cluster.
READ_ANNOTATIONS = frozenset(
    {
        ANN_BIND_COMPLETED,
        ANN_BOUND_BY_CONTROLLER,
        ANN_SELECTED_NODE,
        ANN_BETA_STORAGE_CLASS,
        ANN_DEFAULT_CLASS,
        ANN_BETA_DEFAULT_CLASS,
    }
)

_METADATA: Shape = {
    "name": KEEP,
    "namespace": KEEP,
    "uid": KEEP,
    "resourceVersion": KEEP,
    "labels": KEEP,
    "creationTimestamp": KEEP,
    "deletionTimestamp": KEEP,
    "ownerReferences": [
        {"apiVersion": KEEP, "kind": KEEP, "name": KEEP, "uid": KEEP, "controller": KEEP}
    ],
}

_CONTAINER: Shape = {
    "name": KEEP,
    # ImageLocality scores the nodes that already hold the image.
    "image": KEEP,
    "resources": {"requests": KEEP, "limits": KEEP},
    "ports": [{"hostPort": KEEP, "hostIP": KEEP, "protocol": KEEP}],
    "restartPolicy": KEEP,
}

# A volume keeps its name and, of its source, only what identifies a claim or one of the
# in-tree disks NoDiskConflict compares; any other source (secret, configMap, …) goes.
_VOLUME: Shape = {
    "name": KEEP,
    "persistentVolumeClaim": {"claimName": KEEP, "readOnly": KEEP},
    # Its claim is an object of its own (``<pod>-<volume>``): only the presence counts.
    "ephemeral": {},
    "gcePersistentDisk": {"pdName": KEEP, "readOnly": KEEP},
    "awsElasticBlockStore": {"volumeID": KEEP},
    "iscsi": {"iqn": KEEP, "readOnly": KEEP},
    "rbd": {"monitors": KEEP, "pool": KEEP, "image": KEEP, "readOnly": KEEP},
}

_CONDITIONS: Shape = [{"type": KEEP, "status": KEEP, "reason": KEEP}]
_SELECTOR_SPEC: Mapping[str, Shape] = {"spec": {"selector": KEEP}}

_SHAPES: dict[str, Mapping[str, Shape]] = {
    "Pod": {
        "spec": {
            "schedulerName": KEEP,
            "nodeName": KEEP,
            "priority": KEEP,
            "priorityClassName": KEEP,
            "preemptionPolicy": KEEP,
            "containers": [_CONTAINER],
            "initContainers": [_CONTAINER],
            "overhead": KEEP,
            "volumes": [_VOLUME],
            "nodeSelector": KEEP,
            "affinity": KEEP,
            "tolerations": KEEP,
            "topologySpreadConstraints": KEEP,
            "schedulingGates": KEEP,
            "resourceClaims": [
                {"name": KEEP, "resourceClaimName": KEEP, "resourceClaimTemplateName": KEEP}
            ],
        },
        "status": {
            "phase": KEEP,
            "resourceClaimStatuses": KEEP,
            "conditions": _CONDITIONS,
            "nominatedNodeName": KEEP,
            "startTime": KEEP,
        },
    },
    "Node": {
        "spec": {"unschedulable": KEEP, "taints": KEEP},
        "status": {
            "allocatable": KEEP,
            "capacity": KEEP,
            "conditions": _CONDITIONS,
            "images": [{"names": KEEP, "sizeBytes": KEEP}],
        },
    },
    "PersistentVolume": {
        "spec": {
            "capacity": KEEP,
            "accessModes": KEEP,
            "storageClassName": KEEP,
            "volumeMode": KEEP,
            "claimRef": {"namespace": KEEP, "name": KEEP, "uid": KEEP},
            "nodeAffinity": KEEP,
            "csi": {"driver": KEEP, "volumeHandle": KEEP},
        },
        "status": {"phase": KEEP},
    },
    "PersistentVolumeClaim": {
        "spec": {
            "storageClassName": KEEP,
            "selector": KEEP,
            "volumeName": KEEP,
            "resources": {"requests": KEEP},
            "accessModes": KEEP,
            "volumeMode": KEEP,
        },
        "status": {"phase": KEEP},
    },
    "StorageClass": {
        "provisioner": KEEP,
        "volumeBindingMode": KEEP,
        "allowedTopologies": KEEP,
        "parameters": KEEP,
    },
    "CSINode": {"spec": {"drivers": [{"name": KEEP, "allocatable": KEEP, "topologyKeys": KEEP}]}},
    "CSIDriver": {"spec": {"storageCapacity": KEEP}},
    "CSIStorageCapacity": {
        "storageClassName": KEEP,
        "nodeTopology": KEEP,
        "capacity": KEEP,
        "maximumVolumeSize": KEEP,
    },
    "Namespace": {},
    "Service": _SELECTOR_SPEC,
    "ReplicaSet": _SELECTOR_SPEC,
    "StatefulSet": _SELECTOR_SPEC,
    "PriorityClass": {"value": KEEP, "globalDefault": KEEP},
    "PodDisruptionBudget": {
        "spec": {"selector": KEEP},
        "status": {"disruptedPods": KEEP, "disruptionsAllowed": KEEP},
    },
    "DeviceClass": {},
    "ResourceClaim": {
        "spec": {
            "devices": {
                "requests": [
                    {
                        "name": KEEP,
                        "exactly": {"deviceClassName": KEEP},
                        "firstAvailable": [{"name": KEEP, "deviceClassName": KEEP}],
                    }
                ]
            }
        },
        "status": {"allocation": {"nodeSelector": KEEP}, "reservedFor": [{"uid": KEEP}]},
    },
    "StorageNode": {
        "spec": {
            "allowScheduling": KEEP,
            "evictionRequested": KEEP,
            "computeOnly": KEEP,
            "tags": KEEP,
            "disks": KEEP,
        },
        "status": {"ready": KEEP, "disks": KEEP},
    },
    "Volume": {
        "spec": {
            "size": KEEP,
            "numberOfReplicas": KEEP,
            "nodeSelector": KEEP,
            "diskSelector": KEEP,
            "dataLocality": KEEP,
            "nodeID": KEEP,
            "replicaNodeLevelSoftAntiAffinity": KEEP,
            "replicaZoneLevelSoftAntiAffinity": KEEP,
            "replicaDiskLevelSoftAntiAffinity": KEEP,
        },
        "status": {"robustness": KEEP, "actualSize": KEEP, "lastDegradedAt": KEEP},
    },
    "Replica": {
        "spec": {
            "volumeName": KEEP,
            "nodeID": KEEP,
            "diskID": KEEP,
            "primary": KEEP,
            "evictionRequested": KEEP,
            "failedAt": KEEP,
            "healthyAt": KEEP,
            "rebuildRetryCount": KEEP,
        },
        "status": {"synced": KEEP},
    },
    "LonghornNode": {
        "spec": {"allowScheduling": KEEP, "evictionRequested": KEEP, "tags": KEEP, "disks": KEEP},
        "status": {"conditions": _CONDITIONS, "diskStatus": KEEP},
    },
    "LonghornVolume": {
        "spec": {
            "size": KEEP,
            "numberOfReplicas": KEEP,
            "nodeSelector": KEEP,
            "diskSelector": KEEP,
            "dataLocality": KEEP,
            "replicaSoftAntiAffinity": KEEP,
            "replicaZoneSoftAntiAffinity": KEEP,
            "replicaDiskSoftAntiAffinity": KEEP,
        },
        "status": {
            "state": KEEP,
            "robustness": KEEP,
            "currentNodeID": KEEP,
            "actualSize": KEEP,
            "lastDegradedAt": KEEP,
        },
    },
    "LonghornReplica": {
        "spec": {
            "volumeName": KEEP,
            "nodeID": KEEP,
            "diskID": KEEP,
            "evictionRequested": KEEP,
            "failedAt": KEEP,
            "healthyAt": KEEP,
            "rebuildRetryCount": KEEP,
        },
        "status": {"currentState": KEEP},
    },
    "LonghornSetting": {"value": KEEP},
}


def _kept(value: Any, shape: Shape) -> Any:
    if shape is True:
        return value
    if isinstance(shape, list):
        if not isinstance(value, list):
            return value if not isinstance(value, Mapping) else {}
        return [_kept(item, shape[0]) for item in value]
    if isinstance(shape, Mapping):
        if not isinstance(value, Mapping):
            # A scalar or list where a mapping belongs: kept, so the parser names the
            # field it finds wrong, as it would have in the cluster.
            return value if not isinstance(value, list) else []
        return {key: _kept(value[key], sub) for key, sub in shape.items() if key in value}
    return None  # ``False``: not kept


def read_fields(kind: str, raw: Mapping[str, Any]) -> dict[str, Any] | None:
    """The part of ``raw`` (an object of volsched's ``kind``, as ``KINDS`` names it) that
    scheduling reads; None for an object nothing reads (a Longhorn Setting volsched
    does not use) or a kind this module does not know."""
    shape = _SHAPES.get(kind)
    if shape is None:
        return None
    if kind == "LonghornSetting" and (raw.get("metadata") or {}).get("name") not in SETTING_TYPES:
        return None
    result: dict[str, Any] = {
        key: raw[key] for key in ("apiVersion", "kind") if isinstance(raw.get(key), str)
    }
    metadata = raw.get("metadata")
    kept_meta = _kept(metadata, _METADATA) if metadata is not None else None
    if isinstance(metadata, Mapping) and isinstance(kept_meta, dict):
        annotations = metadata.get("annotations")
        if isinstance(annotations, Mapping):
            read = {k: v for k, v in annotations.items() if k in READ_ANNOTATIONS}
            if read:
                kept_meta["annotations"] = read
    if kept_meta is not None:
        result["metadata"] = kept_meta
    for key, sub in shape.items():
        if key in raw:
            result[key] = _kept(raw[key], sub)
    return result
