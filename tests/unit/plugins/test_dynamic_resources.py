"""DynamicResources: a pod's ResourceClaims checked as kube-scheduler 1.36 checks them.

PreEnqueue holds a pod whose claims are not all there; PreFilter refuses one asking for
a DeviceClass that does not exist (upstream's texts, recorded in files 259 and 260 of
the oracle recordings) and one volsched would have to allocate or reserve; a pod whose
claims are allocated and reserved for it goes where the allocations allow.
"""

from __future__ import annotations

from typing import Any

import pytest

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import parse_node, parse_pod
from volsched.cache.objects.dra import parse_device_class, parse_resource_claim
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.events import ADD, DEVICE_CLASS, RESOURCE_CLAIM, UPDATE
from volsched.scheduling.framework.status import Code
from volsched.scheduling.plugins.dynamic_resources import (
    REASON,
    REASON_NO_CLAIMS,
    REASON_NOT_AVAILABLE,
    REASON_STILL_NOT_SCHEDULABLE,
    DynamicResources,
)

POD_UID = "pod-uid"


def pod(claims: list[dict[str, Any]], statuses: list[dict[str, Any]] | None = None) -> Any:
    return parse_pod(
        {
            "kind": "Pod",
            "metadata": {"name": "p", "namespace": "ns", "uid": POD_UID},
            "spec": {"containers": [{"name": "c"}], "resourceClaims": claims},
            "status": {"resourceClaimStatuses": statuses or []},
        }
    )


def claim(
    name: str = "gpu",
    requests: list[dict[str, Any]] | None = None,
    status: dict[str, Any] | None = None,
    **metadata: Any,
) -> Any:
    return parse_resource_claim(
        {
            "metadata": {"name": name, "namespace": "ns", "uid": f"{name}-uid", **metadata},
            "spec": {
                "devices": {
                    "requests": requests
                    or [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]
                }
            },
            "status": status or {},
        }
    )


GPU_CLASS = parse_device_class(
    {
        "metadata": {"name": "gpu.example.com"},
        "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
    }
)
NAMED = [{"name": "gpu", "resourceClaimName": "gpu"}]
TEMPLATED = [{"name": "gpu", "resourceClaimTemplateName": "gpu-template"}]
MINE = [{"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": POD_UID, "controller": True}]
ON_NODE_A = {
    "allocation": {
        "devices": {
            "results": [
                {"request": "gpu", "driver": "gpu.example.com", "pool": "node-a", "device": "gpu-0"}
            ]
        },
        "nodeSelector": {
            "nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node-a"]}]}
            ]
        },
    }
}
RESERVED = {"reservedFor": [{"resource": "pods", "name": "p", "uid": POD_UID}]}


def cluster_with(*claims: Any) -> ClusterCache:
    cluster = ClusterCache()
    cluster.upsert("DeviceClass", GPU_CLASS)
    for item in claims:
        cluster.upsert("ResourceClaim", item)
    return cluster


@pytest.mark.parametrize(
    ("claims", "statuses", "objects", "held"),
    [
        ([], None, [], None),
        (NAMED, None, [claim()], None),
        (NAMED, None, [], 'could not find ResourceClaim "ns/gpu"'),
        (TEMPLATED, None, [], 'pod "ns/p": ResourceClaim not created yet'),
        # The controller decided no claim is needed: nothing to wait for.
        (TEMPLATED, [{"name": "gpu"}], [], None),
        (
            TEMPLATED,
            [{"name": "gpu", "resourceClaimName": "p-gpu"}],
            [claim("p-gpu")],
            ("ResourceClaim ns/p-gpu was not created for Pod ns/p (Pod is not owner)"),
        ),
        (
            TEMPLATED,
            [{"name": "gpu", "resourceClaimName": "p-gpu"}],
            [claim("p-gpu", ownerReferences=MINE)],
            None,
        ),
        (
            NAMED,
            None,
            [claim(deletionTimestamp="2026-11-28T00:00:00Z", finalizers=["x"])],
            'resourceclaim "gpu" is being deleted',
        ),
    ],
    ids=[
        "no claims",
        "a named claim that exists",
        "a named claim that does not exist",
        "a templated claim not made yet",
        "a templated claim not needed",
        "a templated claim made for another pod",
        "a templated claim made for the pod",
        "a claim being deleted",
    ],
)
def test_pre_enqueue_holds_a_pod_whose_claims_are_not_all_there(
    claims: list[dict[str, Any]],
    statuses: list[dict[str, Any]] | None,
    objects: list[Any],
    held: str | None,
) -> None:
    plugin = DynamicResources(cluster_with(*objects))
    assert plugin.pre_enqueue(pod(claims, statuses)) == held


@pytest.mark.parametrize(
    ("objects", "code", "message", "post_filter"),
    [
        ([claim()], Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON, REASON_STILL_NOT_SCHEDULABLE),
        (
            [claim(requests=[{"name": "gpu", "exactly": {"deviceClassName": "no-such-class"}}])],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "request gpu: device class no-such-class does not exist",
            REASON_NO_CLAIMS,
        ),
        (
            [
                claim(
                    requests=[
                        {
                            "name": "gpu",
                            "firstAvailable": [
                                {"name": "large", "deviceClassName": "gpu.example.com"},
                                {"name": "small", "deviceClassName": "no-such-class"},
                            ],
                        }
                    ]
                )
            ],
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
            "request gpu/small: device class no-such-class does not exist",
            REASON_NO_CLAIMS,
        ),
        # Allocated, not yet reserved for the pod: volsched would have to reserve it.
        ([claim(status=ON_NODE_A)], Code.UNSCHEDULABLE_AND_UNRESOLVABLE, REASON, None),
        ([claim(status={**ON_NODE_A, **RESERVED})], Code.SUCCESS, "", None),
    ],
    ids=[
        "a claim to allocate",
        "a missing device class",
        "a missing class of an alternative",
        "allocated, not reserved",
        "allocated and reserved for the pod",
    ],
)
def test_pre_filter(objects: list[Any], code: Code, message: str, post_filter: str | None) -> None:
    plugin = DynamicResources(cluster_with(*objects))
    state = CycleState()
    _, status = plugin.pre_filter(state, pod(NAMED))
    assert (status.code, status.message) == (code, message)
    if post_filter is not None:
        after = plugin.post_filter(state, pod(NAMED))
        assert (after.code, after.message) == (Code.UNSCHEDULABLE, post_filter)


def test_a_pod_without_claims_is_skipped_and_frees_nothing() -> None:
    plugin = DynamicResources(ClusterCache())
    state = CycleState()
    _, status = plugin.pre_filter(state, pod([]))
    assert status.code is Code.SKIP
    assert plugin.post_filter(state, pod([])).message == REASON_NO_CLAIMS
    # An earlier PreFilter turned the pod away before this one ran: upstream's error.
    assert plugin.post_filter(CycleState(), pod([])).code is Code.ERROR


@pytest.mark.parametrize(("node", "fits"), [("node-a", True), ("node-b", False)])
def test_a_reserved_claim_keeps_the_pod_where_its_allocation_is(node: str, fits: bool) -> None:
    plugin = DynamicResources(cluster_with(claim(status={**ON_NODE_A, **RESERVED})))
    state = CycleState()
    plugin.pre_filter(state, pod(NAMED))
    info = NodeInfo(parse_node({"metadata": {"name": node}}))
    status = plugin.filter(state, pod(NAMED), info)
    assert (status is None) is fits
    if status is not None:
        assert status.message == REASON_NOT_AVAILABLE


def test_a_claim_or_class_made_or_changed_may_let_a_pod_through() -> None:
    registered = {
        (e.event.resource, e.event.action)
        for e in DynamicResources(ClusterCache()).events_to_register()
    }
    assert registered == {(RESOURCE_CLAIM, ADD | UPDATE), (DEVICE_CLASS, ADD | UPDATE)}
