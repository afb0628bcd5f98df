"""VolumeBinding: CheckVolumeBinding (filter), its capacity score and the reserve step
that assumes the chosen PVs and provisioned claims — one plugin, because the score and
the reserve read what the filter found for each node.

The score is kube-scheduler 1.36's, which exists only behind the alpha
``StorageCapacityScoring`` gate: a profile without the gate has no VolumeBinding score at
all (the profile leaves it out). volsched's own tightest-fit preference is another
plugin, PrioritizeVolumes, which reads this plugin's per-node findings.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.cache.objects.storage import PersistentVolumeClaim, StorageClass
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.events import (
    ADD,
    ALL,
    CSI_DRIVER,
    CSI_NODE,
    CSI_STORAGE_CAPACITY,
    NODE,
    PERSISTENT_VOLUME,
    PERSISTENT_VOLUME_CLAIM,
    REPLICA,
    STORAGE_CLASS,
    STORAGE_NODE,
    UPDATE,
    UPDATE_NODE_LABEL,
    VOLUME,
    ClusterEventWithHint,
    on,
)
from volsched.scheduling.framework.status import (
    SKIP,
    SUCCESS,
    Code,
    Status,
    error,
    unresolvable,
)
from volsched.scheduling.volumes.binder import (
    AssumedVolumes,
    BinderCycle,
    PodVolumes,
    assume_pod_volumes,
    bound_problem,
    find_pod_volumes,
    revert_assumed_volumes,
)
from volsched.scheduling.volumes.claims import (
    ClaimProblem,
    check_pod_claims,
    classify_pod_claims,
    uses_claim,
)
from volsched.scheduling.volumes.matching import ClaimMatcher, claim_request
from volsched.scheduling.volumes.provisioning import (
    ProvisionerCheck,
    ProvisionError,
    capacities_by_class,
)
from volsched.scheduling.volumes.scoring import (
    CAPACITY_SHAPE,
    ShapePoint,
    scale_shape,
    volume_score,
)

NAME = "VolumeBinding"
REASON_UNBOUND_IMMEDIATE = "pod has unbound immediate PersistentVolumeClaims"


@dataclass(slots=True)
class VolumeBindingState:
    cycle: BinderCycle
    by_node: dict[str, PodVolumes] = field(default_factory=dict)
    details: dict[str, list[str]] = field(default_factory=dict)
    assumed: AssumedVolumes | None = None
    # One Status per reason a bound claim gives, shared by every node it rejects.
    bound_rejections: dict[str, Status] = field(default_factory=dict)

    def bound_rejection(self, reason: str) -> Status:
        status = self.bound_rejections.get(reason)
        if status is None:
            status = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (reason,))
            self.bound_rejections[reason] = status
        return status


class VolumeBinding:
    name = NAME

    def __init__(
        self,
        cluster: ClusterCache,
        shape: Sequence[ShapePoint] = CAPACITY_SHAPE,
        provisioner_checks: Mapping[str, ProvisionerCheck] | None = None,
    ) -> None:
        self.cluster = cluster
        self.shape = scale_shape(shape)
        self.provisioner_checks: dict[str, ProvisionerCheck] = dict(provisioner_checks or {})

    # -- requeue ---------------------------------------------------------------------

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """Upstream's: classes, claims, volumes, CSI nodes, drivers and capacities added
        or changed, and nodes added or relabelled (volume node affinity, allowed
        topologies). And volsched's: the storage nodes, volumes and replicas that decide
        where a replicated volume can be provisioned."""
        return (
            on(STORAGE_CLASS, ADD | UPDATE, self.after_storage_class_change),
            on(PERSISTENT_VOLUME_CLAIM, ADD | UPDATE, self.after_claim_change),
            on(PERSISTENT_VOLUME, ADD | UPDATE),
            on(NODE, ADD | UPDATE_NODE_LABEL),
            on(CSI_NODE, ADD | UPDATE),
            on(CSI_DRIVER, UPDATE),
            on(CSI_STORAGE_CAPACITY, ADD | UPDATE),
            on(STORAGE_NODE, ALL),
            on(VOLUME, ALL),
            on(REPLICA, ALL),
        )

    def after_storage_class_change(
        self, pod: Pod, old: StorageClass | None, new: StorageClass | None
    ) -> bool:
        """A class added, or its allowed topologies changed (the binding mode is
        immutable)."""
        return old is None or new is None or old.allowed_topologies != new.allowed_topologies

    def after_claim_change(
        self, pod: Pod, old: PersistentVolumeClaim | None, new: PersistentVolumeClaim | None
    ) -> bool:
        return uses_claim(pod, new)

    # -- PreFilter -------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[Collection[str] | None, Status]:
        try:
            if not check_pod_claims(self.cluster, pod):
                return None, SKIP
            claims = classify_pod_claims(self.cluster, pod)
        except ClaimProblem as problem:
            return None, unresolvable(str(problem))
        if claims.unbound_immediate:
            return None, unresolvable(REASON_UNBOUND_IMMEDIATE)
        delayed = sorted(claims.unbound_delayed, key=claim_request)
        matchers = [ClaimMatcher.build(self.cluster, claim) for claim in delayed]
        classes = {claim.class_name for claim in delayed}
        bound_pvs = tuple(self.cluster.pvs.get(claim.volume_name) for claim in claims.bound)
        cycle = BinderCycle(claims, matchers, capacities_by_class(self.cluster, classes), bound_pvs)
        state.write(NAME, VolumeBindingState(cycle))
        # 1.36 narrows no nodes here: a bound PV's node affinity is checked node by node
        # in Filter, whose reason names it.
        return None, SUCCESS

    def screen(self, state: CycleState, pod: Pod) -> set[str] | None:
        """For a pod with only bound claims, the nodes all their PVs reach (the PV
        index keeps each PV's nodes as nodes and PVs change): upstream checks every
        other node too (1.36 narrows nothing in PreFilter) and rejects each — a
        StatefulSet's pod on local PVs is rejected by all nodes but one. None when the
        pod has unbound claims or no bound PV with node affinity."""
        data: VolumeBindingState | None = state.read(NAME)
        if data is None or data.cycle.claims.unbound_delayed:
            return None
        allowed: set[str] | None = None
        for pv in data.cycle.bound_pvs:
            if pv is None:
                return set()  # a claim bound to a missing PV: no node will do
            if pv.node_affinity is None:
                continue
            reached = self.cluster.pv_index.nodes_of(pv.meta.name)
            if reached is None:
                return None  # not indexed: no screen rather than a wrong one
            allowed = set(reached) if allowed is None else allowed & reached
        return allowed

    # -- Filter ----------------------------------------------------------------------

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        data: VolumeBindingState | None = state.read(NAME)
        if data is None:
            return None
        if not data.cycle.claims.unbound_delayed:
            # Only bound claims (a pod whose local PVs are already its own): their PVs'
            # node affinity is the whole check, and most nodes fail it.
            problem = bound_problem(data.cycle, node)
            if problem is not None:
                return data.bound_rejection(problem)
            data.by_node[node.name] = PodVolumes()
            return None
        try:
            result = find_pod_volumes(self.cluster, data.cycle, node, self.provisioner_checks)
        except ProvisionError as problem:
            return error(str(problem))
        if result.reasons:
            if result.details:
                data.details[node.name] = result.details
            return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, tuple(result.reasons))
        assert result.volumes is not None
        data.by_node[node.name] = result.volumes
        return None

    # -- Score -----------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        """Runs only in a profile with the StorageCapacityScoring gate, where upstream
        scores every pod (0 on a node without volumes chosen for it)."""
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        """Upstream's capacity score: the chosen PVs by class when there are any, else the
        claims to provision against the capacity the node publishes for their class."""
        data: VolumeBindingState | None = state.read(NAME)
        volumes = data.by_node.get(node.name) if data is not None else None
        if volumes is None:
            return 0
        if volumes.static_bindings:
            return volume_score(self.shape, volumes.static_by_class())
        by_class: dict[str, tuple[int, int]] = {}
        for claim in volumes.dynamic_provisions:
            published = volumes.node_capacities.get(claim.key)
            if published is None:
                continue
            requested, _ = by_class.get(claim.class_name, (0, 0))
            # The class's capacity on the node is counted once, however many claims of
            # the class the pod has.
            by_class[claim.class_name] = (requested + claim_request(claim), published)
        return volume_score(self.shape, by_class)

    # -- Reserve ---------------------------------------------------------------------

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        data: VolumeBindingState | None = state.read(NAME)
        if data is None:
            return SUCCESS
        volumes = data.by_node.get(node_name)
        if volumes is None:
            return SUCCESS
        try:
            data.assumed = assume_pod_volumes(self.cluster, volumes, node_name)
        except Exception as problem:  # an AssumeError: the cache moved under us
            return error(str(problem))
        for check, plan in self._plans(data.assumed):
            check.commit(plan)
        # The other nodes' candidate volumes are not needed any more, and a binding that
        # waits minutes for slow storage would hold them all that time.
        data.by_node = {node_name: volumes}
        return SUCCESS

    def unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        data: VolumeBindingState | None = state.read(NAME)
        if data is None or data.assumed is None:
            return
        for check, plan in self._plans(data.assumed):
            check.release(plan)
        revert_assumed_volumes(self.cluster, data.assumed)
        data.assumed = None

    def post_bind(self, state: CycleState, pod: Pod, node_name: str) -> None:
        """The pod is bound and its claims with it: the provisioners forget the plans
        they kept for an undo (the space the replicas took stays promised until the
        storage system counts it)."""
        data: VolumeBindingState | None = state.read(NAME)
        if data is None or data.assumed is None:
            return
        for check, plan in self._plans(data.assumed):
            check.done(plan)

    def _plans(self, assumed: AssumedVolumes) -> list[tuple[ProvisionerCheck, object]]:
        """Each provisioned claim's plan with the provisioner check that made it."""
        found = []
        for claim in assumed.provisions:
            plan = assumed.plans.get(claim.key)
            check = self._check_for(claim.class_name)
            if plan is not None and check is not None:
                found.append((check, plan))
        return found

    def _check_for(self, class_name: str) -> ProvisionerCheck | None:
        storage_class = self.cluster.storage_classes.get(class_name)
        if storage_class is None:
            return None
        return self.provisioner_checks.get(storage_class.provisioner)


def assumed_volumes(state: CycleState) -> AssumedVolumes | None:
    """What the reserve step assumed for this cycle's pod (for binding and reports)."""
    data: VolumeBindingState | None = state.read(NAME)
    return data.assumed if data is not None else None


def rejection_details(state: CycleState, node_name: str) -> list[str]:
    """Extra reasons behind a node's rejection (e.g. why replicas could not be placed)."""
    data: VolumeBindingState | None = state.read(NAME)
    if data is None:
        return []
    return list(data.details.get(node_name, []))
