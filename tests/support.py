"""Builders for raw Kubernetes objects and a cluster cache made of them.

Tests describe clusters the way users write manifests (quantities as strings, labels as
maps) and go through the same parsers the daemon and ``simulate`` use.
"""

from __future__ import annotations

import itertools
from typing import Any

from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.registry import KINDS, kind_of

_versions = itertools.count(1)

Raw = dict[str, Any]


def meta(name: str, namespace: str | None = None, **extra: Any) -> Raw:
    data: Raw = {"name": name, "resourceVersion": str(next(_versions))}
    if namespace is not None:
        data["namespace"] = namespace
    data.update({k: v for k, v in extra.items() if v is not None})
    return data


def node(
    name: str,
    cpu: str = "4",
    memory: str = "8Gi",
    pods: int = 110,
    labels: dict[str, str] | None = None,
    taints: list[Raw] | None = None,
    unschedulable: bool = False,
    extra: dict[str, str] | None = None,
) -> Raw:
    all_labels = {"kubernetes.io/hostname": name, **(labels or {})}
    allocatable = {"cpu": cpu, "memory": memory, "pods": str(pods), **(extra or {})}
    return {
        "kind": "Node",
        "metadata": meta(name, labels=all_labels),
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {"allocatable": allocatable, "conditions": [{"type": "Ready", "status": "True"}]},
    }


def pod(
    name: str,
    namespace: str = "default",
    cpu: str | None = None,
    memory: str | None = None,
    claims: list[str] | None = None,
    node_name: str | None = None,
    labels: dict[str, str] | None = None,
    spec: Raw | None = None,
    priority: int | None = None,
    created: str | None = None,
    owner: Raw | None = None,
) -> Raw:
    requests = {k: v for k, v in (("cpu", cpu), ("memory", memory)) if v is not None}
    body: Raw = {
        "containers": [{"name": "main", "resources": {"requests": requests}}],
        "volumes": [
            {"name": f"v{index}", "persistentVolumeClaim": {"claimName": claim}}
            for index, claim in enumerate(claims or [])
        ],
    }
    if node_name:
        body["nodeName"] = node_name
    if priority is not None:
        body["priority"] = priority
    body.update(spec or {})
    metadata = meta(
        name,
        namespace,
        labels=labels,
        uid=f"uid-{namespace}-{name}",
        creationTimestamp=created or "2026-01-01T00:00:00Z",
        ownerReferences=[owner] if owner else None,
    )
    return {"kind": "Pod", "metadata": metadata, "spec": body}


def pv(
    name: str,
    capacity: str,
    storage_class: str = "local",
    node_names: list[str] | None = None,
    claim: tuple[str, str] | None = None,
    access_modes: tuple[str, ...] = ("ReadWriteOnce",),
    phase: str = "Available",
    labels: dict[str, str] | None = None,
    spec: Raw | None = None,
) -> Raw:
    body: Raw = {
        "capacity": {"storage": capacity},
        "accessModes": list(access_modes),
        "storageClassName": storage_class,
    }
    if node_names:
        body["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {
                        "matchExpressions": [
                            {
                                "key": "kubernetes.io/hostname",
                                "operator": "In",
                                "values": node_names,
                            }
                        ]
                    }
                ]
            }
        }
    if claim:
        body["claimRef"] = {"namespace": claim[0], "name": claim[1]}
    body.update(spec or {})
    return {
        "kind": "PersistentVolume",
        "metadata": meta(name, labels=labels),
        "spec": body,
        "status": {"phase": phase},
    }


def pvc(
    name: str,
    request: str = "1Gi",
    storage_class: str | None = "local",
    namespace: str = "default",
    volume_name: str = "",
    bound: bool = False,
    annotations: dict[str, str] | None = None,
    access_modes: tuple[str, ...] = ("ReadWriteOnce",),
    phase: str | None = None,
    spec: Raw | None = None,
    extra_meta: Raw | None = None,
) -> Raw:
    notes = dict(annotations or {})
    if bound:
        notes["pv.kubernetes.io/bind-completed"] = "yes"
    body: Raw = {
        "accessModes": list(access_modes),
        "resources": {"requests": {"storage": request}},
    }
    if storage_class is not None:
        body["storageClassName"] = storage_class
    if volume_name:
        body["volumeName"] = volume_name
    body.update(spec or {})
    metadata = meta(name, namespace, uid=f"uid-pvc-{namespace}-{name}", annotations=notes or None)
    metadata.update(extra_meta or {})
    return {
        "kind": "PersistentVolumeClaim",
        "metadata": metadata,
        "spec": body,
        "status": {"phase": phase or ("Bound" if bound else "Pending")},
    }


def storage_class(
    name: str,
    provisioner: str = "kubernetes.io/no-provisioner",
    mode: str = "WaitForFirstConsumer",
    allowed_topologies: list[Raw] | None = None,
    parameters: dict[str, str] | None = None,
    default: bool = False,
) -> Raw:
    annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else None
    body: Raw = {
        "kind": "StorageClass",
        "metadata": meta(name, annotations=annotations),
        "provisioner": provisioner,
        "volumeBindingMode": mode,
    }
    if allowed_topologies:
        body["allowedTopologies"] = allowed_topologies
    if parameters:
        body["parameters"] = parameters
    return body


def service(name: str, selector: dict[str, str], namespace: str = "default") -> Raw:
    return {"kind": "Service", "metadata": meta(name, namespace), "spec": {"selector": selector}}


def parse(raw: Raw) -> Any:
    return KINDS[kind_of(raw.get("apiVersion", ""), raw["kind"])].parse(raw)


def cluster(*objects: Raw) -> ClusterCache:
    """A cluster cache holding the parsed objects, in the order given."""
    cache = ClusterCache()
    for raw in objects:
        cache.upsert(kind_of(raw.get("apiVersion", ""), raw["kind"]), parse(raw))
    return cache
