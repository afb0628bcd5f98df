"""A pod's ResourceClaims, checked by the daemon against the embedded cluster as
kube-scheduler 1.36 checks them: held before the queue (no attempt, no event) while its
claim does not exist; turned away with volsched's reason once the claim exists and would
have to be allocated; placed where the allocation allows when its claim is allocated and
reserved for it."""

from __future__ import annotations

import asyncio
from typing import Any

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import node
from volsched.scheduling.plugins.dynamic_resources import REASON

Raw = dict[str, Any]
DRA = "resource.k8s.io/v1"


def claiming_pod(name: str, claim_name: str) -> Raw:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "schedulerName": "volsched",
            "containers": [
                {"name": "main", "image": "busybox", "resources": {"claims": [{"name": "gpu"}]}}
            ],
            "resourceClaims": [{"name": "gpu", "resourceClaimName": claim_name}],
        },
    }


def resource_claim(name: str, status: Raw | None = None) -> Raw:
    return {
        "apiVersion": DRA,
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}]
            }
        },
        "status": status or {},
    }


DEVICE_CLASS = {
    "apiVersion": DRA,
    "kind": "DeviceClass",
    "metadata": {"name": "gpu.example.com"},
    "spec": {"selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}]},
}


def notes(cluster: Cluster, name: str) -> list[str]:
    return [str(event.get("note")) for event in cluster.events_for(name)]


async def test_a_pod_waits_for_its_claim_then_is_told_volsched_cannot_allocate_it(
    cluster: Cluster,
) -> None:
    server = cluster.server
    server.load([node("node-a"), node("node-b"), DEVICE_CLASS, claiming_pod("waiting", "gpu")])
    await cluster.start_daemon()
    plain = claiming_pod("plain", "unused")
    del plain["spec"]["resourceClaims"]
    plain["spec"]["containers"][0]["resources"] = {}
    server.load([plain])
    await eventually(
        lambda: cluster.node_of("plain") is not None, what="a pod without claims placed"
    )
    await asyncio.sleep(1.0)
    # Held before the queue: never attempted, nothing written about it.
    assert cluster.node_of("waiting") is None
    assert notes(cluster, "waiting") == []
    assert not (server.get("Pod", "waiting", "default") or {}).get("status", {}).get("conditions")

    # The claim appears, to be allocated: attempted now, and told why it stays pending.
    server.load([resource_claim("gpu")])
    await eventually(
        lambda: any(REASON in note for note in notes(cluster, "waiting")),
        what="the reason volsched cannot place it",
    )
    assert cluster.node_of("waiting") is None


async def test_a_pod_whose_claim_is_allocated_and_reserved_for_it_goes_where_the_devices_are(
    cluster: Cluster,
) -> None:
    server = cluster.server
    (stored,) = server.load([claiming_pod("resumed", "gpu")])
    server.load([node("node-a"), node("node-b"), DEVICE_CLASS])
    await cluster.start_daemon()
    # The claim, allocated on node-b and reserved for the pod by a scheduler that
    # stopped before binding it.
    on_node_b = {
        "allocation": {
            "devices": {
                "results": [
                    {
                        "request": "gpu",
                        "driver": "gpu.example.com",
                        "pool": "node-b",
                        "device": "gpu-0",
                    }
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["node-b"]}
                        ]
                    }
                ]
            },
        },
        "reservedFor": [{"resource": "pods", "name": "resumed", "uid": stored["metadata"]["uid"]}],
    }
    server.load([resource_claim("gpu", on_node_b)])
    await eventually(lambda: cluster.node_of("resumed") == "node-b", what="the pod on node-b")
