"""Can the claims left without a PV be provisioned for a pod on this node?

Upstream's checkVolumeProvisions, claim by claim: the class must name a provisioner other
than ``kubernetes.io/no-provisioner`` and its ``allowedTopologies`` must admit the node
(else a bind conflict); a CSI driver that publishes storage capacity needs a
CSIStorageCapacity of the class, reachable from the node, large enough for the claim
(else "not enough free storage"). Provisioners of volsched's own replicated storage add
their check through ``ProvisionerCheck`` (replica placement for the node).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.selectors import match_topology_terms
from volsched.cache.objects.storage import (
    NO_PROVISIONER,
    CSIStorageCapacity,
    PersistentVolumeClaim,
    StorageClass,
)


class ProvisionError(Exception):
    """An internal error while checking provisioning (upstream returns it as an error)."""


class ProvisionerCheck(Protocol):
    """Extra per-node feasibility for one provisioner's claims."""

    def check(
        self,
        claim: PersistentVolumeClaim,
        storage_class: StorageClass,
        node: NodeInfo,
        earlier: Sequence[object] = (),
    ) -> tuple[bool, tuple[str, ...], object]:
        """(feasible, reasons shown in explain, a plan the reserve step can commit).

        ``earlier`` holds the plans accepted for the pod's previous claims on this node,
        which the pod would take too if it lands here."""

    def commit(self, plan: object) -> None:
        """The pod was reserved on the node this plan was made for: hold its resources."""

    def release(self, plan: object) -> None:
        """Undo ``commit`` (the pod's reservation was rolled back)."""

    def done(self, plan: object) -> None:
        """The pod was bound: ``release`` will never be called for this plan."""


@dataclass(slots=True)
class ProvisionOutcome:
    satisfied: bool = True
    sufficient_storage: bool = True
    provisions: list[PersistentVolumeClaim] = field(default_factory=list)
    plans: dict[str, object] = field(default_factory=dict)
    details: list[str] = field(default_factory=list)
    # Per claim key: the capacity of the CSIStorageCapacity that admitted it on the node,
    # which VolumeBinding's capacity score reads.
    node_capacities: dict[str, int] = field(default_factory=dict)


def capacities_by_class(
    cluster: ClusterCache, classes: set[str]
) -> dict[str, list[CSIStorageCapacity]]:
    """The CSIStorageCapacity objects of each class, gathered once per cycle."""
    result: dict[str, list[CSIStorageCapacity]] = {name: [] for name in classes}
    for capacity in cluster.csi_capacities.values():
        if capacity.storage_class in result:
            result[capacity.storage_class].append(capacity)
    return result


def _capacity_for(
    cluster: ClusterCache,
    claim: PersistentVolumeClaim,
    storage_class: StorageClass,
    node: NodeInfo,
    capacities: Mapping[str, list[CSIStorageCapacity]],
) -> tuple[bool, CSIStorageCapacity | None]:
    """(enough capacity, the first CSIStorageCapacity the node reaches that holds the
    claim); with no capacity to check — no request, a driver that publishes none — the
    claim fits and there is no object."""
    if claim.request is None:
        return True, None
    driver = cluster.csi_drivers.get(storage_class.provisioner)
    if driver is None or not driver.storage_capacity:
        return True, None
    labels = node.node.meta.labels
    for capacity in capacities.get(storage_class.meta.name, ()):
        limit = capacity.limit()
        if limit is None or limit < claim.request:
            continue
        if capacity.node_topology is not None and capacity.node_topology.matches(labels):
            return True, capacity
    return False, None


def check_provisions(
    cluster: ClusterCache,
    claims: list[PersistentVolumeClaim],
    node: NodeInfo,
    capacities: Mapping[str, list[CSIStorageCapacity]],
    checks: Mapping[str, ProvisionerCheck],
) -> ProvisionOutcome:
    outcome = ProvisionOutcome()
    for claim in claims:
        class_name = claim.class_name
        if not class_name:
            raise ProvisionError(f'no class for claim "{claim.key}"')
        storage_class = cluster.storage_classes.get(class_name)
        if storage_class is None:
            raise ProvisionError(f'failed to find storage class "{class_name}"')
        provisioner = storage_class.provisioner
        if not provisioner or provisioner == NO_PROVISIONER:
            return ProvisionOutcome(satisfied=False)
        if not match_topology_terms(storage_class.allowed_topologies, node.node.meta.labels):
            return ProvisionOutcome(satisfied=False)
        enough, capacity = _capacity_for(cluster, claim, storage_class, node, capacities)
        if not enough:
            return ProvisionOutcome(sufficient_storage=False)
        if capacity is not None and capacity.capacity is not None:
            outcome.node_capacities[claim.key] = capacity.capacity
        extra = checks.get(provisioner)
        if extra is not None:
            feasible, reasons, plan = extra.check(
                claim, storage_class, node, list(outcome.plans.values())
            )
            if not feasible:
                return ProvisionOutcome(sufficient_storage=False, details=list(reasons))
            outcome.plans[claim.key] = plan
        outcome.provisions.append(claim)
    return outcome
