"""FindPodVolumes, AssumePodVolumes and their revert: the volume binder's pure half.

The binding half that talks to the API server (write claimRefs and selected-node
annotations, wait for the PV controller, bind the pod) lives in the daemon; it works
from the ``PodVolumes`` this module chose and assumed.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.storage import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    ClaimRef,
    CSIStorageCapacity,
    PersistentVolume,
    PersistentVolumeClaim,
)
from volsched.scheduling.volumes.claims import PodVolumeClaims
from volsched.scheduling.volumes.matching import ClaimMatcher, claim_request
from volsched.scheduling.volumes.provisioning import ProvisionerCheck, check_provisions

REASON_NODE_CONFLICT = "node(s) didn't match PersistentVolume's node affinity"
REASON_BIND_CONFLICT = "node(s) didn't find available persistent volumes to bind"
REASON_NOT_ENOUGH_SPACE = "node(s) did not have enough free storage"
REASON_PV_NOT_EXIST = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"


@dataclass(frozen=True, slots=True)
class StaticBinding:
    """A PV chosen for a claim. After reserve, ``pv`` is the PV as prebound; ``dirty``
    says whether the API server must be told, ``preexisting`` that the PV was already
    bound to the claim (by its author) before the scheduler chose it."""

    pv: PersistentVolume
    claim: PersistentVolumeClaim
    dirty: bool = True
    preexisting: bool = False


@dataclass(slots=True)
class PodVolumes:
    """What a node needs done for the pod's unbound claims."""

    static_bindings: list[StaticBinding] = field(default_factory=list)
    dynamic_provisions: list[PersistentVolumeClaim] = field(default_factory=list)
    plans: dict[str, object] = field(default_factory=dict)
    # Claim key → the node's published capacity for its class (CSIStorageCapacity).
    node_capacities: dict[str, int] = field(default_factory=dict)

    def static_by_class(self) -> dict[str, tuple[int, int]]:
        """The chosen PVs per StorageClass: (claims' requests, PVs' capacity), summed."""
        by_class: dict[str, tuple[int, int]] = {}
        for binding in self.static_bindings:
            requested, capacity = by_class.get(binding.pv.storage_class, (0, 0))
            by_class[binding.pv.storage_class] = (
                requested + claim_request(binding.claim),
                capacity + binding.pv.capacity,
            )
        return by_class


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
    # The PV of each bound claim, in the claims' order (None: the PV does not exist),
    # read once: a pod whose claims are bound to local PVs is checked on every node.
    bound_pvs: tuple[PersistentVolume | None, ...] = ()


def bound_problem(cycle: BinderCycle, node: NodeInfo) -> str | None:
    """Why the node cannot have the pod's bound claims (None when it can): the first
    PV, in the claims' order, that is missing or whose node affinity the node fails."""
    for pv in cycle.bound_pvs:
        if pv is None:
            return REASON_PV_NOT_EXIST
        affinity = pv.node_affinity
        if affinity is not None and not affinity.matches(node.node.meta.labels, node.name):
            return REASON_NODE_CONFLICT
    return None


def find_pod_volumes(
    cluster: ClusterCache,
    cycle: BinderCycle,
    node: NodeInfo,
    checks: Mapping[str, ProvisionerCheck],
) -> FindResult:
    """Upstream's FindPodVolumes for one node; reasons in upstream's order."""
    problem = bound_problem(cycle, node)
    bound_ok = problem != REASON_NODE_CONFLICT
    bound_found = problem != REASON_PV_NOT_EXIST
    unbound_ok = True
    enough_space = True
    volumes = PodVolumes()
    details: list[str] = []
    # As upstream, the unbound claims are checked even when a bound one failed, so the
    # node's reasons list every problem.
    if cycle.claims.unbound_delayed:
        unbound_ok, enough_space, details = _find_unbound(cluster, cycle, node, checks, volumes)
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


def _find_unbound(
    cluster: ClusterCache,
    cycle: BinderCycle,
    node: NodeInfo,
    checks: Mapping[str, ProvisionerCheck],
    volumes: PodVolumes,
) -> tuple[bool, bool, list[str]]:
    """(unbound claims satisfied, enough storage, replica reasons) for one node; fills
    ``volumes`` with the static bindings and provisions that would serve the claims."""
    to_provision: list[PersistentVolumeClaim] = []
    matchers: list[ClaimMatcher] = []
    for matcher in cycle.matchers:
        selected = matcher.selected_node
        if selected is None:
            matchers.append(matcher)
        elif selected != node.name:
            return False, True, []  # already being provisioned for another node
        else:
            to_provision.append(matcher.claim)
    satisfied = True
    chosen: set[str] = set()
    for matcher in matchers:
        pv = matcher.find(cluster, node, chosen)
        if pv is None:
            satisfied = False
            to_provision.append(matcher.claim)
            continue
        chosen.add(pv.meta.name)
        volumes.static_bindings.append(StaticBinding(pv, matcher.claim))
    if not to_provision:
        return satisfied, True, []
    # As upstream, provisioning decides for every claim left: matching's verdict is
    # replaced by whether they can all be provisioned here.
    outcome = check_provisions(cluster, to_provision, node, cycle.capacities, checks)
    volumes.dynamic_provisions = outcome.provisions
    volumes.node_capacities = outcome.node_capacities
    volumes.plans = outcome.plans
    return outcome.satisfied, outcome.sufficient_storage, outcome.details


def bind_volume_to_claim(
    pv: PersistentVolume, claim: PersistentVolumeClaim
) -> tuple[PersistentVolume, bool]:
    """The PV as the scheduler prebinds it, and whether that changed anything.

    Upstream's GetBindVolumeToClaim: the claimRef is set (with the claim's uid), and
    ``pv.kubernetes.io/bound-by-controller`` is added only when the PV was not already
    bound to the claim — a PV its author reserved for the claim stays the author's.
    """
    updated = pv
    dirty = False
    ref = pv.claim_ref
    if (
        ref is None
        or ref.name != claim.name
        or ref.namespace != claim.namespace
        or ref.uid != claim.meta.uid
    ):
        updated = dataclasses.replace(
            updated, claim_ref=ClaimRef(claim.namespace, claim.name, claim.meta.uid)
        )
        dirty = True
    if not pv.is_bound_to(claim) and ANN_BOUND_BY_CONTROLLER not in pv.meta.annotations:
        annotations = dict(pv.meta.annotations)
        annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
        updated = dataclasses.replace(
            updated, meta=dataclasses.replace(updated.meta, annotations=annotations)
        )
        dirty = True
    return updated, dirty


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
            updated, dirty = bind_volume_to_claim(binding.pv, binding.claim)
            preexisting = binding.pv.is_bound_to(binding.claim)
            if dirty:
                cluster.pvs.assume(binding.pv.meta.name, updated)
            assumed.bindings.append(StaticBinding(updated, binding.claim, dirty, preexisting))
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
