"""The ``pods/binding`` subresource: how a scheduler sets ``spec.nodeName``.

As upstream's BindingREST: the Binding's name must be the pod's, its target a Node; a
pod already assigned (or being deleted) is a 409 Conflict; a Binding carrying a uid is
a precondition on the pod's.  Binding annotations are copied to the pod, which gets a
``PodScheduled=True`` condition.  The answer is a 201 *Status*, not a Binding — what
real servers send, and what makes kubernetes-asyncio raise ValueError while
deserialising unless called with ``_preload_content=False``.
"""

from __future__ import annotations

from typing import Any

from volsched.emulator.errors import FieldError, bad_request, conflict, invalid
from volsched.emulator.raw import Raw, clone, mapping, metadata, now_rfc3339
from volsched.emulator.registry import Registry


def bind(registry: Registry, namespace: str, name: str, binding: Any) -> Raw:
    if not isinstance(binding, dict):
        raise bad_request("Object 'Binding' is missing in the request body")
    pods = registry.core("pods")
    binding_meta = mapping(binding, "metadata")
    if binding_meta.get("name") != name:
        raise bad_request("name in URL does not match name in Binding object")
    target = mapping(binding, "target")
    errors = []
    if target.get("kind") not in (None, "", "Node"):
        errors.append(
            FieldError(
                "target.kind",
                "Unsupported value",
                'supported values: "Node", "<empty>"',
                target.get("kind"),
            )
        )
    if not target.get("name"):
        errors.append(FieldError("target.name", "Required value"))
    if errors:
        raise invalid("Binding", name, errors)
    pod = registry.existing(pods, namespace, name)
    pod_meta = mapping(pod, "metadata")
    uid = binding_meta.get("uid")
    if uid and uid != pod_meta.get("uid"):
        raise conflict(
            "pods/binding",
            name,
            f"Precondition failed: UID in precondition: {uid}, "
            f"UID in object meta: {pod_meta.get('uid')}",
        )
    if pod_meta.get("deletionTimestamp"):
        raise conflict("pods/binding", name, "pod is being deleted, cannot be assigned to a host")
    node = mapping(pod, "spec").get("nodeName")
    if node:
        raise conflict("pods/binding", name, f'pod {name} is already assigned to node "{node}"')
    # A pod whose scheduling gates are not all removed may not be bound.
    if mapping(pod, "spec").get("schedulingGates"):
        raise conflict("pods/binding", name, f"pod {name} has non-empty .spec.schedulingGates")
    new = clone(pod)
    new.setdefault("spec", {})["nodeName"] = target["name"]
    if binding_meta.get("annotations"):
        metadata(new).setdefault("annotations", {}).update(binding_meta["annotations"])
    status = new.setdefault("status", {})
    conditions = [c for c in status.get("conditions") or [] if c.get("type") != "PodScheduled"]
    conditions.append(
        {
            "type": "PodScheduled",
            "status": "True",
            "lastProbeTime": None,
            "lastTransitionTime": now_rfc3339(),
        }
    )
    status["conditions"] = conditions
    registry.write(pods, pod, new)
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
