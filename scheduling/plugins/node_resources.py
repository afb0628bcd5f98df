"""PodFitsResources, LeastRequestedPriority and BalancedResourceAllocation.

Upstream's NodeResourcesFit filter and its resource-allocation scorers. The pod's requests
are already folded into ``pod.requests`` (init containers, sidecars, overhead) and its
non-zero cpu/memory into ``pod.nonzero_cpu``/``pod.nonzero_memory`` when the pod is
parsed; a node's totals are kept by ``NodeInfo``. What is left here is the per-node
arithmetic, in upstream's units (millicores for cpu, whole units for everything else).
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection
from functools import lru_cache
from typing import cast

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import UNKNOWN, NodeInfo
from volsched.cache.objects.core import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, Node, Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.events import (
    ADD,
    DELETE,
    NODE,
    POD,
    UPDATE_NODE_ALLOCATABLE,
    UPDATE_POD_SCALE_DOWN,
    ClusterEventWithHint,
    on,
)
from volsched.scheduling.framework.interfaces import MAX_NODE_SCORE
from volsched.scheduling.framework.status import SKIP, SUCCESS, Status, unresolvable, unschedulable

REASON_TOO_MANY_PODS = "Too many pods"

_QUALIFIED_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


@lru_cache(maxsize=256)
def is_extended_resource(name: str) -> bool:
    """Upstream's IsExtendedResourceName: a ``domain/name`` outside ``kubernetes.io/``
    that stays a valid quota name once ``requests.`` is prefixed."""
    if "/" not in name or "kubernetes.io/" in name or name.startswith("requests."):
        return False
    prefix, _, short = f"requests.{name}".partition("/")
    return (
        len(prefix) <= 253
        and _DNS_SUBDOMAIN.match(prefix) is not None
        and len(short) <= 63
        and _QUALIFIED_NAME.match(short) is not None
    )


def is_scalar_resource(name: str) -> bool:
    """Upstream's IsScalarResourceName: the names NodeResourcesFit checks beyond the
    built-in four (extended resources, hugepages, attachable volumes, ``kubernetes.io/``).

    An unprefixed name other than those (``storage``, say) is a native resource the
    scheduler does not account for, so it is never checked.
    """
    if name.startswith(("hugepages-", "attachable-volumes-")) or "kubernetes.io/" in name:
        return True
    return is_extended_resource(name)


class NodeResourcesFit:
    """PodFitsResources: the node must hold one more pod and the pod's requests.

    Reasons, in upstream's order and all at once: ``Too many pods``, then ``Insufficient
    cpu``, ``memory``, ``ephemeral-storage``, then one per extended/scalar resource (in
    name order; upstream walks a Go map, so its order there is unspecified). The status is
    Unschedulable, or UnschedulableAndUnresolvable when some request exceeds the node's
    whole allocatable (current upstream: preemption could never make room).
    ``ignored_resources`` and ``ignored_resource_groups`` are upstream's arguments of the
    same name: extended resources (or resource-name prefixes before ``/``) not checked.
    """

    name = "NodeResourcesFit"

    def __init__(
        self,
        cluster: ClusterCache,
        ignored_resources: Collection[str] = (),
        ignored_resource_groups: Collection[str] = (),
    ) -> None:
        self.cluster = cluster
        self.ignored_resources = frozenset(ignored_resources)
        self.ignored_resource_groups = frozenset(ignored_resource_groups)
        self._key = f"PreFilter{self.name}"

    def _ignored(self, resource: str) -> bool:
        if resource in self.ignored_resources:
            return True
        return bool(self.ignored_resource_groups) and (
            resource.split("/", 1)[0] in self.ignored_resource_groups
        )

    def _wanted(self, pod: Pod) -> tuple[tuple[str, int, str], ...]:
        """(resource, amount, reason) for every resource the filter must check."""
        requests = pod.requests
        wanted = [
            (resource, requests[resource], f"Insufficient {resource}")
            for resource in (CPU, MEMORY, EPHEMERAL_STORAGE)
            if requests.get(resource, 0) > 0
        ]
        for resource in sorted(requests):
            amount = requests[resource]
            if amount <= 0 or resource in (CPU, MEMORY, EPHEMERAL_STORAGE):
                continue
            if not is_scalar_resource(resource):
                continue
            if is_extended_resource(resource) and self._ignored(resource):
                continue
            wanted.append((resource, amount, f"Insufficient {resource}"))
        return tuple(wanted)

    def _prepared(self, pod: Pod) -> tuple[tuple[tuple[str, int, str], ...], str]:
        """What the pod wants, and the key its verdict is remembered under on a node: a
        string, whose hash Python computes once (this runs for every node)."""
        wanted = self._wanted(pod)
        return wanted, f"{self.name}.filter {wanted!r}"

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[Collection[str] | None, Status]:
        state.write(self._key, self._prepared(pod))
        return None, SUCCESS

    def filter_key(self, state: CycleState, pod: Pod) -> str:
        """NodeLocalFilter: the node's pods, requests and allocatable, and the pod's."""
        prepared: tuple[tuple[tuple[str, int, str], ...], str] | None = state.read(self._key)
        return (prepared if prepared is not None else self._prepared(pod))[1]

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        prepared: tuple[tuple[tuple[str, int, str], ...], str] | None = state.read(self._key)
        if prepared is None:
            prepared = self._prepared(pod)
            state.write(self._key, prepared)
        wanted, memo_key = prepared
        # The verdict depends only on the node's state and the pod's requests: pods of
        # one shape (a ReplicaSet's) reuse it on every node that did not change since.
        known = node.memo.get(memo_key, UNKNOWN)
        if known is not UNKNOWN:
            return cast("Status | None", known)
        return cast("Status | None", node.remember(memo_key, self._fit(wanted, node)))

    def _fit(self, wanted: tuple[tuple[str, int, str], ...], node: NodeInfo) -> Status | None:
        allocatable = node.node.allocatable
        # Built only on a rejection: most nodes fit, and this runs for each of them.
        reasons: list[str] | None = None
        beyond_node = False
        if len(node.pods) + 1 > allocatable.get(PODS, 0):
            reasons = [REASON_TOO_MANY_PODS]
        requested = node.requested
        for resource, amount, reason in wanted:
            capacity = allocatable.get(resource, 0)
            if amount > capacity - requested.get(resource, 0):
                if reasons is None:
                    reasons = [reason]
                else:
                    reasons.append(reason)
                beyond_node = beyond_node or amount > capacity
        if reasons is None:
            return None
        # A request larger than the whole node cannot be met by evicting anything.
        return unresolvable(*reasons) if beyond_node else unschedulable(*reasons)

    # -- requeue ---------------------------------------------------------------------

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """Upstream's: an assigned pod deleted or scaled down frees resources; a node
        added, or given more allocatable, may hold the pod."""
        return (
            on(POD, DELETE | UPDATE_POD_SCALE_DOWN, self.after_pod_change),
            on(NODE, ADD | UPDATE_NODE_ALLOCATABLE, self.after_node_change),
        )

    def after_pod_change(self, pod: Pod, old: Pod | None, new: Pod | None) -> bool:
        if new is None:
            # Deleted: only a placed (or nominated) pod held anything.
            return old is not None and bool(old.node_name or old.nominated_node_name)
        if old is None or not new.node_name:
            return False
        return any(
            new.requests.get(resource, 0) < old.requests.get(resource, 0)
            for resource, _, _ in self._wanted(pod)
        )

    def after_node_change(self, pod: Pod, old: Node | None, new: Node | None) -> bool:
        if new is None:
            return False
        wanted = self._wanted(pod)
        if self._fit(wanted, NodeInfo(new)) is not None:
            return False  # too small for the pod even when empty
        if old is None:
            return True
        grew = new.allocatable.get(PODS, 0) > old.allocatable.get(PODS, 0)
        return grew or any(
            new.allocatable.get(resource, 0) > old.allocatable.get(resource, 0)
            for resource, _, _ in wanted
        )


def least_requested_score(requested: int, capacity: int) -> int:
    """Free share of the capacity on 0..100 (0 once the node is over-committed)."""
    if capacity == 0 or requested > capacity:
        return 0
    return (capacity - requested) * MAX_NODE_SCORE // capacity


class LeastAllocated:
    """LeastRequestedPriority: prefer the node with the most cpu and memory left.

    Upstream's NodeResourcesLeastAllocated (today the LeastAllocated scoring strategy of
    NodeResourcesFit) with its default resources, cpu and memory of weight 1. It counts
    the *non-zero* requests (100m cpu and 200Mi memory for a container that asks for
    none) so that best-effort pods still spread; a resource the node has none of is left
    out of the average.
    """

    name = "NodeResourcesLeastAllocated"

    def __init__(self, cluster: ClusterCache) -> None:
        self.cluster = cluster
        self._key = f"PreScore{self.name}"

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        state.write(self._key, pod.fit_score_nonzero)
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        wanted: tuple[int, int] | None = state.read(self._key)
        pod_cpu, pod_memory = wanted or pod.fit_score_nonzero
        allocatable = node.node.allocatable
        total = 0
        weight = 0
        cpu = allocatable.get(CPU, 0)
        if cpu:
            total += least_requested_score(node.nonzero_cpu + pod_cpu, cpu)
            weight += 1
        memory = allocatable.get(MEMORY, 0)
        if memory:
            total += least_requested_score(node.nonzero_memory + pod_memory, memory)
            weight += 1
        return total // weight if weight else 0


BALANCED_RESOURCES = (CPU, MEMORY)


class BalancedAllocation:
    """BalancedResourceAllocation: prefer the node whose resource use stays even.

    Upstream's NodeResourcesBalancedAllocation over its ``resources`` (default cpu and
    memory): the fractions requested/allocatable (actual requests, capped at 1; a resource
    the node has none of, or a scalar resource the pod does not ask for, left out) give a
    standard deviation — ``|f1 - f2| / 2`` for two — and a balance ``int((1 - std) *
    100)``; as of 1.36 the score is the change in balance the pod brings,
    ``50 + (50 + balance_with_pod - balance_without_pod) / 2``. A pod that requests none of the resources is skipped at
    pre-score, as upstream does since 1.32, so it does not pile onto one node.
    """

    name = "NodeResourcesBalancedAllocation"

    def __init__(
        self, cluster: ClusterCache, resources: tuple[str, ...] = BALANCED_RESOURCES
    ) -> None:
        self.cluster = cluster
        self.resources = resources
        self._key = f"PreScore{self.name}"
        self._tag = f"{self.name} {' '.join(resources)}"

    def _wanted(self, pod: Pod) -> tuple[tuple[int, ...], str]:
        amounts = tuple(pod.requests.get(resource, 0) for resource in self.resources)
        return amounts, f"{self._tag} {amounts!r}"

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        wanted = self._wanted(pod)
        if not any(wanted[0]):
            return SKIP
        state.write(self._key, wanted)
        return SUCCESS

    def score_key(self, state: CycleState, pod: Pod) -> str:
        """NodeLocalScore: the node's requests and allocatable, and the pod's."""
        wanted: tuple[tuple[int, ...], str] | None = state.read(self._key)
        return (wanted if wanted is not None else self._wanted(pod))[1]

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        return self.score_nodes(state, pod, [node])[0]

    def score_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[int]:
        """Every node's score at once; a node that did not change since a pod of the
        same requests was scored reuses that score."""
        wanted: tuple[tuple[int, ...], str] | None = state.read(self._key)
        amounts, memo_key = wanted if wanted is not None else self._wanted(pod)
        if not any(amounts):
            return [0] * len(nodes)
        balanced = self._balanced
        scores = []
        for node in nodes:
            score = node.memo.get(memo_key)
            if score is None:
                score = node.remember(memo_key, balanced(node, amounts))
            scores.append(score)
        return scores

    def _balanced(self, node: NodeInfo, amounts: tuple[int, ...]) -> int:
        allocatable = node.node.allocatable
        requested = node.requested
        before: list[int] = []
        after: list[int] = []
        capacities: list[int] = []
        for resource, amount in zip(self.resources, amounts, strict=True):
            if amount == 0 and is_scalar_resource(resource):
                continue
            capacity = allocatable.get(resource, 0)
            if capacity == 0:
                continue
            held = requested.get(resource, 0)
            before.append(held)
            after.append(held + amount)
            capacities.append(capacity)
        return balance_change_score(
            balance_score(after, capacities), balance_score(before, capacities)
        )


def balance_score(requested: list[int], capacities: list[int]) -> int:
    """How even the node's use of the resources is, 0..100: ``int((1 - std) * 100)`` over
    the fractions requested/allocatable, each capped at 1."""
    # Integer true division: exact for any size, where float() of a large int would
    # overflow.
    fractions = [
        min(held / capacity, 1.0) for held, capacity in zip(requested, capacities, strict=True)
    ]
    if len(fractions) == 2:
        std = abs((fractions[0] - fractions[1]) / 2)
    elif len(fractions) > 2:
        mean = sum(fractions) / len(fractions)
        std = math.sqrt(sum((f - mean) ** 2 for f in fractions) / len(fractions))
    else:
        std = 0.0
    return int((1 - std) * MAX_NODE_SCORE)


def balance_change_score(with_pod: int, without_pod: int) -> int:
    """kube-scheduler 1.36 scores the change the pod brings to the node's balance, mapped
    back onto 50..100 so that an unchanged balance scores 75 (kubernetes PR #135573)."""
    half = MAX_NODE_SCORE // 2
    # int() of the quotient truncates toward zero, as Go's integer division does.
    return half + int((half + with_pod - without_pod) / 2)
