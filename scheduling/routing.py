"""Which pods belong to volsched: the decision of the scheduler-routing admission webhook.

A pod is routed (its ``spec.schedulerName`` set to volsched's) when one of its volumes is
storage volsched decides: a claim — or a generic ephemeral volume's claim template —
whose StorageClass is listed, or whose class's provisioner is listed (for example
``replicated.volsched.io``, ``driver.longhorn.io``), or whose bound PV was made by a
listed CSI driver or carries a listed class. A pod that already names a scheduler other
than the default one is left alone, and so is a pod labelled with the opt-out label
(namespaces opt out through the webhook's namespaceSelector, which the API server
applies before calling).

Pure: it reads the pod as the API server sent it (``generateName`` pods have no name
yet) and the claims, PVs and classes of a cluster cache. ``unknown_objects`` names what
the decision would read and the cache does not hold (a claim created just before its
pod, say), so the webhook can read it from the API server before it decides.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.core import DEFAULT_SCHEDULER
from volsched.cache.objects.replicated import CSI_DRIVER as REPLICATED_DRIVER
from volsched.scheduling.scheduler_config import DEFAULT_SCHEDULER_NAME

OPT_OUT_LABEL = "volsched.io/scheduler-routing"
OPT_OUT_VALUE = "disabled"


@dataclass(frozen=True, slots=True)
class RoutingRules:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    storage_classes: frozenset[str] = frozenset()
    provisioners: frozenset[str] = field(default_factory=lambda: frozenset({REPLICATED_DRIVER}))


@dataclass(frozen=True, slots=True)
class Routing:
    """The decision: ``route`` says whether to set the scheduler name, ``reason`` why."""

    route: bool
    reason: str


@dataclass(frozen=True, slots=True)
class ObjectRef:
    """An object the decision needs: its kind, name and (for a claim) namespace."""

    kind: str
    name: str
    namespace: str = ""

    def __str__(self) -> str:
        noun = {"PersistentVolumeClaim": "claim", "PersistentVolume": "volume"}.get(
            self.kind, self.kind
        )
        return f"{noun} {self.namespace}/{self.name}" if self.namespace else f"{noun} {self.name}"


def _class_is_ours(cluster: ClusterCache, rules: RoutingRules, class_name: str) -> bool:
    if class_name in rules.storage_classes:
        return True
    storage_class = cluster.storage_classes.get(class_name)
    return storage_class is not None and storage_class.provisioner in rules.provisioners


def _claim_is_ours(
    cluster: ClusterCache, rules: RoutingRules, namespace: str, claim_name: str
) -> str | None:
    claim = cluster.pvcs.get(f"{namespace}/{claim_name}")
    if claim is None:
        return None
    if claim.volume_name:
        volume = cluster.pvs.get(claim.volume_name)
        if volume is not None:
            if volume.csi_driver and volume.csi_driver in rules.provisioners:
                return f"claim {claim_name} is bound to a {volume.csi_driver} volume"
            if volume.storage_class and _class_is_ours(cluster, rules, volume.storage_class):
                return f"claim {claim_name} is bound to a volume of class {volume.storage_class}"
    class_name = claim.storage_class
    if class_name is None:
        default = cluster.default_storage_class()
        class_name = default.name if default is not None else ""
    if class_name and _class_is_ours(cluster, rules, class_name):
        return f"claim {claim_name} is of class {class_name}"
    return None


def _template_class(cluster: ClusterCache, volume: Mapping[str, Any]) -> str:
    template = ((volume.get("ephemeral") or {}).get("volumeClaimTemplate") or {}).get("spec") or {}
    class_name = template.get("storageClassName")
    if isinstance(class_name, str):
        return class_name
    default = cluster.default_storage_class()
    return default.name if default is not None else ""


_TYPES: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}


def _wrong(value: Any, expected: type, where: str) -> str | None:
    """Why ``value`` is not of the type the API server gives the field, or None (absent
    and null are fine: the field is optional)."""
    if value is None or isinstance(value, expected):
        return None
    return f"{where} is not {_TYPES[expected]}"


def _volume_problem(volume: Any, where: str) -> str | None:
    if not isinstance(volume, dict):
        return f"{where} is not an object"
    claim = volume.get("persistentVolumeClaim")
    ephemeral = volume.get("ephemeral")
    template = ephemeral.get("volumeClaimTemplate") if isinstance(ephemeral, dict) else None
    template_spec = template.get("spec") if isinstance(template, dict) else None
    return (
        _wrong(volume.get("name"), str, f"{where}.name")
        or _wrong(claim, dict, f"{where}.persistentVolumeClaim")
        or _wrong((claim or {}).get("claimName"), str, f"{where}.persistentVolumeClaim.claimName")
        or _wrong(ephemeral, dict, f"{where}.ephemeral")
        or _wrong(template, dict, f"{where}.ephemeral.volumeClaimTemplate")
        or _wrong(template_spec, dict, f"{where}.ephemeral.volumeClaimTemplate.spec")
        or _wrong(
            (template_spec or {}).get("storageClassName"),
            str,
            f"{where}.ephemeral.volumeClaimTemplate.spec.storageClassName",
        )
    )


def pod_shape_problem(pod: Mapping[str, Any], where: str = "object") -> str | None:
    """Why the pod cannot be read, or None: every field the routing decision reads must
    have the type the API server gives it. A real API server has decoded the pod before
    calling a webhook, so only a caller that is not one sends anything else."""
    metadata = pod.get("metadata")
    spec = pod.get("spec")
    problem = (
        _wrong(metadata, dict, f"{where}.metadata")
        or _wrong(spec, dict, f"{where}.spec")
        or _wrong((metadata or {}).get("labels"), dict, f"{where}.metadata.labels")
        or _wrong((metadata or {}).get("namespace"), str, f"{where}.metadata.namespace")
        or _wrong((metadata or {}).get("name"), str, f"{where}.metadata.name")
        or _wrong((metadata or {}).get("generateName"), str, f"{where}.metadata.generateName")
        or _wrong((spec or {}).get("schedulerName"), str, f"{where}.spec.schedulerName")
        or _wrong((spec or {}).get("volumes"), list, f"{where}.spec.volumes")
    )
    if problem is not None:
        return problem
    for index, volume in enumerate((spec or {}).get("volumes") or []):
        problem = _volume_problem(volume, f"{where}.spec.volumes[{index}]")
        if problem is not None:
            return problem
    return None


def _left_alone(pod: Mapping[str, Any], rules: RoutingRules) -> Routing | None:
    """Why the pod's volumes do not matter (not a pod spec, opted out, another scheduler's),
    or None when they decide."""
    metadata = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    labels = metadata.get("labels") or {}
    if not isinstance(spec, Mapping) or not isinstance(labels, Mapping):
        return Routing(False, "not a pod spec")
    if labels.get(OPT_OUT_LABEL) == OPT_OUT_VALUE:
        return Routing(False, f"the pod is labelled {OPT_OUT_LABEL}={OPT_OUT_VALUE}")
    current = spec.get("schedulerName") or DEFAULT_SCHEDULER
    if current == rules.scheduler_name:
        return Routing(False, f"the pod already names {current}")
    if current != DEFAULT_SCHEDULER:
        return Routing(False, f"the pod names another scheduler ({current})")
    if not isinstance(spec.get("volumes") or [], list):
        return Routing(False, "spec.volumes is not a list")
    return None


def _volumes(pod: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    volumes = (pod.get("spec") or {}).get("volumes") or []
    return [volume for volume in volumes if isinstance(volume, Mapping)]


def _claim_name(volume: Mapping[str, Any]) -> str | None:
    source = volume.get("persistentVolumeClaim")
    if isinstance(source, Mapping) and isinstance(source.get("claimName"), str):
        return str(source["claimName"])
    return None


def unknown_objects(
    pod: Mapping[str, Any], namespace: str, cluster: ClusterCache, rules: RoutingRules
) -> list[ObjectRef]:
    """What ``decide_routing`` would read for this pod and the cache does not hold: a claim
    the pod names, the PV a known claim is bound to, a StorageClass a known claim or an
    ephemeral volume's template names. Empty when the volumes do not decide (an opted-out
    pod, another scheduler's). Once a claim is known, what it needs comes next."""
    if _left_alone(pod, rules) is not None:
        return []
    wanted: list[ObjectRef] = []

    def want_class(class_name: str | None) -> None:
        if not class_name or class_name in rules.storage_classes:
            return
        if class_name not in cluster.storage_classes:
            wanted.append(ObjectRef("StorageClass", class_name))

    for volume in _volumes(pod):
        claim_name = _claim_name(volume)
        if claim_name is not None:
            claim = cluster.pvcs.get(f"{namespace}/{claim_name}")
            if claim is None:
                wanted.append(ObjectRef("PersistentVolumeClaim", claim_name, namespace))
                continue
            if claim.volume_name:
                volume_of_claim = cluster.pvs.get(claim.volume_name)
                if volume_of_claim is None:
                    wanted.append(ObjectRef("PersistentVolume", claim.volume_name))
                else:
                    want_class(volume_of_claim.storage_class)
            want_class(claim.storage_class)
        elif isinstance(volume.get("ephemeral"), Mapping):
            template = (volume["ephemeral"].get("volumeClaimTemplate") or {}).get("spec") or {}
            class_name = template.get("storageClassName")
            want_class(class_name if isinstance(class_name, str) else None)
    return list(dict.fromkeys(wanted))


def decide_routing(
    pod: Mapping[str, Any], namespace: str, cluster: ClusterCache, rules: RoutingRules
) -> Routing:
    """Whether to route this pod (as admitted: a raw object, possibly without a name)."""
    left_alone = _left_alone(pod, rules)
    if left_alone is not None:
        return left_alone
    for volume in _volumes(pod):
        claim_name = _claim_name(volume)
        if claim_name is not None:
            why = _claim_is_ours(cluster, rules, namespace, claim_name)
            if why is not None:
                return Routing(True, why)
        elif isinstance(volume.get("ephemeral"), Mapping):
            class_name = _template_class(cluster, volume)
            if class_name and _class_is_ours(cluster, rules, class_name):
                return Routing(
                    True, f"ephemeral volume {volume.get('name')} is of class {class_name}"
                )
    return Routing(False, "no volume of the pod is storage volsched decides")
