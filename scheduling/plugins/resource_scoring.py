"""NodeResourcesFit's score: the scoring strategies of a KubeSchedulerConfiguration.

Upstream's ``scoringStrategy`` (NodeResourcesFitArgs): ``LeastAllocated`` (prefer free
nodes, the default), ``MostAllocated`` (pack nodes) or ``RequestedToCapacityRatio`` (a
broken-linear shape over utilization), each over a weighted list of resources (default cpu
and memory, weight 1). cpu and memory count *non-zero* requests (100m / 200Mi for a
container asking for none), as upstream, so best-effort pods still spread or pack; a
resource the node has none of is left out of the weighted average, and so is a scalar
resource (a GPU, hugepages) that the pod does not ask for.

The legacy policy's ``LeastRequestedPriority`` keeps its own plugin (``LeastAllocated``
in ``node_resources``): it is this score with the default strategy, under its old name.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import CPU, MEMORY, Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.interfaces import MAX_NODE_SCORE
from volsched.scheduling.framework.status import SUCCESS, Status
from volsched.scheduling.go_arithmetic import round_half_away
from volsched.scheduling.plugins.node_resources import is_scalar_resource, least_requested_score
from volsched.scheduling.volumes.scoring import (
    DEFAULT_SHAPE,
    ShapePoint,
    class_score,
    scale_shape,
)

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
STRATEGIES = (LEAST_ALLOCATED, MOST_ALLOCATED, REQUESTED_TO_CAPACITY_RATIO)
DEFAULT_RESOURCES = ((CPU, 1), (MEMORY, 1))


@dataclass(frozen=True, slots=True)
class ScoringStrategy:
    type: str = LEAST_ALLOCATED
    resources: tuple[tuple[str, int], ...] = DEFAULT_RESOURCES
    # RequestedToCapacityRatio only: utilization 0..100 → score 0..10.
    shape: tuple[ShapePoint, ...] = DEFAULT_SHAPE


def most_requested(requested: int, capacity: int) -> int:
    if capacity == 0:
        return 0
    # Pods without requests are counted with the non-zero defaults, which can push the
    # total past the capacity; such a node is simply full.
    return min(requested, capacity) * MAX_NODE_SCORE // capacity


class ResourceAllocationScore:
    """Score plugin ``NodeResourcesFit`` with a configured strategy."""

    name = "NodeResourcesFit"

    def __init__(self, cluster: ClusterCache, strategy: ScoringStrategy | None = None) -> None:
        self.cluster = cluster
        self.strategy = strategy or ScoringStrategy()
        self._key = f"PreScore{self.name}"
        self._shape = scale_shape(self.strategy.shape)
        # What a node remembers this plugin's scores under: the whole strategy (type,
        # resources, weights, shape), since profiles with other strategies score the
        # same nodes of the same cache.
        self._memo_tag = f"{self.name} {self.strategy!r}"

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        state.write(self._key, self._prepared(pod))
        return SUCCESS

    def _prepared(self, pod: Pod) -> tuple[tuple[int, ...], str]:
        """The pod's requests, and the key a node remembers its score under (a string:
        Python hashes it once)."""
        requests = self._pod_requests(pod)
        return requests, f"{self._memo_tag} {requests!r}"

    def _pod_requests(self, pod: Pod) -> tuple[int, ...]:
        wanted = []
        cpu, memory = pod.fit_score_nonzero
        for resource, _ in self.strategy.resources:
            if resource == CPU:
                wanted.append(cpu)
            elif resource == MEMORY:
                wanted.append(memory)
            else:
                wanted.append(pod.requests.get(resource, 0))
        return tuple(wanted)

    def _allocation(
        self, node: NodeInfo, pod_requests: Sequence[int]
    ) -> list[tuple[int, int, int]]:
        """(requested, allocatable, weight) of each resource that takes part."""
        allocatable = node.node.allocatable
        taking_part = []
        for (resource, weight), pod_request in zip(
            self.strategy.resources, pod_requests, strict=True
        ):
            if resource == CPU:
                requested = node.nonzero_cpu + pod_request
            elif resource == MEMORY:
                requested = node.nonzero_memory + pod_request
            elif pod_request == 0 and is_scalar_resource(resource):
                continue  # a GPU the pod does not want says nothing about this node
            else:
                requested = node.requested.get(resource, 0) + pod_request
            capacity = allocatable.get(resource, 0)
            if capacity:
                taking_part.append((requested, capacity, weight))
        return taking_part

    def score_key(self, state: CycleState, pod: Pod) -> str:
        """NodeLocalScore: the node's requests and allocatable, and the pod's."""
        prepared: tuple[tuple[int, ...], str] | None = state.read(self._key)
        return (prepared if prepared is not None else self._prepared(pod))[1]

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        return self.score_nodes(state, pod, [node])[0]

    def score_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[int]:
        """Every node's score at once; a node that did not change since a pod of the
        same requests was scored reuses that score."""
        prepared: tuple[tuple[int, ...], str] | None = state.read(self._key)
        if prepared is None:
            prepared = self._prepared(pod)
        pod_requests, memo_key = prepared
        compute = self._score
        scores = []
        for node in nodes:
            score = node.memo.get(memo_key)
            if score is None:
                score = node.remember(memo_key, compute(node, pod_requests))
            scores.append(score)
        return scores

    def _score(self, node: NodeInfo, pod_requests: Sequence[int]) -> int:
        allocation = self._allocation(node, pod_requests)
        kind = self.strategy.type
        if kind == REQUESTED_TO_CAPACITY_RATIO:
            # Upstream leaves a resource scoring 0 out of the average and rounds it.
            total = weights = 0
            for requested, capacity, weight in allocation:
                value = class_score(self._shape, requested, capacity)
                if value > 0:
                    total += value * weight
                    weights += weight
            return round_half_away(total, weights) if weights else 0
        per_resource = least_requested_score if kind == LEAST_ALLOCATED else most_requested
        total = weights = 0
        for requested, capacity, weight in allocation:
            total += per_resource(requested, capacity) * weight
            weights += weight
        return total // weights if weights else 0
