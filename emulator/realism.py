"""The realistic mode: objects stored (and so listed and watched) as a real server has them.

With it on, the registry asks this module, on every create and update, to fill the
defaulted fields of pods and nodes (``full_objects``) and to record the writer in
``metadata.managedFields`` (``managed_fields``). Without it the emulator stores what
it was sent plus the few defaults a scheduler's behaviour depends on — the zero-cost
mode the tests use, where an object costs a client nothing beyond its own fields.

Who the writer is: a request's ``fieldManager`` query parameter, else its User-Agent up
to the first ``/`` (kube-apiserver's rule), set by the server's middleware for the
request's task; a write made by the emulator's own controllers is
``kube-controller-manager``'s. Objects seeded with ``ApiServer.load`` are recorded as
written by whoever writes them in a cluster: a pod by the ReplicaSet controller with its
status by the kubelet, a node and its status by the kubelet, anything else by
``kubectl``.

As upstream: an update whose body has no ``managedFields`` keeps the stored ones, and a
binding (``pods/binding``) records no entry.
"""

from __future__ import annotations

import contextvars

from volsched.emulator import managed_fields
from volsched.emulator.full_objects import complete_node, complete_pod
from volsched.emulator.raw import Raw, metadata, now_rfc3339
from volsched.emulator.resources import ResourceType

CONTROLLER_MANAGER = "kube-controller-manager"
# The writer of the request being served (None: the emulator's own controllers).
FIELD_MANAGER: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "field_manager", default=None
)

# (group, plural) -> (who creates it, who writes its status) for seeded objects.
SEED_WRITERS: dict[tuple[str, str], tuple[str, str]] = {
    ("", "pods"): (CONTROLLER_MANAGER, "kubelet"),
    ("", "nodes"): ("kubelet", "kubelet"),
    ("", "persistentvolumes"): ("kubectl-client-side-apply", CONTROLLER_MANAGER),
    ("", "persistentvolumeclaims"): ("kubectl-client-side-apply", CONTROLLER_MANAGER),
}
DEFAULT_SEED_WRITERS = ("kubectl-client-side-apply", CONTROLLER_MANAGER)


def manager_from(query_manager: str | None, user_agent: str | None) -> str:
    """The manager a request writes as: ``fieldManager``, else the User-Agent's prefix."""
    if query_manager:
        return query_manager
    prefix = (user_agent or "").split("/", 1)[0].strip()
    return prefix[:128] or "unknown"


def complete(resource: ResourceType, obj: Raw) -> None:
    """Fill the defaulted fields a real server returns for this kind."""
    if resource.group != "":
        return
    if resource.plural == "pods":
        complete_pod(obj)
    elif resource.plural == "nodes":
        complete_node(obj, now_rfc3339())


def _top_level(part: Raw) -> managed_fields.FieldSet:
    """An object's own field set: its top-level structs carry no ``.`` of their own."""
    fields: managed_fields.FieldSet = {}
    for name, value in part.items():
        inner = managed_fields.fields_of(value)
        if isinstance(value, dict):
            inner.pop(".", None)
        fields[f"f:{name}"] = inner
    return fields


class Realism:
    """The registry's hook for the realistic mode."""

    def created(self, resource: ResourceType, obj: Raw, from_client: bool) -> None:
        """A new object: completed, and owned by its creator (and its status writer)."""
        complete(resource, obj)
        meta = metadata(obj)
        if not from_client and meta.get("managedFields"):
            return  # a restored object keeps the record it was saved with
        now = str(meta.get("creationTimestamp") or now_rfc3339())
        separate = resource.has_status
        if from_client:
            creator, status_writer = FIELD_MANAGER.get() or CONTROLLER_MANAGER, None
        else:
            creator, status_writer = SEED_WRITERS.get(resource.key, DEFAULT_SEED_WRITERS)
        meta.pop("managedFields", None)
        owned = _top_level(managed_fields.tracked(obj, "", separate))
        if owned:
            managed_fields.record(meta, creator, resource.api_version, "", owned, now)
        if separate and status_writer and obj.get("status"):
            status = _top_level(managed_fields.tracked(obj, "status", separate))
            managed_fields.record(meta, status_writer, resource.api_version, "status", status, now)

    def defaulting(self, resource: ResourceType, new: Raw) -> None:
        """An update's body defaulted, as a real server does when it decodes a request
        (before validation, so a body without the defaults changes nothing)."""
        complete(resource, new)

    def updating(self, resource: ResourceType, old: Raw, new: Raw, subresource: str) -> None:
        """An update about to be written: stored managedFields kept when the body has
        none, and the fields it changes added to its writer's."""
        old_meta, new_meta = metadata(old), metadata(new)
        if "managedFields" not in new_meta and "managedFields" in old_meta:
            new_meta["managedFields"] = old_meta["managedFields"]
        separate = resource.has_status
        changed = managed_fields.changed_fields(
            managed_fields.tracked(old, subresource, separate),
            managed_fields.tracked(new, subresource, separate),
        )
        if changed:
            manager = FIELD_MANAGER.get() or CONTROLLER_MANAGER
            managed_fields.record(
                new_meta, manager, resource.api_version, subresource, changed, now_rfc3339()
            )
