"""DynamicResources: a pod's ResourceClaims, checked as kube-scheduler 1.36 checks them.

PreEnqueue finds each claim the pod names (a templated one through the pod's
``status.resourceClaimStatuses``) and holds the pod before the queue while one is
missing, being deleted or not made for the pod; PreFilter checks the same again (a claim
may go in between) and refuses a claim to allocate that asks for a DeviceClass that does
not exist, in upstream's words and order (recorded: oracle files 259–262). A pod whose claims are all allocated and reserved for it (the scheduler
that allocated them stopped before binding the pod, say) is placed as upstream places it:
only on nodes each allocation's node selector admits (``resourceclaim not available on
the node``). volsched does not allocate devices or reserve claims: a pod with a claim
still to allocate, or allocated but not yet reserved for it, is left pending with one
clear reason instead of being bound to a node where it would never start.

Its PostFilter runs before DefaultPreemption, as upstream orders them, and its words lead
the PostFilter text: ``no new claims to deallocate`` when PreFilter found no claim to
work with (none asked for, or one missing), ``still not schedulable`` when it did, and
``not found`` — an internal error that stops the PostFilter there, so nothing is
preempted — when an earlier PreFilter rejected the pod before this one ran, exactly as
kube-scheduler 1.36 reports them.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.cache.objects.dra import DeviceRequest, ResourceClaim
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.events import (
    ADD,
    DEVICE_CLASS,
    RESOURCE_CLAIM,
    UPDATE,
    ClusterEventWithHint,
    on,
)
from volsched.scheduling.framework.status import SKIP, SUCCESS, Code, Status, unresolvable

REASON = "volsched does not allocate dynamic resources (the pod has ResourceClaims)"
_REJECTED = unresolvable(REASON)
REASON_NOT_AVAILABLE = "resourceclaim not available on the node"
_NOT_AVAILABLE = unresolvable(REASON_NOT_AVAILABLE)
# Upstream's PostFilter texts: no claim to free for a pod without claims, nothing freed
# for one with claims (volsched deallocates none), and the cycle state's error when this
# plugin's PreFilter never ran.
REASON_NO_CLAIMS = "no new claims to deallocate"
REASON_STILL_NOT_SCHEDULABLE = "still not schedulable"
ERROR_NOT_FOUND = "not found"
_STATE = "PreFilterDynamicResources"


@dataclass(frozen=True, slots=True)
class ClaimsOfPod:
    """What PreFilter found: the pod's claims, in its order (empty when it stopped
    before the end, as upstream's state is)."""

    claims: tuple[ResourceClaim, ...] = ()


_NONE_FOUND = ClaimsOfPod()


def claim_problem(cluster: ClusterCache, pod: Pod) -> tuple[tuple[ResourceClaim, ...], str | None]:
    """The pod's claims in ``spec.resourceClaims`` order, or why they cannot be used."""
    claims = []
    namespace = pod.meta.namespace
    for source in pod.resource_claims:
        name = source.claim_name
        made_for_pod = name is None
        if made_for_pod:
            if source.name not in pod.resource_claim_statuses:
                return (), f'pod "{namespace}/{pod.meta.name}": ResourceClaim not created yet'
            name = pod.resource_claim_statuses[source.name]
            if name is None:
                continue  # the controller decided no claim is needed
        claim = cluster.resource_claims.get(f"{namespace}/{name}")
        if claim is None:
            return (), f'could not find ResourceClaim "{namespace}/{name}"'
        if claim.meta.deletion_timestamp is not None:
            return (), f'resourceclaim "{name}" is being deleted'
        if made_for_pod and not _controlled_by(claim, pod):
            return (), (
                f"ResourceClaim {namespace}/{name} was not created for Pod "
                f"{namespace}/{pod.meta.name} (Pod is not owner)"
            )
        claims.append(claim)
    return tuple(claims), None


def _controlled_by(claim: ResourceClaim, pod: Pod) -> bool:
    controller = claim.meta.controller()
    return controller is not None and controller.uid == pod.meta.uid


def reserved_for(claim: ResourceClaim, pod: Pod) -> bool:
    return pod.meta.uid in claim.reserved_for


def missing_class(cluster: ClusterCache, claim: ResourceClaim) -> str | None:
    """Upstream's refusal of a claim to allocate whose request names a DeviceClass that
    does not exist (each ``firstAvailable`` alternative as ``request/alternative``)."""
    for request in claim.requests:
        for name, device_class in _classes(request):
            if device_class not in cluster.device_classes:
                return f"request {name}: device class {device_class} does not exist"
    return None


def _classes(request: DeviceRequest) -> list[tuple[str, str]]:
    if request.exactly is not None:
        return [(request.name, request.exactly.device_class)]
    return [(f"{request.name}/{sub.name}", sub.device_class) for sub in request.first_available]


class DynamicResources:
    name = "DynamicResources"

    def __init__(self, cluster: ClusterCache) -> None:
        self.cluster = cluster

    def pre_enqueue(self, pod: Pod) -> str | None:
        """Upstream's PreEnqueue: a pod whose claims are not all there (missing, not yet
        made from their template, being deleted, made for another pod) is not attempted;
        a claim added or changed lets it be checked again."""
        if not pod.resource_claims:
            return None
        return claim_problem(self.cluster, pod)[1]

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[Collection[str] | None, Status]:
        # Written for every pod, as upstream does, so the PostFilter can tell a pod
        # whose claims were found from a cycle that ended before this PreFilter.
        state.write(_STATE, _NONE_FOUND)
        if not pod.resource_claims:
            return None, SKIP
        claims, problem = claim_problem(self.cluster, pod)
        if problem is not None:
            return None, unresolvable(problem)
        if not claims:
            return None, SKIP
        needs_work = False
        for claim in claims:
            if not claim.allocated:
                missing = missing_class(self.cluster, claim)
                if missing is not None:
                    return None, unresolvable(missing)
                needs_work = True
            elif not reserved_for(claim, pod):
                needs_work = True
        state.write(_STATE, ClaimsOfPod(claims))
        return None, (_REJECTED if needs_work else SUCCESS)

    def post_filter(self, state: CycleState, pod: Pod) -> Status:
        found: ClaimsOfPod | None = state.read(_STATE)
        if found is None:
            return Status(Code.ERROR, (ERROR_NOT_FOUND,), self.name)
        reason = REASON_STILL_NOT_SCHEDULABLE if found.claims else REASON_NO_CLAIMS
        return Status(Code.UNSCHEDULABLE, (reason,), self.name)

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """A claim made, allocated or reserved, and a DeviceClass made or changed, may
        answer what PreFilter refused (the pod's own changes — a templated claim named in
        its status — reach the queue anyway)."""
        return (on(RESOURCE_CLAIM, ADD | UPDATE), on(DEVICE_CLASS, ADD | UPDATE))

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        found: ClaimsOfPod | None = state.read(_STATE)
        if found is None:
            # Asked without its PreFilter: nothing is known of the pod's claims.
            return _REJECTED if pod.resource_claims else None
        if not found.claims:
            return None
        labels = node.node.meta.labels
        for claim in found.claims:
            selector = claim.allocation_nodes
            if selector is not None and not selector.matches(labels, node.name):
                return _NOT_AVAILABLE
        return None
