"""kube-scheduler's extender wire format where it needs checking: Go field names matched
as Go's decoder matches them, and the preemption arguments checked field by field.

A body kube-scheduler would never send (a victim list that is a number, a pod that is
a string) is a ``BadRequest`` naming the field, answered with 400; nothing past this
module sees an unchecked value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

INT64 = 2**63


class BadRequest(Exception):
    """The request body is not what kube-scheduler sends."""


def field(body: Mapping[str, Any], name: str) -> Any:
    """A Go-decoded field: exact name first, then any spelling that differs in case."""
    if name in body:
        return body[name]
    lowered = name.lower()
    for key, value in body.items():
        if isinstance(key, str) and key.lower() == lowered:
            return value
    return None


@dataclass(frozen=True, slots=True)
class Victims:
    """One node's entry of ``NodeNameToMetaVictims``: the pods to evict, by UID."""

    uids: tuple[str, ...]
    num_pdb_violations: int

    def wire(self) -> dict[str, Any]:
        return {
            "Pods": [{"UID": uid} for uid in self.uids],
            "NumPDBViolations": self.num_pdb_violations,
        }


def _where(name: str, node: str) -> str:
    shown = node if len(node) <= 64 else node[:61] + "..."
    return f"{name}[{shown!r}]"


def _uid(pod: Any, where: str, meta_form: bool) -> str:
    if not isinstance(pod, Mapping):
        raise BadRequest(f"{where} must be an object")
    if meta_form:
        uid = field(pod, "UID")
    else:
        metadata = pod.get("metadata")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise BadRequest(f"{where}.metadata must be an object")
        uid = (metadata or {}).get("uid")
    if uid is None:
        return ""
    if not isinstance(uid, str):
        raise BadRequest(f"{where}: the pod's UID must be a string")
    return uid


def _victims(entry: Any, where: str, meta_form: bool) -> Victims:
    if not isinstance(entry, Mapping):
        raise BadRequest(f"{where} must be an object")
    pods = field(entry, "Pods")
    if pods is None:
        pods = []
    if not isinstance(pods, list):
        raise BadRequest(f"{where}.Pods must be a list")
    uids = tuple(_uid(pod, f"{where}.Pods[{index}]", meta_form) for index, pod in enumerate(pods))
    violations = field(entry, "NumPDBViolations")
    if violations is None:
        violations = 0
    if isinstance(violations, bool) or not isinstance(violations, int):
        raise BadRequest(f"{where}.NumPDBViolations must be an integer")
    if not -INT64 <= violations < INT64:
        raise BadRequest(f"{where}.NumPDBViolations is out of range")
    return Victims(uids, violations)


def preemption_candidates(body: Mapping[str, Any]) -> dict[str, Victims]:
    """The candidate nodes of a ``/preempt`` body and their victims, either form:
    ``NodeNameToMetaVictims`` (UIDs, as a node-cache-capable kube-scheduler sends) or
    ``NodeNameToVictims`` (whole pods)."""
    meta = field(body, "NodeNameToMetaVictims")
    victims = field(body, "NodeNameToVictims")
    if meta is None and victims is None:
        raise BadRequest("NodeNameToVictims or NodeNameToMetaVictims is required")
    name = "NodeNameToMetaVictims" if meta is not None else "NodeNameToVictims"
    source = meta if meta is not None else victims
    if not isinstance(source, Mapping):
        raise BadRequest(f"{name} must be an object")
    return {
        node: _victims(entry, _where(name, node), meta is not None)
        for node, entry in source.items()
    }
