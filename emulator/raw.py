"""Raw Kubernetes objects: JSON dicts, and the few helpers every module needs.

The emulator never parses objects into classes: it stores, compares and serves the dicts
a client sent, as an API server does with its JSON.  Stored dicts are never mutated; a
write builds a new dict (``copy.deepcopy``) and replaces the old one.
"""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from typing import Any

Raw = dict[str, Any]


def now_rfc3339() -> str:
    """The current time as metav1.Time serialises it: whole seconds, UTC, ``Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def clone(obj: Raw) -> Raw:
    return copy.deepcopy(obj)


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
