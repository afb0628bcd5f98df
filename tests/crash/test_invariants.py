"""The crash suite's checker catches each kind of violation it claims to, and passes a
cluster where everything is in order."""

from __future__ import annotations

import copy
import json
from typing import Any

from tests.crash.invariants import (
    ANN_BINDING_INTENT,
    ANN_SELECTED_NODE,
    State,
    affinity_admits,
    open_writes,
    unconverged,
    violations,
)
from tests.integration.objects import claim, local_pv, node, pod

Raw = dict[str, Any]


def bound_claim(name: str, volume: str, uid: str) -> Raw:
    body = claim(name)
    body["metadata"]["uid"] = uid
    body["spec"]["volumeName"] = volume
    body["status"] = {"phase": "Bound"}
    return body


def bound_pv(name: str, node_name: str, claim_name: str, uid: str) -> Raw:
    body = local_pv(name, node_name)
    body["spec"]["claimRef"] = {"namespace": "default", "name": claim_name, "uid": uid}
    body["status"] = {"phase": "Bound"}
    return body


def placed(name: str, claims: tuple[str, ...], node_name: str) -> Raw:
    body = pod(name, claims)
    body["spec"]["nodeName"] = node_name
    return body


def pending(name: str, claims: tuple[str, ...] = (), message: str = "0/2 nodes ...") -> Raw:
    body = pod(name, claims)
    body["status"] = {
        "conditions": [{"type": "PodScheduled", "status": "False", "message": message}]
    }
    return body


def intent(pod_name: str, node_name: str) -> str:
    return json.dumps({"pod": f"default/{pod_name}", "podUID": "u", "node": node_name})


def healthy() -> State:
    return State(
        pods=[placed("p", ("c1",), "node-1"), pending("q", ("c2",)), placed("r", (), "node-2")],
        claims=[bound_claim("c1", "pv-1", "uid-1"), claim("c2")],
        pvs=[bound_pv("pv-1", "node-1", "c1", "uid-1"), local_pv("pv-2", "node-2")],
        nodes=[node("node-1"), node("node-2")],
    )


def test_a_cluster_in_order_has_no_violation() -> None:
    state = healthy()
    assert violations(state) == []
    assert unconverged(state, {"p": True, "q": False, "r": True}) == []
    assert open_writes(state) == set()


def test_a_pv_bound_to_two_claims() -> None:
    state = healthy()
    state.claims.append(bound_claim("c3", "pv-1", "uid-3"))
    state.pods.append(placed("s", ("c3",), "node-1"))
    found = violations(state)
    assert any("PV pv-1 is bound to claims ['c1', 'c3']" in v for v in found)
    assert any("claim c3 is bound to PV pv-1, whose claimRef" in v for v in found)


def test_a_claim_claimed_by_two_pvs() -> None:
    state = healthy()
    state.pvs[1]["spec"]["claimRef"] = {"namespace": "default", "name": "c1"}
    found = violations(state)
    assert any("claim c1 is claimed by PVs ['pv-1', 'pv-2']" in v for v in found)


def test_a_prebind_left_for_a_pod_that_is_pending() -> None:
    state = healthy()
    leftover = state.pvs[1]
    leftover["spec"]["claimRef"] = {"namespace": "default", "name": "c2"}
    leftover["metadata"]["annotations"] = {ANN_BINDING_INTENT: intent("q", "node-2")}
    found = violations(state)
    assert any(
        "PV pv-2 is prebound to c2 for pod q on node-2, which is not bound" in v for v in found
    )
    assert any("PV pv-2 is prebound to claim c2 of pod q, which is not bound" in v for v in found)
    assert open_writes(state) == {"release PV"}


def test_a_claim_annotated_for_another_node() -> None:
    state = healthy()
    state.claims[0]["metadata"]["annotations"] = {
        ANN_SELECTED_NODE: "node-2",
        ANN_BINDING_INTENT: intent("p", "node-2"),
    }
    assert violations(state) == [
        "claim c1 is annotated selected-node=node-2 for pod p, which is bound to node-1"
    ]
    unbound = copy.deepcopy(state)
    unbound.claims[1]["metadata"]["annotations"] = {ANN_SELECTED_NODE: "node-1"}
    assert any(
        "claim c2 is annotated selected-node=node-1 for pod q" in v for v in violations(unbound)
    )
    assert open_writes(unbound) == {"release claim"}


def test_a_pod_bound_without_its_volume_or_pending_without_a_reason() -> None:
    state = healthy()
    state.pods[0]["spec"]["nodeName"] = "node-2"  # its PV is on node-1
    state.pods[1]["status"] = {}
    found = violations(state)
    assert any(
        "pod p is bound to node-2 but claim c1 is bound to PV pv-1, whose node" in v for v in found
    )
    assert "pod q is pending without a PodScheduled=False reason" in found
    state.pods.append(placed("s", ("c2",), "node-1"))
    assert any("pod s is bound to node-1 but claim c2 is unbound" in v for v in violations(state))


def test_unconverged_names_pods_not_where_they_must_end() -> None:
    state = healthy()
    assert unconverged(state, {"q": True, "r": False, "gone": True}) == [
        "pod gone is missing",
        "pod q is not bound (0/2 nodes ...)",
        "pod r cannot fit, yet is bound",
    ]


def test_node_affinity_operators() -> None:
    volume = local_pv("pv", "node-1")
    terms = volume["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"]
    assert affinity_admits(volume, node("node-1")) and not affinity_admits(volume, node("node-2"))
    terms[0]["matchExpressions"] = [{"key": "topology.kubernetes.io/zone", "operator": "Exists"}]
    assert affinity_admits(volume, node("node-2"))
    terms[0]["matchExpressions"] = [
        {"key": "kubernetes.io/hostname", "operator": "NotIn", "values": ["node-1"]}
    ]
    assert affinity_admits(volume, node("node-2")) and not affinity_admits(volume, node("node-1"))
    terms[0] = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-1"]}]}
    assert affinity_admits(volume, node("node-1"))
    del volume["spec"]["nodeAffinity"]
    assert affinity_admits(volume, node("node-2"))
