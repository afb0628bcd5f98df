"""kube-scheduler's extender wire format (``k8s.io/kube-scheduler/extender/v1``), both
ways: Go field names matched as Go's decoder matches them, and the bodies checked field
by field.

Serving (volsched behind kube-scheduler): a body kube-scheduler would never send (a
victim list that is a number, a pod that is a string) is a ``BadRequest`` naming the
field, answered with 400. Calling (volsched in front of extenders): ExtenderArgs,
ExtenderPreemptionArgs and ExtenderBindingArgs are built here, and an answer that is not
an ExtenderFilterResult, HostPriorityList, ExtenderPreemptionResult or
ExtenderBindingResult is a ``BadRequest`` too, which the client reports as the
extender's error. Nothing past this module sees an unchecked value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from volsched.daemon.extenders.answers import shortened

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


# -- calling an extender ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class FilterAnswer:
    """An ExtenderFilterResult: the node names kept (from ``NodeNames`` or
    ``Nodes.items``), the reasons of the failed nodes, and the extender's own error."""

    kept: tuple[str, ...]
    failed: dict[str, str]
    failed_and_unresolvable: dict[str, str]
    error: str


def extender_args(
    pod: Mapping[str, Any],
    nodes: list[Mapping[str, Any]] | None = None,
    node_names: list[str] | None = None,
) -> dict[str, Any]:
    """ExtenderArgs: the pod and either whole nodes or, for a node-cache-capable
    extender, their names."""
    return {
        "Pod": pod,
        "Nodes": None if nodes is None else {"metadata": {}, "items": nodes},
        "NodeNames": node_names,
    }


def _reasons(body: Mapping[str, Any], name: str) -> dict[str, str]:
    value = field(body, name)
    if value is None:
        return {}
    if not isinstance(value, Mapping) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise BadRequest(f"{name} must map node names to reasons")
    # Reasons end up in events and messages users read: a line each, however long.
    return {node: shortened(reason) for node, reason in value.items()}


def filter_answer(body: Any) -> FilterAnswer:
    if not isinstance(body, Mapping):
        raise BadRequest("the filter answer must be a JSON object")
    error = field(body, "Error") or ""
    if not isinstance(error, str):
        raise BadRequest("Error must be a string")
    names = field(body, "NodeNames")
    if names is not None:
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise BadRequest("NodeNames must be a list of node names")
        kept = tuple(names)
    else:
        nodes = field(body, "Nodes")
        items = field(nodes, "Items") if isinstance(nodes, Mapping) else None
        if nodes is not None and not isinstance(nodes, Mapping):
            raise BadRequest("Nodes must be a node list")
        if items is not None and not isinstance(items, list):
            raise BadRequest("Nodes.items must be a list")
        kept_names = []
        for item in items or []:
            meta = item.get("metadata") if isinstance(item, Mapping) else None
            name = meta.get("name") if isinstance(meta, Mapping) else None
            if not isinstance(name, str):
                raise BadRequest("every node in Nodes.items needs metadata.name")
            kept_names.append(name)
        kept = tuple(kept_names)
    return FilterAnswer(
        kept,
        _reasons(body, "FailedNodes"),
        _reasons(body, "FailedAndUnresolvableNodes"),
        error,
    )


def host_priorities(body: Any) -> list[tuple[str, int]]:
    """A HostPriorityList: ``[{"Host": ..., "Score": ...}]``."""
    if body is None:
        return []
    if not isinstance(body, list):
        raise BadRequest("the prioritize answer must be a list of host priorities")
    scores = []
    for index, item in enumerate(body):
        host = field(item, "Host") if isinstance(item, Mapping) else None
        score = field(item, "Score") if isinstance(item, Mapping) else None
        if not isinstance(host, str) or isinstance(score, bool) or not isinstance(score, int):
            raise BadRequest(f"host priority [{index}] needs a Host name and an integer Score")
        if not -INT64 <= score < INT64:
            raise BadRequest(f"host priority [{index}]: Score is out of range")
        scores.append((host, score))
    return scores


def preemption_args(
    pod: Mapping[str, Any],
    victims: Mapping[str, Victims],
    pods_by_uid: Mapping[str, Mapping[str, Any]] | None,
) -> dict[str, Any]:
    """ExtenderPreemptionArgs: victims by UID for a node-cache-capable extender
    (``pods_by_uid`` None), whole pods otherwise."""
    if pods_by_uid is None:
        return {
            "Pod": pod,
            "NodeNameToMetaVictims": {node: entry.wire() for node, entry in victims.items()},
        }
    return {
        "Pod": pod,
        "NodeNameToVictims": {
            node: {
                "Pods": [pods_by_uid[uid] for uid in entry.uids],
                "NumPDBViolations": entry.num_pdb_violations,
            }
            for node, entry in victims.items()
        },
    }


def preemption_answer(body: Any) -> dict[str, Victims]:
    """An ExtenderPreemptionResult: the candidate nodes the extender keeps, with the
    victims it wants evicted there (always by UID)."""
    if not isinstance(body, Mapping):
        raise BadRequest("the preempt answer must be a JSON object")
    meta = field(body, "NodeNameToMetaVictims")
    if meta is None:
        return {}
    if not isinstance(meta, Mapping):
        raise BadRequest("NodeNameToMetaVictims must be an object")
    return {
        node: _victims(entry, _where("NodeNameToMetaVictims", node), True)
        for node, entry in meta.items()
    }


def binding_args(namespace: str, name: str, uid: str, node: str) -> dict[str, Any]:
    return {"PodName": name, "PodNamespace": namespace, "PodUID": uid, "Node": node}


def binding_error(body: Any) -> str:
    """An ExtenderBindingResult's ``Error`` ("" when the extender bound the pod)."""
    if not isinstance(body, Mapping):
        raise BadRequest("the bind answer must be a JSON object")
    error = field(body, "Error") or ""
    if not isinstance(error, str):
        raise BadRequest("Error must be a string")
    return error
