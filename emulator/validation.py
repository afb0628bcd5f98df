"""The validation kube-apiserver does that a scheduler can trip over.

Object names (DNS-1123 subdomain for most kinds, RFC 1123 label for namespaces, DNS-1035
label for services, path segment for PersistentVolumes and RBAC objects),
``generateName`` prefixes, the immutability of a pod's spec (a scheduler must use the
binding subresource to set ``spec.nodeName``) and of a claim's spec, and a CRD's names.
Everything else is accepted as given: there is no OpenAPI schema validation.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from volsched.emulator import events
from volsched.emulator.errors import FieldError, invalid
from volsched.emulator.raw import Raw, mapping
from volsched.emulator.resources import ResourceType

SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")

SUBDOMAIN_MESSAGE = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
    "'-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', "
    r"regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
LABEL_MESSAGE = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
    "and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
    "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1035_MESSAGE = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with "
    "an alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or "
    "'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)

# Upstream truncates a generateName prefix so prefix + 5 random characters fit in 63.
MAX_GENERATED_PREFIX = 58


def _name_rule(resource: ResourceType) -> tuple[re.Pattern[str] | None, int, str]:
    if resource.group == "" and resource.plural == "namespaces":
        return LABEL, 63, LABEL_MESSAGE
    if resource.group == "" and resource.plural == "services":
        return DNS1035, 63, DNS1035_MESSAGE
    if resource.group == "" and resource.plural == "persistentvolumes":
        return None, 0, ""
    if resource.group == "rbac.authorization.k8s.io":
        return None, 0, ""  # upstream's ValidateRBACName: "system:kube-scheduler" is fine
    return SUBDOMAIN, 253, SUBDOMAIN_MESSAGE


def name_errors(resource: ResourceType, value: str, prefix: bool) -> list[FieldError]:
    """Upstream's ``ValidateObjectMeta`` name check (``prefix``: a generateName)."""
    field = "metadata.generateName" if prefix else "metadata.name"
    pattern, limit, message = _name_rule(resource)
    if pattern is None:  # a path segment name
        bad = value in (".", "..") or "/" in value or "%" in value
        return (
            [FieldError(field, "Invalid value", "may not contain '/' or '%'", value)] if bad else []
        )
    # A prefix may end in "-" (the random suffix follows); upstream masks it as "a".
    checked = value[:-1] + "a" if prefix and value.endswith("-") else value
    errors = []
    if len(checked) > limit:
        errors.append(
            FieldError(field, "Invalid value", f"must be no more than {limit} characters", value)
        )
    if not pattern.match(checked):
        errors.append(FieldError(field, "Invalid value", message, value))
    return errors


_POD_MUTABLE_MESSAGE = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)


def _without_mutable_pod_fields(spec: Raw) -> Raw:
    result = copy.deepcopy(spec)
    for key in (
        "activeDeadlineSeconds",
        "tolerations",
        "terminationGracePeriodSeconds",
        "schedulingGates",
    ):
        result.pop(key, None)
    for key in ("containers", "initContainers", "ephemeralContainers"):
        for container in result.get(key) or []:
            if isinstance(container, dict):
                container.pop("image", None)
    return result


def pod_create_errors(pod: Raw) -> list[FieldError]:
    """A pod may not be created on a node while it still has scheduling gates."""
    spec = mapping(pod, "spec")
    if spec.get("nodeName") and spec.get("schedulingGates"):
        return [
            FieldError(
                "spec.nodeName",
                "Forbidden",
                "cannot be set until all schedulingGates have been cleared",
            )
        ]
    return []


def pod_update_errors(old: Raw, new: Raw) -> list[FieldError]:
    old_spec, new_spec = mapping(old, "spec"), mapping(new, "spec")
    if _without_mutable_pod_fields(old_spec) != _without_mutable_pod_fields(new_spec):
        return [FieldError("spec", "Forbidden", _POD_MUTABLE_MESSAGE)]
    old_tolerations = old_spec.get("tolerations") or []
    new_tolerations = new_spec.get("tolerations") or []
    if any(t not in new_tolerations for t in old_tolerations):
        return [FieldError("spec", "Forbidden", _POD_MUTABLE_MESSAGE)]
    old_gates = old_spec.get("schedulingGates") or []
    if any(g not in old_gates for g in new_spec.get("schedulingGates") or []):
        return [
            FieldError(
                "spec.schedulingGates",
                "Forbidden",
                "only deletion is allowed, but found new scheduling gate",
            )
        ]
    return []


def claim_update_errors(old: Raw, new: Raw) -> list[FieldError]:
    old_spec, new_spec = copy.deepcopy(mapping(old, "spec")), copy.deepcopy(mapping(new, "spec"))
    for spec in (old_spec, new_spec):
        mapping(spec, "resources").pop("requests", None)
        spec.pop("volumeAttributesClassName", None)
    if not old_spec.get("volumeName"):
        # The PV controller binds a claim by setting volumeName once.
        new_spec.pop("volumeName", None)
        old_spec.pop("volumeName", None)
    if old_spec != new_spec:
        return [
            FieldError(
                "spec",
                "Forbidden",
                "spec is immutable after creation except resources.requests and "
                "volumeAttributesClassName for bound claims",
            )
        ]
    return []


def update_errors(resource: ResourceType, old: Raw, new: Raw) -> list[FieldError]:
    if events.is_event(resource):
        return events.update_errors(resource, old, new)
    if resource.group == "" and resource.plural == "pods":
        return pod_update_errors(old, new)
    if resource.group == "" and resource.plural == "persistentvolumeclaims":
        return claim_update_errors(old, new)
    return []


def crd_errors(crd: Raw) -> list[FieldError]:
    spec = mapping(crd, "spec")
    names = mapping(spec, "names")
    group, plural, kind = spec.get("group"), names.get("plural"), names.get("kind")
    errors = []
    for field, value in (
        ("spec.group", group),
        ("spec.names.plural", plural),
        ("spec.names.kind", kind),
    ):
        if not value or not isinstance(value, str):
            errors.append(FieldError(field, "Required value"))
    scope = spec.get("scope")
    if scope not in ("Namespaced", "Cluster"):
        errors.append(
            FieldError(
                "spec.scope",
                "Unsupported value",
                'supported values: "Cluster", "Namespaced"',
                scope,
            )
        )
    versions: Any = spec.get("versions")
    storage_versions = (
        sum(1 for v in versions if isinstance(v, dict) and v.get("storage"))
        if isinstance(versions, list)
        else 0
    )
    if storage_versions != 1:
        errors.append(
            FieldError(
                "spec.versions",
                "Invalid value",
                "must have exactly one version marked as storage version",
                versions,
            )
        )
    name = str(mapping(crd, "metadata").get("name") or "")
    if not errors and name != f"{plural}.{group}":
        errors.append(
            FieldError(
                "metadata.name", "Invalid value", 'must be spec.names.plural+"."+spec.group', name
            )
        )
    return errors


def check(qualified_kind: str, name: str, errors: list[FieldError]) -> None:
    if errors:
        raise invalid(qualified_kind, name, errors)
