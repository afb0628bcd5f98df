"""Dynamic resource allocation's objects read into views: what DynamicResources checks
(classes named, allocation, reservations), and one error naming the field for each
malformed input. The rich objects carry much that is not read (device configs, a
slice's devices): ``test_read_fields`` checks nothing read is lost."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from volsched.cache.errors import ObjectError
from volsched.cache.objects.dra import DeviceSubRequest, parse_device_class, parse_resource_claim

RICH_CLASS: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "DeviceClass",
    "metadata": {"name": "gpu.example.com"},
    "spec": {
        "selectors": [{"cel": {"expression": 'device.driver == "gpu.example.com"'}}],
        "config": [{"opaque": {"driver": "gpu.example.com", "parameters": {"secret": "x"}}}],
        "extendedResourceName": "example.com/gpu",
    },
}
RICH_CLAIM: dict[str, Any] = {
    "apiVersion": "resource.k8s.io/v1",
    "kind": "ResourceClaim",
    "metadata": {"name": "gpu", "namespace": "shop", "uid": "claim-uid"},
    "spec": {
        "devices": {
            "requests": [
                {
                    "name": "gpu",
                    "firstAvailable": [
                        {
                            "name": "large",
                            "deviceClassName": "gpu.example.com",
                            "selectors": [
                                {
                                    "cel": {
                                        "expression": 'device.attributes["gpu.example.com"].model == "large"'
                                    }
                                }
                            ],
                            "tolerations": [{"key": "broken", "operator": "Exists"}],
                        },
                        {"name": "small", "deviceClassName": "gpu.example.com", "count": 2},
                    ],
                },
                {
                    "name": "nic",
                    "exactly": {
                        "deviceClassName": "nic.example.com",
                        "allocationMode": "All",
                        "adminAccess": True,
                        "capacity": {"requests": {"bandwidth": "10G"}},
                    },
                },
            ],
            "constraints": [{"requests": ["gpu", "nic"], "matchAttribute": "example.com/numa"}],
            "config": [{"requests": ["gpu"], "opaque": {"driver": "x", "parameters": {}}}],
        }
    },
    "status": {
        "allocation": {
            "devices": {
                "results": [
                    {
                        "request": "gpu/large",
                        "driver": "gpu.example.com",
                        "pool": "node-a",
                        "device": "gpu-0",
                    }
                ]
            },
            "nodeSelector": {
                "nodeSelectorTerms": [
                    {
                        "matchFields": [
                            {"key": "metadata.name", "operator": "In", "values": ["node-a"]}
                        ]
                    }
                ]
            },
        },
        "reservedFor": [{"resource": "pods", "name": "web-0", "uid": "pod-uid"}],
        "devices": [{"driver": "gpu.example.com", "pool": "node-a", "device": "gpu-0"}],
    },
}


def test_a_claim_reads_its_requests_allocation_and_reservations() -> None:
    view = parse_resource_claim(RICH_CLAIM)
    gpu, nic = view.requests
    assert gpu.exactly is None
    assert gpu.first_available == (
        DeviceSubRequest("large", "gpu.example.com"),
        DeviceSubRequest("small", "gpu.example.com"),
    )
    assert nic.exactly == DeviceSubRequest("", "nic.example.com")
    assert view.allocated
    assert view.allocation_nodes is not None
    assert view.allocation_nodes.matches({}, "node-a")
    assert not view.allocation_nodes.matches({}, "node-b")
    assert view.reserved_for == {"pod-uid"}


def test_a_claim_without_status_is_neither_allocated_nor_reserved() -> None:
    view = parse_resource_claim({**RICH_CLAIM, "status": {}})
    assert (view.allocated, view.allocation_nodes, view.reserved_for) == (False, None, frozenset())


def test_a_class_is_known_by_its_name() -> None:
    assert parse_device_class(RICH_CLASS).meta.name == "gpu.example.com"


def _with(raw: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A deep copy of ``raw`` with the dotted ``path`` (list indexes as numbers) set."""
    copied = copy.deepcopy(raw)
    *parents, last = path.split(".")
    target: Any = copied
    for part in parents:
        target = target[int(part)] if isinstance(target, list) else target[part]
    if isinstance(target, list):
        target[int(last)] = value
    else:
        target[last] = value
    return copied


@pytest.mark.parametrize(
    ("path", "value", "field", "problem"),
    [
        (
            "spec.devices.requests.1.exactly.deviceClassName",
            "",
            "spec.devices.requests[1].exactly.deviceClassName",
            "is required",
        ),
        (
            "spec.devices.requests.0.firstAvailable.1",
            {"name": "small"},
            "spec.devices.requests[0].firstAvailable[1].deviceClassName",
            "is required",
        ),
        (
            "spec.devices.requests.1",
            {"name": "nic"},
            "spec.devices.requests[1]",
            "must have exactly one of exactly and firstAvailable",
        ),
        ("spec.devices.requests.0.name", "", "spec.devices.requests[0].name", "is required"),
        (
            "status.allocation.nodeSelector",
            {"nodeSelectorTerms": "node-a"},
            "status.allocation.nodeSelector.nodeSelectorTerms",
            "must be a list",
        ),
    ],
    ids=[
        "request without class",
        "alternative without class",
        "request of neither kind",
        "request without name",
        "node selector not a list",
    ],
)
def test_a_malformed_claim_is_one_error_naming_the_field(
    path: str, value: Any, field: str, problem: str
) -> None:
    with pytest.raises(ObjectError) as refused:
        parse_resource_claim(_with(RICH_CLAIM, path, value))
    assert refused.value.field == field
    assert problem in refused.value.problem
