"""FindPodVolumes, AssumePodVolumes and their revert: the volume binder's pure half.

The binding half that talks to the API server (write claimRefs and selected-node
annotations, wait for the PV controller, bind the pod) lives in the daemon; it works
from the ``PodVolumes`` this module chose and assumed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from cache.cluster import ClusterCache
from cache.node_info import NodeInfo
from cache.objects.storage import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    ClaimRef,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
)
from scheduling.volumes.claims import PodVolumeClaims
from scheduling.volumes.matching import ClaimMatcher
from scheduling.volumes.provisioning import ProvisionerCheck, check_provisions

REASON_NODE_CONFLICT = "node(s) had volume node affinity conflict"
REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"


@dataclass(frozen=True, slots=True)
class StaticBinding:
    pv: PersistentVolume
    claim: PersistentVolumeClaim


@dataclass(slots=True)
class PodVolumes:
    """What a node needs done for the pod's unbound claims."""

    static_bindings: list[StaticBinding] = field(default_factory=list)
    dynamic_provisions: list[PersistentVolumeClaim] = field(default_factory=list)
    plans: dict[str, object] = field(default_factory=dict)


@dataclass(slots=True)
class FindResult:
    volumes: PodVolumes | None
    reasons: list[str]
    details: list[str] = field(default_factory=list)


@dataclass(slots=True)
class BinderCycle:
    """Per-pod data computed once in PreFilter and read for every node."""

    claims: PodVolumeClaims
    matchers: list[ClaimMatcher]
    capacities: dict[str, list[CSIStorageCapacity]]


def find_pod_volumes(
    cluster: ClusterCache,
    cycle: BinderCycle,
    node: NodeInfo,
    checks: Mapping[str, ProvisionerCheck],
) -> FindResult:
    """Upstream's FindPodVolumes for one node; reasons in upstream's order."""
    bound_ok = True
    bound_found = True
    unbound_ok = True
    enough_space = True
    volumes = PodVolumes()
    details: list[str] = []
    for claim in cycle.claims.bound:
        pv = cluster.pvs.get(claim.volume_name)
        if pv is None:
            bound_found = False
            break
        affinity = pv.node_affinity
        if affinity is not None and not affinity.matches(node.node.meta.labels, node.name):
            bound_ok = False
            break
    if bound_ok and bound_found and cycle.claims.unbound_delayed:
        to_provision: list[PersistentVolumeClaim] = []
        matchers: list[ClaimMatcher] = []
        for matcher in cycle.matchers:
            selected = matcher.selected_node
            if selected is not None:
                if selected != node.name:
                    return FindResult(None, [REASON_BIND_CONFLICT])
                to_provision.append(matcher.claim)
            else:
                matchers.append(matcher)
        chosen: set[str] = set()
        for matcher in matchers:
            pv = matcher.find(cluster, node, chosen)
            if pv is None:
                unbound_ok = False
                to_provision.append(matcher.claim)
                continue
            chosen.add(pv.meta.name)
            volumes.static_bindings.append(StaticBinding(pv, matcher.claim))
        if to_provision:
            outcome = check_provisions(cluster, to_provision, node, cycle.capacities, checks)
            unbound_ok = outcome.satisfied
            enough_space = outcome.sufficient_storage
            details = outcome.details
            volumes.dynamic_provisions = outcome.provisions
            volumes.plans = outcome.plans
    reasons = []
    if not bound_ok:
        reasons.append(REASON_NODE_CONFLICT)
    if not unbound_ok:
        reasons.append(REASON_BIND_CONFLICT)
    if not enough_space:
        reasons.append(REASON_NOT_ENOUGH_SPACE)
    if not bound_found:
        reasons.append(REASON_PV_NOT_EXIST)
    if reasons:
        return FindResult(None, reasons, details)
    return FindResult(volumes, [])


def bind_volume_to_claim(pv: PersistentVolume, claim: PersistentVolumeClaim) -> PersistentVolume:
    """The PV as the scheduler prebinds it: claimRef set, marked bound by controller."""
    annotations = dict(pv.meta.annotations)
    annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
    meta = dataclasses.replace(pv.meta, annotations=annotations)
    ref = ClaimRef(claim.namespace, claim.name, claim.meta.uid)
    return dataclasses.replace(pv, meta=meta, claim_ref=ref)


def with_selected_node(claim: PersistentVolumeClaim, node_name: str) -> PersistentVolumeClaim:
    annotations = dict(claim.meta.annotations)
    annotations[ANN_SELECTED_NODE] = node_name
    return dataclasses.replace(claim, meta=dataclasses.replace(claim.meta, annotations=annotations))


@dataclass(slots=True)
class AssumedVolumes:
    """What AssumePodVolumes changed, so it can be reverted or bound."""

    node: str
    bindings: list[StaticBinding] = field(default_factory=list)
    provisions: list[PersistentVolumeClaim] = field(default_factory=list)
    plans: dict[str, object] = field(default_factory=dict)


def assume_pod_volumes(
    cluster: ClusterCache, volumes: PodVolumes, node_name: str
) -> AssumedVolumes:
    """Record the node's choice in the assume layer; on failure nothing stays assumed."""
    assumed = AssumedVolumes(node_name, plans=dict(volumes.plans))
    try:
        for binding in volumes.static_bindings:
            updated = bind_volume_to_claim(binding.pv, binding.claim)
            current = cluster.pvs.get(binding.pv.meta.name)
            if (
                current is None
                or current.claim_ref != updated.claim_ref
                or (current.meta.annotations.get(ANN_BOUND_BY_CONTROLLER) != "yes")
            ):
                cluster.pvs.assume(binding.pv.meta.name, updated)
            assumed.bindings.append(StaticBinding(updated, binding.claim))
        for claim in volumes.dynamic_provisions:
            updated_claim = with_selected_node(claim, node_name)
            cluster.pvcs.assume(claim.key, updated_claim)
            assumed.provisions.append(updated_claim)
    except Exception:
        revert_assumed_volumes(cluster, assumed)
        raise
    return assumed


def revert_assumed_volumes(cluster: ClusterCache, assumed: AssumedVolumes) -> None:
    for binding in assumed.bindings:
        cluster.pvs.restore(binding.pv.meta.name)
    for claim in assumed.provisions:
        cluster.pvcs.restore(claim.key)
