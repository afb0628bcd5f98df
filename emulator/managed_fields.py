"""``metadata.managedFields``: which writer set which fields, as kube-apiserver records it.

Every object a real server returns carries one entry per (manager, operation,
subresource): the manager's name (a client's ``fieldManager``, else its User-Agent up
to the first ``/``), ``Update`` for a create, update or patch, the apiVersion written,
the time of the writer's last change, and ``fieldsV1``: the set of fields it owns, as
nested ``f:<field>`` keys, ``k:{...}`` for an element of a list merged by key (containers
by name, conditions by type), and ``.`` for a map or element owned as a whole.

This is the part of the object a scheduler never reads and pays to decode: on a pod it
is often the largest part. The emulator records it closely enough to have the size and
shape upstream's have — the fields a write added or changed join the writer's set — but
does not move ownership between managers (server-side apply's conflict rules).
"""

from __future__ import annotations

import json
from typing import Any

from volsched.emulator.raw import Raw

FieldSet = dict[str, Any]

# Metadata the server itself maintains: never in any writer's set.
UNTRACKED_METADATA = frozenset(
    {
        "name",
        "namespace",
        "uid",
        "resourceVersion",
        "generation",
        "creationTimestamp",
        "deletionTimestamp",
        "deletionGracePeriodSeconds",
        "managedFields",
        "selfLink",
    }
)
# List elements keyed by these fields are merged by key (``k:{"name":"main"}``), as the
# strategic-merge schema of core kinds says; other lists are atomic.
MERGE_KEYS = ("name", "type", "containerPort", "devicePath", "mountPath", "ip")


def _element_key(item: Any) -> str | None:
    if not isinstance(item, dict):
        return None
    for key in MERGE_KEYS:
        if key in item and isinstance(item[key], str | int):
            return "k:" + json.dumps({key: item[key]}, separators=(",", ":"))
    return None


def _list_fields(items: list[Any]) -> FieldSet:
    """A list's entry: keyed elements one by one, or ``{}`` for an atomic list."""
    keyed: FieldSet = {}
    for item in items:
        key = _element_key(item)
        if key is None:
            return {}
        keyed[key] = {".": {}, **_map_fields(item)}
    return keyed


def _map_fields(value: dict[str, Any]) -> FieldSet:
    fields: FieldSet = {}
    for name, child in value.items():
        fields[f"f:{name}"] = fields_of(child)
    return fields


def fields_of(value: Any) -> FieldSet:
    """The field set that owns ``value`` entirely."""
    if isinstance(value, dict):
        return {".": {}, **_map_fields(value)} if value else {}
    if isinstance(value, list):
        return _list_fields(value)
    return {}


def changed_fields(old: Any, new: Any) -> FieldSet | None:
    """The fields of ``new`` that ``old`` lacks or holds with another value (None: none)."""
    if old == new:
        return None
    if isinstance(old, dict) and isinstance(new, dict):
        fields: FieldSet = {}
        for name, child in new.items():
            if name not in old:
                fields[f"f:{name}"] = fields_of(child)
                continue
            inner = changed_fields(old[name], child)
            if inner is not None:
                fields[f"f:{name}"] = inner
        return fields or None
    if isinstance(old, list) and isinstance(new, list):
        before = {_element_key(item): item for item in old}
        if None in before or any(_element_key(item) is None for item in new):
            return {}
        fields = {}
        for item in new:
            key = _element_key(item)
            assert key is not None
            if key not in before:
                fields[key] = {".": {}, **_map_fields(item)}
                continue
            inner = changed_fields(before[key], item)
            if inner is not None:
                fields[key] = inner
        return fields or None
    return {}


def tracked(obj: Raw, subresource: str, status_separate: bool) -> Raw:
    """The part of ``obj`` a write through ``subresource`` can own: ``status`` alone
    through ``/status``; everything else (``status`` too where it has no subresource)
    through the main resource; never the metadata the server maintains."""
    if subresource == "status":
        return {"status": obj["status"]} if "status" in obj else {}
    part: Raw = {}
    for key, value in obj.items():
        if key in ("apiVersion", "kind") or (key == "status" and status_separate):
            continue
        if key == "metadata" and isinstance(value, dict):
            value = {k: v for k, v in value.items() if k not in UNTRACKED_METADATA}
            if not value:
                continue
        part[key] = value
    return part


def merge(into: FieldSet, more: FieldSet) -> FieldSet:
    """The union of two field sets (``into`` is changed and returned)."""
    for key, value in more.items():
        if key in into and isinstance(into[key], dict) and value:
            merge(into[key], value)
        else:
            into.setdefault(key, value)
    return into


def record(
    meta: Raw, manager: str, api_version: str, subresource: str, fields: FieldSet, time: str
) -> None:
    """Add ``fields`` to the manager's ``Update`` entry in ``meta`` (made when missing),
    stamped with ``time``. Entries are new dicts: stored objects are never changed."""
    entries = [dict(e) for e in meta.get("managedFields") or [] if isinstance(e, dict)]
    for entry in entries:
        if (
            entry.get("manager") == manager
            and entry.get("operation") == "Update"
            and entry.get("subresource", "") == subresource
        ):
            entry["fieldsV1"] = merge(json.loads(json.dumps(entry.get("fieldsV1") or {})), fields)
            entry["time"] = time
            entry["apiVersion"] = api_version
            break
    else:
        entry = {
            "manager": manager,
            "operation": "Update",
            "apiVersion": api_version,
            "time": time,
            "fieldsType": "FieldsV1",
            "fieldsV1": fields,
        }
        if subresource:
            entry["subresource"] = subresource
        entries.append(entry)
    meta["managedFields"] = entries
