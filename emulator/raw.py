"""Raw Kubernetes objects: JSON dicts, and the few helpers every module needs.

The emulator never parses objects into classes: it stores, compares and serves the dicts
a client sent, as an API server does with its JSON.  Stored dicts are never mutated; a
write builds a new dict (``clone``) and replaces the old one.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

Raw = dict[str, Any]


def now_rfc3339() -> str:
    """The current time as metav1.Time serialises it: whole seconds, UTC, ``Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


# What a JSON document holds besides dicts and lists: immutable, so shared by a copy.
_SCALARS = frozenset({str, int, float, bool, type(None)})


def clone(obj: Raw) -> Raw:
    """A deep copy of a JSON object. Three times faster than ``copy.deepcopy``, which
    every write pays several times over: it skips deepcopy's memo of shared references,
    which JSON has none of. Anything that is not JSON is still deep-copied."""
    copied: Raw = _clone_value(obj)
    return copied


def _clone_value(value: Any) -> Any:
    kind = type(value)
    if kind is dict:
        return {key: _clone_value(item) for key, item in value.items()}
    if kind is list:
        return [_clone_value(item) for item in value]
    if kind in _SCALARS:
        return value
    return copy.deepcopy(value)


def metadata(obj: Raw) -> Raw:
    """``obj["metadata"]``, created empty when missing or not a mapping."""
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = {}
        obj["metadata"] = meta
    return meta


def name_of(obj: Raw) -> str:
    meta = obj.get("metadata")
    return str(meta.get("name") or "") if isinstance(meta, dict) else ""


def namespace_of(obj: Raw) -> str:
    meta = obj.get("metadata")
    return str(meta.get("namespace") or "") if isinstance(meta, dict) else ""


def mapping(obj: Raw, *path: str) -> Raw:
    """The mapping at ``path`` (``{}`` when missing or not a mapping); read-only use."""
    current: Any = obj
    for key in path:
        if not isinstance(current, dict):
            return {}
        current = current.get(key)
    return current if isinstance(current, dict) else {}


def value_at(obj: Raw, dotted: str) -> Any:
    """The value at a dotted path such as ``spec.nodeName`` (None when missing)."""
    current: Any = obj
    for key in dotted.split("."):
        if not isinstance(current, dict):
            return None
        current = current.get(key)
    return current


def annotations_of(obj: Raw) -> dict[str, str]:
    return mapping(obj, "metadata", "annotations")


def labels_of(obj: Raw) -> dict[str, str]:
    return mapping(obj, "metadata", "labels")
