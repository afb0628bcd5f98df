"""What must hold once a crash round has converged, read from the API objects alone.

1. No PV is prebound or bound to two claims (nor a claim to two PVs).
2. No claim carries a selected-node annotation, and no PV a claimRef, for a pod that is
   not bound there.
3. Every pod is either bound, with each of its claims bound to a PV whose node affinity
   admits the pod's node, or pending with a reason (``PodScheduled=False`` and a message).

``violations`` checks those; ``unconverged`` says which pods are not (yet) where the
workload says they must end: bound if they can fit anywhere, pending if they cannot.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

Raw = dict[str, Any]
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BINDING_INTENT = "volsched.io/binding-intent"


@dataclass(frozen=True, slots=True)
class State:
    """The objects of one namespace (PVs and nodes are cluster-wide), as served."""

    pods: list[Raw]
    claims: list[Raw]
    pvs: list[Raw]
    nodes: list[Raw]


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def _name(obj: Mapping[str, Any]) -> str:
    return str(_meta(obj).get("name") or "")


def _spec(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("spec") or {}


def _phase(obj: Mapping[str, Any]) -> str:
    return str((obj.get("status") or {}).get("phase") or "")


def _annotations(obj: Mapping[str, Any]) -> Mapping[str, str]:
    return _meta(obj).get("annotations") or {}


def claim_names(pod: Mapping[str, Any]) -> list[str]:
    return [
        str(volume["persistentVolumeClaim"]["claimName"])
        for volume in _spec(pod).get("volumes") or []
        if isinstance(volume.get("persistentVolumeClaim"), Mapping)
    ]


def _intent(obj: Mapping[str, Any]) -> tuple[str, str] | None:
    """(pod name, node) of the binding-intent annotation, if any and readable."""
    text = _annotations(obj).get(ANN_BINDING_INTENT)
    if text is None:
        return None
    try:
        data = json.loads(text)
        return str(data["pod"]).split("/", 1)[-1], str(data["node"])
    except (ValueError, KeyError, TypeError):
        return ("<unreadable binding-intent>", "")


def _requirement_holds(requirement: Mapping[str, Any], value: str | None) -> bool:
    operator, values = requirement.get("operator"), requirement.get("values") or []
    if operator == "In":
        return value in values
    if operator == "NotIn":
        return value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    return False


def affinity_admits(pv: Mapping[str, Any], node: Mapping[str, Any]) -> bool:
    """Whether the PV's required node affinity admits the node (no affinity: any node)."""
    terms = ((_spec(pv).get("nodeAffinity") or {}).get("required") or {}).get("nodeSelectorTerms")
    if not terms:
        return True
    labels = _meta(node).get("labels") or {}
    fields = {"metadata.name": _name(node)}
    return any(
        all(
            _requirement_holds(r, labels.get(r.get("key")))
            for r in term.get("matchExpressions") or []
        )
        and all(
            _requirement_holds(r, fields.get(r.get("key"))) for r in term.get("matchFields") or []
        )
        for term in terms
    )


def _refers_to(pv: Mapping[str, Any], claim: Mapping[str, Any]) -> bool:
    ref = _spec(pv).get("claimRef") or {}
    if ref.get("name") != _name(claim) or ref.get("namespace") != _meta(claim).get("namespace"):
        return False
    return not ref.get("uid") or ref.get("uid") == _meta(claim).get("uid")


def violations(state: State) -> list[str]:
    found: list[str] = []
    pods = {_name(p): p for p in state.pods}
    claims = {_name(c): c for c in state.claims}
    nodes = {_name(n): n for n in state.nodes}
    users: dict[str, list[str]] = {}
    for pod in state.pods:
        for claim_name in claim_names(pod):
            users.setdefault(claim_name, []).append(_name(pod))

    def node_of(pod_name: str) -> str:
        return str(_spec(pods.get(pod_name) or {}).get("nodeName") or "")

    # 1. One PV, one claim.
    for pv in state.pvs:
        holders = [c for c in state.claims if _spec(c).get("volumeName") == _name(pv)]
        if len(holders) > 1:
            found.append(f"PV {_name(pv)} is bound to claims {sorted(map(_name, holders))}")
        for holder in holders:
            if _phase(holder) == "Bound" and not _refers_to(pv, holder):
                found.append(
                    f"claim {_name(holder)} is bound to PV {_name(pv)}, whose claimRef is "
                    f"{_spec(pv).get('claimRef')}"
                )
    for claim in state.claims:
        prebound = [_name(pv) for pv in state.pvs if _refers_to(pv, claim)]
        if len(prebound) > 1:
            found.append(f"claim {_name(claim)} is claimed by PVs {sorted(prebound)}")

    # 2. Nothing written for a pod that is not bound there.
    for claim in state.claims:
        selected = _annotations(claim).get(ANN_SELECTED_NODE)
        if selected is None:
            continue
        intent = _intent(claim)
        for pod_name in [intent[0]] if intent else users.get(_name(claim), []):
            if node_of(pod_name) != selected:
                found.append(
                    f"claim {_name(claim)} is annotated selected-node={selected} for pod "
                    f"{pod_name}, which is {_where(node_of(pod_name))}"
                )
    for pv in state.pvs:
        ref = _spec(pv).get("claimRef")
        if not ref:
            continue
        intent = _intent(pv)
        if intent is not None and node_of(intent[0]) != intent[1]:
            found.append(
                f"PV {_name(pv)} is prebound to {ref.get('name')} for pod {intent[0]} on "
                f"{intent[1]}, which is {_where(node_of(intent[0]))}"
            )
        prebound_claim = claims.get(str(ref.get("name")))
        if prebound_claim is None or not _refers_to(pv, prebound_claim):
            continue
        for pod_name in users.get(_name(prebound_claim), []):
            where = node_of(pod_name)
            if not where or where not in nodes or not affinity_admits(pv, nodes[where]):
                found.append(
                    f"PV {_name(pv)} is {'bound' if ref.get('uid') else 'prebound'} to claim "
                    f"{_name(prebound_claim)} of pod {pod_name}, which is {_where(where)}"
                )

    # 3. Bound with its volumes, or pending with a reason.
    for pod in state.pods:
        name, where = _name(pod), node_of(_name(pod))
        if not where:
            if not _pending_reason(pod):
                found.append(f"pod {name} is pending without a PodScheduled=False reason")
            continue
        for claim_name in claim_names(pod):
            problem = _claim_problem(claims.get(claim_name), state.pvs, nodes.get(where))
            if problem:
                found.append(f"pod {name} is bound to {where} but claim {claim_name} {problem}")
    return found


def _where(node: str) -> str:
    return f"bound to {node}" if node else "not bound"


def _pending_reason(pod: Mapping[str, Any]) -> str:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return str(condition.get("message") or "")
    return ""


def _claim_problem(
    claim: Mapping[str, Any] | None, pvs: Iterable[Raw], node: Mapping[str, Any] | None
) -> str:
    if claim is None:
        return "does not exist"
    volume = _spec(claim).get("volumeName")
    if _phase(claim) != "Bound" or not volume:
        return f"is {_phase(claim) or 'unbound'}"
    pv = next((pv for pv in pvs if _name(pv) == volume), None)
    if pv is None:
        return f"is bound to a missing PV {volume}"
    if not _refers_to(pv, claim) or _phase(pv) != "Bound":
        return f"is bound to PV {volume}, which is {_phase(pv)} for {_spec(pv).get('claimRef')}"
    if node is None or not affinity_admits(pv, node):
        return f"is bound to PV {volume}, whose node affinity does not admit the pod's node"
    return ""


def unconverged(state: State, schedulable: Mapping[str, bool]) -> list[str]:
    """Pods not where they must end: bound if they can fit, pending if they cannot."""
    pods = {_name(p): p for p in state.pods}
    left = []
    for name, fits in sorted(schedulable.items()):
        pod = pods.get(name)
        if pod is None:
            left.append(f"pod {name} is missing")
            continue
        bound = bool(_spec(pod).get("nodeName"))
        if fits and not bound:
            left.append(f"pod {name} is not bound ({_pending_reason(pod) or 'no reason yet'})")
        elif fits and _claims_unbound(pod, state.claims):
            left.append(f"pod {name} is bound but not all its claims are")
        elif not fits and (bound or not _pending_reason(pod)):
            left.append(f"pod {name} cannot fit, yet is {'bound' if bound else 'without a reason'}")
    return left


def _claims_unbound(pod: Mapping[str, Any], claims: Iterable[Raw]) -> bool:
    phases = {_name(c): _phase(c) for c in claims}
    return any(phases.get(name) != "Bound" for name in claim_names(pod))


def open_writes(state: State, replicas: Iterable[Raw] = ()) -> set[str]:
    """Which undo writes a recovery could make now: a prebind the PV controller has not
    completed, a selected-node annotation on a claim with no volume yet, a Replica of a
    volume that was never provisioned."""
    points: set[str] = set()
    for pv in state.pvs:
        if (
            _spec(pv).get("claimRef")
            and ANN_BINDING_INTENT in _annotations(pv)
            and _phase(pv) != "Bound"
        ):
            points.add("release PV")
    for claim in state.claims:
        if ANN_SELECTED_NODE in _annotations(claim) and not _spec(claim).get("volumeName"):
            points.add("release claim")
    volumes = {_name(pv) for pv in state.pvs}
    if any(_spec(r).get("volumeName") not in volumes for r in replicas):
        points.add("delete Replica")
    return points
