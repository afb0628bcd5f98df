"""Defaulting and the admission plugins a scheduler depends on.

What a real cluster adds to an object between the client's POST and the first watch
event: a pod's ``schedulerName`` and ``priority`` (Priority admission), its service
account (ServiceAccount admission: a pod whose account does not exist is refused), a
claim's StorageClass (DefaultStorageClass admission), a new node's
``node.kubernetes.io/not-ready:NoSchedule`` taint (TaintNodesByCondition admission),
PV and class defaults, a namespace's name label.  On a create through the API, the
status of kinds whose status belongs to controllers is reset, as upstream's create
strategies do (a new PV is ``Pending`` until the PV controller makes it ``Available``);
``ApiServer.load`` keeps status as given, since it restores a cluster's state rather
than posting new objects.
"""

from __future__ import annotations

from collections.abc import Callable

from volsched.emulator.errors import forbidden
from volsched.emulator.raw import Raw, annotations_of, metadata, name_of, now_rfc3339

DEFAULT_CLASS_ANNOTATIONS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)

Lookup = Callable[[str, str], list[Raw]]  # (group, plural) -> stored objects

DEFAULT_SERVICE_ACCOUNT = "default"
MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
NOT_READY_TAINT = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


def _spec(obj: Raw) -> Raw:
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        spec = {}
        obj["spec"] = spec
    return spec


def default_storage_class(classes: list[Raw]) -> str | None:
    """The default class's name; the newest wins when several are marked, as upstream."""
    marked = [
        c
        for c in classes
        if any(annotations_of(c).get(a) == "true" for a in DEFAULT_CLASS_ANNOTATIONS)
    ]
    if not marked:
        return None
    marked.sort(key=lambda c: (str(metadata(c).get("creationTimestamp", "")), name_of(c)))
    return name_of(marked[-1])


def apply_defaults(group: str, plural: str, obj: Raw) -> None:
    """Field defaults (``SetDefaults_*``): idempotent, fill only what is missing."""
    if group == "" and plural == "pods":
        _spec(obj).setdefault("schedulerName", "default-scheduler")
    elif group == "" and plural == "persistentvolumes":
        spec = _spec(obj)
        spec.setdefault("persistentVolumeReclaimPolicy", "Retain")
        spec.setdefault("volumeMode", "Filesystem")
    elif group == "" and plural == "persistentvolumeclaims":
        _spec(obj).setdefault("volumeMode", "Filesystem")
    elif group == "storage.k8s.io" and plural == "storageclasses":
        obj.setdefault("reclaimPolicy", "Delete")
        obj.setdefault("volumeBindingMode", "Immediate")
    elif group == "" and plural == "namespaces":
        labels = metadata(obj).setdefault("labels", {})
        labels.setdefault("kubernetes.io/metadata.name", name_of(obj))


PVC_PROTECTION = "kubernetes.io/pvc-protection"
PV_PROTECTION = "kubernetes.io/pv-protection"


def admit(group: str, plural: str, obj: Raw, lookup: Lookup, protect_storage: bool = False) -> None:
    """Admission on create: pod priority and service account, a claim's default
    StorageClass, a new node's not-ready taint, and (``protect_storage``) the storage
    protection finalizers."""
    if (
        protect_storage
        and group == ""
        and plural in ("persistentvolumeclaims", "persistentvolumes")
    ):
        finalizer = PVC_PROTECTION if plural == "persistentvolumeclaims" else PV_PROTECTION
        finalizers = metadata(obj).setdefault("finalizers", [])
        if isinstance(finalizers, list) and finalizer not in finalizers:
            finalizers.append(finalizer)
    if group == "" and plural == "pods":
        _admit_priority(obj, lookup)
        _admit_service_account(obj, lookup)
    elif group == "" and plural == "nodes":
        # Every new node starts tainted not-ready; the node lifecycle controller lifts the
        # taint once the node is Ready. A control plane without that controller keeps it.
        taints = _spec(obj).setdefault("taints", [])
        if not any(
            isinstance(t, dict)
            and t.get("key") == NOT_READY_TAINT["key"]
            and t.get("effect") == NOT_READY_TAINT["effect"]
            for t in taints
        ):
            taints.append(dict(NOT_READY_TAINT))
    elif group == "" and plural == "persistentvolumeclaims":
        spec = _spec(obj)
        if "storageClassName" not in spec or spec["storageClassName"] is None:
            default = default_storage_class(lookup("storage.k8s.io", "storageclasses"))
            if default is not None:
                spec["storageClassName"] = default


def _admit_service_account(pod: Raw, lookup: Lookup) -> None:
    """A pod runs as a ServiceAccount of its namespace (``default`` unless it names one),
    which must exist: in a real cluster the ServiceAccount controller creates each
    namespace's ``default`` shortly after the namespace. (The token volume upstream then
    mounts is left out: nothing here reads it.)"""
    if annotations_of(pod).get(MIRROR_POD_ANNOTATION) is not None:
        return
    spec = _spec(pod)
    account = str(spec.get("serviceAccountName") or DEFAULT_SERVICE_ACCOUNT)
    namespace = str(metadata(pod).get("namespace") or "")
    found = any(
        name_of(sa) == account and metadata(sa).get("namespace") == namespace
        for sa in lookup("", "serviceaccounts")
    )
    if not found:
        raise forbidden(
            f'pods "{name_of(pod)}" is forbidden: error looking up service account '
            f'{namespace}/{account}: serviceaccount "{account}" not found'
        )
    spec["serviceAccountName"] = account
    spec["serviceAccount"] = account


def _admit_priority(pod: Raw, lookup: Lookup) -> None:
    spec = _spec(pod)
    classes = lookup("scheduling.k8s.io", "priorityclasses")
    class_name = spec.get("priorityClassName")
    if class_name:
        found = [c for c in classes if name_of(c) == class_name]
        if not found:
            raise forbidden(
                f'pods "{name_of(pod)}" is forbidden: no PriorityClass with name {class_name} was found'
            )
        chosen: Raw | None = found[0]
    else:
        chosen = next((c for c in classes if c.get("globalDefault")), None)
        if chosen is not None:
            spec["priorityClassName"] = name_of(chosen)
    # Lenient where upstream is strict: a priority given without a class is kept, so
    # hand-written test pods need no PriorityClass.
    if chosen is not None:
        spec["priority"] = int(chosen.get("value", 0))
        spec.setdefault("preemptionPolicy", chosen.get("preemptionPolicy", "PreemptLowerPriority"))
    else:
        spec.setdefault("priority", 0)


def reset_status_on_create(
    group: str, plural: str, custom: bool, has_status: bool, obj: Raw
) -> None:
    """What upstream's ``PrepareForCreate`` does to ``status`` for a client's create."""
    if group == "" and plural == "pods":
        obj["status"] = {"phase": "Pending"}
        if (obj.get("spec") or {}).get("schedulingGates"):
            # The API server marks a gated pod itself, before any scheduler sees it.
            obj["status"]["conditions"] = [
                {
                    "type": "PodScheduled",
                    "status": "False",
                    "reason": "SchedulingGated",
                    "message": "Scheduling is blocked due to non-empty scheduling gates",
                    "lastProbeTime": None,
                    "lastTransitionTime": now_rfc3339(),
                }
            ]
    elif group == "" and plural in ("persistentvolumes", "persistentvolumeclaims"):
        obj["status"] = {"phase": "Pending"}
    elif group == "" and plural == "namespaces":
        obj["status"] = {"phase": "Active"}
    elif group == "" and plural == "nodes":
        return  # the kubelet registers its node with a status
    elif has_status:
        if custom:
            obj.pop("status", None)
        else:
            obj["status"] = {}
