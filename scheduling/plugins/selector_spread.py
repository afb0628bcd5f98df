"""SelectorSpreadPriority (alias ServiceSpreadingPriority): spread a service or a
ReplicaSet/StatefulSet over nodes and zones.

Upstream's (since removed) SelectorSpread plugin. The pod's selector is the merge of
the selectors of the Services that select it, ANDed with the selector of the ReplicaSet
or StatefulSet that controls it; a node scores the number of the namespace's pods (not
being deleted) that match it. Normalization inverts the counts per node and, where nodes
carry zone labels, gives two thirds of the weight to the zone's total.
"""

from __future__ import annotations

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.cache.objects.selectors import LabelSelector, Requirement, selector_matches_map
from volsched.cache.objects.workloads import Service
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.interfaces import MAX_NODE_SCORE
from volsched.scheduling.framework.status import SUCCESS, Status

# Upstream's weighting: 2/3 to spreading over zones, 1/3 to spreading over nodes.
ZONE_WEIGHTING = 2.0 / 3.0
_SPREAD_OWNER_KINDS = ("ReplicaSet", "StatefulSet")


def pod_services(cluster: ClusterCache, pod: Pod) -> list[Service]:
    """Upstream's GetPodServices: the pod's namespace's Services selecting it, by name.

    A Service without a selector selects nothing. Upstream returns them in lister order,
    which is unspecified; name order makes "the first service" reproducible.
    """
    namespace = pod.namespace
    labels = pod.labels
    found = [
        service
        for service in cluster.services.values()
        if service.meta.namespace == namespace
        and service.selector
        and selector_matches_map(service.selector, labels)
    ]
    found.sort(key=lambda service: service.meta.name)
    return found


def default_selector(cluster: ClusterCache, pod: Pod) -> LabelSelector | None:
    """Upstream's DefaultSelector, or None when it is empty (then nothing is counted).

    Only a controller owner of ``apps/v1`` kind ReplicaSet or StatefulSet counts (volsched
    does not read ReplicationControllers); one without a selector adds nothing.
    """
    merged: dict[str, str] = {}
    for service in pod_services(cluster, pod):
        merged.update(service.selector)
    pairs = tuple(merged.items())
    expressions: tuple[Requirement, ...] = ()
    owner = pod.meta.controller()
    if owner is not None and owner.api_version == "apps/v1" and owner.kind in _SPREAD_OWNER_KINDS:
        workload = cluster.workload_sets.get((owner.kind, f"{pod.namespace}/{owner.name}"))
        if workload is not None and workload.selector is not None:
            # ANDed, not merged: a conflicting value makes the selector match nothing.
            pairs += workload.selector.match_labels
            expressions = workload.selector.match_expressions
    if not pairs and not expressions:
        return None
    return LabelSelector(pairs, expressions)


class SelectorSpread:
    """Score + normalize. Upstream never skips it: a pod with an empty selector scores 0
    everywhere, which normalizes to 100 on every node."""

    name = "SelectorSpread"

    def __init__(self, cluster: ClusterCache) -> None:
        self.cluster = cluster
        self._key = f"PreScore{self.name}"

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        state.write(self._key, (default_selector(self.cluster, pod),))
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        stored: tuple[LabelSelector | None] | None = state.read(self._key)
        selector = stored[0] if stored is not None else default_selector(self.cluster, pod)
        if selector is None or not node.pods:
            return 0
        namespace = pod.namespace
        count = 0
        for other in node.pods.values():
            # Pods being deleted do not count for spreading.
            if (
                other.meta.namespace == namespace
                and other.meta.deletion_timestamp is None
                and selector.matches(other.meta.labels)
            ):
                count += 1
        return count

    def normalize(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> None:
        nodes = self.cluster.nodes
        zones: dict[str, str] = {}
        counts_by_zone: dict[str, int] = {}
        max_by_node = 0
        for name, count in scores.items():
            max_by_node = max(max_by_node, count)
            info = nodes.get(name)
            zone = info.zone if info is not None else ""
            zones[name] = zone
            if zone:
                counts_by_zone[zone] = counts_by_zone.get(zone, 0) + count
        max_by_zone = max(counts_by_zone.values(), default=0)
        for name, count in list(scores.items()):
            # Float arithmetic in upstream's order, so the truncated scores agree.
            node_score = float(MAX_NODE_SCORE)
            if max_by_node > 0:
                node_score = MAX_NODE_SCORE * (float(max_by_node - count) / float(max_by_node))
            zone = zones[name]
            if zone:
                zone_score = float(MAX_NODE_SCORE)
                if max_by_zone > 0:
                    zone_score = MAX_NODE_SCORE * (
                        float(max_by_zone - counts_by_zone[zone]) / float(max_by_zone)
                    )
                node_score = node_score * (1.0 - ZONE_WEIGHTING) + ZONE_WEIGHTING * zone_score
            scores[name] = int(node_score)
