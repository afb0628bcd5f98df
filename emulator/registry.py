"""The API semantics between HTTP and the store: create, update, patch, delete.

This is the emulator's equivalent of kube-apiserver's generic registry plus the
strategies of the kinds volsched touches.  It works on raw dicts and raises ``ApiError``
with upstream's codes and messages; the HTTP layer and the controllers both go through
it, so a controller's write looks to a watcher exactly like a client's.

Guarantees a client can rely on, as on a real server: a write with a stale
``metadata.resourceVersion`` is a 409 Conflict; a write that changes nothing is not
stored again (same resourceVersion, no watch event); a status-subresource kind ignores
``status`` on its main resource and everything but ``status`` on ``/status``; an object
with finalizers is only marked for deletion until its last finalizer is removed.
"""

from __future__ import annotations

import logging
import random
import uuid
from typing import Any

from volsched.emulator import crds, events, validation
from volsched.emulator.defaults import admit, apply_defaults, reset_status_on_create
from volsched.emulator.errors import (
    MODIFIED,
    ApiError,
    FieldError,
    already_exists,
    bad_request,
    conflict,
    method_not_allowed,
    not_found,
)
from volsched.emulator.patches import JSON_PATCH_TYPE, MERGE_TYPES, json_patch, merge_patch
from volsched.emulator.raw import Raw, clone, mapping, metadata, name_of, now_rfc3339
from volsched.emulator.realism import Realism
from volsched.emulator.resources import (
    CRD_GROUP,
    CRD_PLURAL,
    ResourceTable,
    ResourceType,
)
from volsched.emulator.selectors import Matcher
from volsched.emulator.store import Store

log = logging.getLogger(__name__)

_GENERATED_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # upstream's utilrand alphabet
_IMMUTABLE_META = (
    "uid",
    "creationTimestamp",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "generation",
)


def serve(resource: ResourceType, obj: Raw) -> Raw:
    """The object as this resource version presents it (a shallow copy, for rendering)."""
    return {
        "apiVersion": resource.api_version,
        "kind": resource.kind,
        **{k: v for k, v in obj.items() if k not in ("apiVersion", "kind")},
    }


def _spec_part(obj: Raw) -> Raw:
    return {k: v for k, v in obj.items() if k not in ("metadata", "status", "apiVersion", "kind")}


def _same(old: Raw, new: Raw) -> bool:
    """Equal apart from resourceVersion: upstream then skips the write entirely."""
    a, b = dict(old), dict(new)
    a["metadata"] = {k: v for k, v in mapping(old, "metadata").items() if k != "resourceVersion"}
    b["metadata"] = {k: v for k, v in mapping(new, "metadata").items() if k != "resourceVersion"}
    for obj in (a, b):
        obj.pop("apiVersion", None)
        obj.pop("kind", None)
    return a == b


class Registry:
    def __init__(
        self, store: Store, resources: ResourceTable, realism: Realism | None = None
    ) -> None:
        self.store = store
        self.resources = resources
        # The realistic mode's defaults and managedFields (None: the zero-cost mode).
        self.realism = realism
        # StorageObjectInUseProtection admission (``ControllerSettings.storage_protection``).
        self.protect_storage = False

    # Lookups.

    def resource(self, group: str, version: str, plural: str) -> ResourceType:
        found = self.resources.lookup(group, version, plural)
        if found is None:
            raise ApiError(404, "NotFound", "the server could not find the requested resource")
        return found

    def core(self, plural: str) -> ResourceType:
        return self.resource("", "v1", plural)

    def storage_type(self, group: str, plural: str) -> ResourceType | None:
        served = [r for r in self.resources.storage_types((group, plural))]
        return served[0] if served else None

    def stored(self, resource: ResourceType, namespace: str, name: str) -> Raw | None:
        return self.store.get(resource.key, namespace if resource.namespaced else "", name)

    def objects(self, group: str, plural: str, namespace: str | None = None) -> list[Raw]:
        return self.store.list_objects((group, plural), namespace)

    def existing(self, resource: ResourceType, namespace: str, name: str) -> Raw:
        found = self.stored(resource, namespace, name)
        if found is None:
            raise not_found(resource.group_resource, name)
        return found

    def get(self, resource: ResourceType, namespace: str, name: str) -> Raw:
        return self.existing(resource, namespace, name)

    def select(self, resource: ResourceType, namespace: str | None, matches: Matcher) -> list[Raw]:
        return [o for o in self.store.list_objects(resource.key, namespace) if matches(o)]

    def namespace_exists(self, name: str) -> bool:
        return self.store.get(("", "namespaces"), "", name) is not None

    # Create.

    def create(
        self, resource: ResourceType, namespace: str, body: Any, *, from_client: bool = True
    ) -> Raw:
        """Create ``body``; ``from_client`` False is ``ApiServer.load`` (keeps status, uid)."""
        if "create" not in resource.verbs:
            raise method_not_allowed()
        obj = self._decode(resource, body)
        meta = metadata(obj)
        self._place(resource, namespace, meta)
        namespace = str(meta.get("namespace") or "")
        if resource.namespaced and from_client and not self.namespace_exists(namespace):
            raise not_found("namespaces", namespace)
        legacy_event = events.is_event(resource) and not events.strict(resource)
        if events.is_event(resource) and (error := events.decode_errors(resource, obj)):
            raise error
        name = str(meta.get("name") or "")
        errors: list[FieldError] = []
        if not name and meta.get("generateName"):
            prefix = str(meta["generateName"])
            if not legacy_event:
                errors += validation.name_errors(resource, prefix, prefix=True)
            name = self._generate_name(
                resource, namespace, prefix[: validation.MAX_GENERATED_PREFIX]
            )
        if not name:
            errors.append(
                FieldError("metadata.name", "Required value", "name or generateName is required")
            )
        elif not legacy_event and not errors:
            errors += validation.name_errors(resource, name, prefix=False)
        if events.is_event(resource):
            errors += events.validation_errors(resource, obj)
        if resource.group == CRD_GROUP and resource.plural == CRD_PLURAL:
            errors += validation.crd_errors(obj)
        if resource.group == "" and resource.plural == "pods":
            errors += validation.pod_create_errors(obj)
        validation.check(resource.qualified_kind, name, errors)
        meta["name"] = name
        if self.stored(resource, namespace, name) is not None:
            raise already_exists(resource.group_resource, name)
        if from_client:
            admit(resource.group, resource.plural, obj, self.objects, self.protect_storage)
            reset_status_on_create(
                resource.group, resource.plural, resource.custom, resource.has_status, obj
            )
            for key in (
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
                "uid",
                "creationTimestamp",
            ):
                meta.pop(key, None)
        apply_defaults(resource.group, resource.plural, obj)
        meta.pop("resourceVersion", None)
        meta.setdefault("uid", str(uuid.uuid4()))
        meta.setdefault("creationTimestamp", now_rfc3339())
        if not events.is_event(resource):
            meta["generation"] = 1
        if self.realism is not None:
            self.realism.created(resource, obj, from_client)
        if resource.group == CRD_GROUP and resource.plural == CRD_PLURAL:
            crds.establish(obj)
        stored = self.store.put(resource.key, obj)
        if resource.group == CRD_GROUP and resource.plural == CRD_PLURAL:
            crds.serve(self.resources, stored)
        return stored

    def _decode(self, resource: ResourceType, body: Any) -> Raw:
        if not isinstance(body, dict):
            raise bad_request(
                f"Object '{resource.kind}' is missing in the request body: expected a JSON object"
            )
        obj = clone(body)
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if kind and kind != resource.kind:
            raise bad_request(
                f"the kind in the data ({kind}) does not match the expected kind ({resource.kind})"
            )
        if not isinstance(kind, str | None) or not isinstance(api_version, str | None):
            raise bad_request("kind and apiVersion must be strings")
        if (
            api_version
            and api_version.split("/")[0] != resource.api_version.split("/")[0]
            and resource.group
        ):
            raise bad_request(
                f"the API version in the data ({api_version}) does not match the expected API version ({resource.api_version})"
            )
        obj["apiVersion"], obj["kind"] = resource.api_version, resource.kind
        if "metadata" in obj and not isinstance(obj["metadata"], dict):
            raise bad_request("metadata must be an object")
        return obj

    def _place(self, resource: ResourceType, namespace: str, meta: Raw) -> None:
        if not resource.namespaced:
            meta.pop("namespace", None)
            return
        in_body = meta.get("namespace")
        if in_body and namespace and in_body != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        meta["namespace"] = namespace or in_body or "default"

    def _generate_name(self, resource: ResourceType, namespace: str, prefix: str) -> str:
        while True:
            name = prefix + "".join(random.choices(_GENERATED_ALPHABET, k=5))
            if self.stored(resource, namespace, name) is None:
                return name

    # Update and patch.

    def update(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        subresource: str | None = None,
    ) -> Raw:
        old = self.existing(resource, namespace, name)
        obj = self._decode(resource, body)
        meta = metadata(obj)
        if meta.get("name") and meta["name"] != name:
            raise bad_request(
                f"the name of the object ({meta['name']}) does not match the name on the URL ({name})"
            )
        if resource.namespaced and meta.get("namespace") and meta["namespace"] != namespace:
            raise bad_request(
                "the namespace of the provided object does not match the namespace sent on the request"
            )
        self._preconditions(resource, old, meta.get("uid"), meta.get("resourceVersion"))
        if subresource == "status":
            new = clone(old)
            if "status" in obj:
                new["status"] = obj["status"]
            else:
                new.pop("status", None)
        else:
            new = obj
            new_meta = metadata(new)
            old_meta = mapping(old, "metadata")
            new_meta["name"] = name
            if resource.namespaced:
                new_meta["namespace"] = old_meta.get("namespace")
            else:
                new_meta.pop("namespace", None)
            for key in _IMMUTABLE_META:
                if key in old_meta:
                    new_meta[key] = old_meta[key]
                else:
                    new_meta.pop(key, None)
            if resource.has_status:
                if "status" in old:
                    new["status"] = clone(old["status"])
                else:
                    new.pop("status", None)
            apply_defaults(resource.group, resource.plural, new)
            if self.realism is not None:
                self.realism.defaulting(resource, new)
            errors = validation.update_errors(resource, old, new)
            if resource.group == CRD_GROUP and resource.plural == CRD_PLURAL:
                errors += validation.crd_errors(new)
            validation.check(resource.qualified_kind, name, errors)
            if "generation" in old_meta and _spec_part(old) != _spec_part(new):
                new_meta["generation"] = int(old_meta["generation"]) + 1
        if self.realism is not None:
            self.realism.updating(resource, old, new, subresource or "")
        return self.write(resource, old, new)

    def patch(
        self,
        resource: ResourceType,
        namespace: str,
        name: str,
        content_type: str,
        patch: Any,
        subresource: str | None = None,
    ) -> Raw:
        old = self.existing(resource, namespace, name)
        base = serve(resource, clone(old))
        if content_type in MERGE_TYPES:
            if not isinstance(patch, dict):
                raise bad_request("merge patch body must be a JSON object")
            patched = merge_patch(base, patch)
        elif content_type == JSON_PATCH_TYPE:
            patched = json_patch(base, patch)
        else:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"the body of the request was in an unknown format - accepted media types include: "
                f"{JSON_PATCH_TYPE}, {', '.join(MERGE_TYPES)}",
            )
        if not isinstance(patched, dict):
            raise bad_request("the patched object is not a JSON object")
        return self.update(resource, namespace, name, patched, subresource)

    def _preconditions(self, resource: ResourceType, old: Raw, uid: Any, version: Any) -> None:
        old_meta = mapping(old, "metadata")
        name = name_of(old)
        if uid and uid != old_meta.get("uid"):
            raise conflict(
                resource.group_resource,
                name,
                f"Precondition failed: UID in precondition: {uid}, UID in object meta: {old_meta.get('uid')}",
            )
        if version and str(version) != old_meta.get("resourceVersion"):
            raise conflict(resource.group_resource, name, MODIFIED)

    def write(self, resource: ResourceType, old: Raw, new: Raw) -> Raw:
        new_meta = metadata(new)
        if new_meta.get("deletionTimestamp") and not new_meta.get("finalizers"):
            # The last finalizer is gone: the deletion that was waiting for it completes.
            return self._remove(resource, new)
        if _same(old, new):
            return old
        new_meta.pop("resourceVersion", None)
        stored = self.store.put(resource.key, new)
        if resource.group == CRD_GROUP and resource.plural == CRD_PLURAL:
            crds.serve(self.resources, stored, previous=old)
        return stored

    # Delete.

    def delete(
        self, resource: ResourceType, namespace: str, name: str, options: Any = None
    ) -> tuple[Raw, bool]:
        """Delete, or mark for deletion when finalizers remain; True when it is gone."""
        if "delete" not in resource.verbs:
            raise method_not_allowed()
        old = self.existing(resource, namespace, name)
        preconditions = mapping(options, "preconditions") if isinstance(options, dict) else {}
        if preconditions:
            self._preconditions(resource, old, preconditions.get("uid"), None)
            version = preconditions.get("resourceVersion")
            old_version = mapping(old, "metadata").get("resourceVersion")
            if version and version != old_version:
                raise conflict(
                    resource.group_resource,
                    name,
                    f"Precondition failed: ResourceVersion in precondition: {version}, "
                    f"ResourceVersion in object meta: {old_version}",
                )
        if mapping(old, "metadata").get("finalizers"):
            if mapping(old, "metadata").get("deletionTimestamp"):
                return old, False
            new = clone(old)
            metadata(new)["deletionTimestamp"] = now_rfc3339()
            metadata(new)["deletionGracePeriodSeconds"] = 0
            return self.write(resource, old, new), False
        return self._remove(resource, clone(old)), True

    def _remove(self, resource: ResourceType, final: Raw) -> Raw:
        meta = metadata(final)
        namespace = str(meta.get("namespace") or "") if resource.namespaced else ""
        name = str(meta["name"])
        if resource.group == "" and resource.plural == "namespaces":
            # The namespace controller's job, done at once: delete everything inside.
            for key in list(self.store.keys()):
                for obj in self.store.list_objects(key, name):
                    self.store.remove(key, name, name_of(obj), clone(obj))
        removed = self.store.remove(resource.key, namespace, name, final)
        if resource.group == CRD_GROUP and resource.plural == CRD_PLURAL:
            crds.unserve(self.store, self.resources, removed)
        return removed
