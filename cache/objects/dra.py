"""Dynamic resource allocation's objects (``resource.k8s.io/v1``), as far as volsched
reads them: which DeviceClasses exist, and of each ResourceClaim the device classes its
requests name, whether it is allocated and where, and which pods it is reserved for.
volsched allocates no device, so what a driver offers (ResourceSlices) and what a class
selects are not read.
"""

from __future__ import annotations

from dataclasses import dataclass

from volsched.cache.objects.fields import Fields, Raw
from volsched.cache.objects.meta import ObjectMeta, parse_meta
from volsched.cache.objects.selectors import NodeSelector, parse_node_selector

API_VERSION = "resource.k8s.io/v1"


@dataclass(frozen=True, slots=True)
class DeviceClass:
    """Only whether a class exists matters until volsched allocates devices."""

    meta: ObjectMeta


@dataclass(frozen=True, slots=True)
class DeviceSubRequest:
    """``exactly``'s body (unnamed), or one of ``firstAvailable``'s named alternatives."""

    name: str
    device_class: str


@dataclass(frozen=True, slots=True)
class DeviceRequest:
    name: str
    exactly: DeviceSubRequest | None
    first_available: tuple[DeviceSubRequest, ...] = ()


@dataclass(frozen=True, slots=True)
class ResourceClaim:
    meta: ObjectMeta
    requests: tuple[DeviceRequest, ...]
    allocated: bool = False
    # Where the allocated devices are reachable (None: anywhere, or not allocated).
    allocation_nodes: NodeSelector | None = None
    # The uids of the consumers it is reserved for (pods, for volsched).
    reserved_for: frozenset[str] = frozenset()


def parse_device_class(raw: Raw) -> DeviceClass:
    return DeviceClass(meta=parse_meta(raw.get("metadata"), "DeviceClass", namespaced=False))


def _sub_request(body: Fields, name: str) -> DeviceSubRequest:
    device_class = body.str("deviceClassName")
    if not device_class:
        raise body.fail("deviceClassName", "is required")
    return DeviceSubRequest(name, device_class)


def _request(item: Fields) -> DeviceRequest:
    name = item.str("name")
    if not name:
        raise item.fail("name", "is required")
    alternatives = tuple(_sub_request(sub, sub.str("name")) for sub in item.items("firstAvailable"))
    exactly = _sub_request(item.sub("exactly"), "") if item.has("exactly") else None
    if (exactly is None) == (not alternatives):
        raise item.fail("", "must have exactly one of exactly and firstAvailable")
    return DeviceRequest(name, exactly, alternatives)


def parse_resource_claim(raw: Raw) -> ResourceClaim:
    meta = parse_meta(raw.get("metadata"), "ResourceClaim", namespaced=True)
    devices = Fields(raw.get("spec"), "ResourceClaim", meta.name, "spec").sub("devices")
    status = Fields(raw.get("status"), "ResourceClaim", meta.name, "status")
    allocation = status.sub("allocation")
    return ResourceClaim(
        meta=meta,
        requests=tuple(_request(item) for item in devices.items("requests")),
        allocated=status.has("allocation"),
        allocation_nodes=(
            parse_node_selector(allocation.sub("nodeSelector"))
            if allocation.has("nodeSelector")
            else None
        ),
        reserved_for=frozenset(item.str("uid") for item in status.items("reservedFor")),
    )
