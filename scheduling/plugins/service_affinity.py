"""The policy's ``serviceAffinity`` predicate and ``serviceAntiAffinity`` priority.

Upstream's (since removed) ServiceAffinity plugin, which implemented both. Affinity keeps
a service's pods on nodes that agree on some labels (a region, say): the first pod
placed decides, later pods follow. Anti-affinity spreads a service's pods over the values
of one label.
"""

from __future__ import annotations

from collections.abc import Collection

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Node, Pod
from volsched.cache.objects.selectors import selector_matches_map
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.events import (
    ADD,
    ALL,
    DELETE,
    NODE,
    POD,
    SERVICE,
    UPDATE_NODE_LABEL,
    UPDATE_POD_LABEL,
    ClusterEventWithHint,
    on,
)
from volsched.scheduling.framework.interfaces import MAX_NODE_SCORE
from volsched.scheduling.framework.status import SUCCESS, Status, unschedulable
from volsched.scheduling.plugins.selector_spread import pod_services

REASON = "node(s) didn't match service affinity"


class ServiceAffinity:
    """Filter: the node must carry the pod's values for ``labels``.

    The values come from the pod's ``nodeSelector``; any still missing, when a Service
    selects the pod, come from the node of the first placed pod of the namespace whose
    labels include all of the pod's (upstream's "implicit selector"; nodes in the
    scheduler's zone-interleaved order). A label with no value from either source is not
    checked. The reason names the labels the node disagrees on, e.g.
    ``node(s) didn't match service affinity (region)``; Unschedulable, as upstream.
    """

    name = "ServiceAffinity"

    def __init__(self, cluster: ClusterCache, labels: tuple[str, ...]) -> None:
        self.cluster = cluster
        self.labels = tuple(labels)
        # One state per rule: a policy may hold several serviceAffinity predicates.
        self._key = f"PreFilter{self.name}/{','.join(self.labels)}"

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """The first placed peer decides the labels (placed pods coming, going or
        relabelled), Services decide who the peers are, nodes carry the labels."""
        return (
            on(POD, ADD | UPDATE_POD_LABEL | DELETE),
            on(SERVICE, ALL),
            on(NODE, ADD | UPDATE_NODE_LABEL),
        )

    def _first_peer_node(self, pod: Pod) -> Node | None:
        namespace = pod.namespace
        own = pod.labels
        for info in self.cluster.node_list():
            for other in info.pods.values():
                if other.meta.namespace == namespace and selector_matches_map(
                    own, other.meta.labels
                ):
                    return info.node
        return None

    def _wanted(self, pod: Pod) -> tuple[tuple[str, str], ...]:
        selector = pod.node_selector
        wanted = {label: selector[label] for label in self.labels if label in selector}
        if len(wanted) < len(self.labels) and pod_services(self.cluster, pod):
            peer = self._first_peer_node(pod)
            if peer is not None:
                peer_labels = peer.meta.labels
                for label in self.labels:
                    if label not in wanted and label in peer_labels:
                        wanted[label] = peer_labels[label]
        return tuple((label, wanted[label]) for label in self.labels if label in wanted)

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[Collection[str] | None, Status]:
        state.write(self._key, self._wanted(pod))
        return None, SUCCESS

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        wanted: tuple[tuple[str, str], ...] | None = state.read(self._key)
        if wanted is None:
            wanted = self._wanted(pod)
            state.write(self._key, wanted)
        labels = node.node.meta.labels
        for label, value in wanted:
            if labels.get(label) != value:
                failed = [key for key, want in wanted if labels.get(key) != want]
                return unschedulable(f"{REASON} ({', '.join(failed)})")
        return None


class ServiceAntiAffinity:
    """Score + normalize: spread the pods of the pod's first Service over ``label``.

    A node scores the pods of that Service (same namespace, not being deleted) it runs;
    normalization gives a node without the label 0 and any other
    ``int(100 * (total - pods under the same label value) / total)``, 100 while the Service
    has no pods yet.
    """

    name = "ServiceAffinity"

    def __init__(self, cluster: ClusterCache, label: str) -> None:
        self.cluster = cluster
        self.label = label
        self._key = f"PreScore{self.name}/{label}"

    def _selector(self, pod: Pod) -> tuple[tuple[str, str], ...]:
        services = pod_services(self.cluster, pod)
        return tuple(services[0].selector.items()) if services else ()

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        state.write(self._key, self._selector(pod))
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        selector: tuple[tuple[str, str], ...] | None = state.read(self._key)
        if selector is None:
            selector = self._selector(pod)
        if not selector or not node.pods:
            return 0
        namespace = pod.namespace
        count = 0
        for other in node.pods.values():
            meta = other.meta
            if meta.namespace != namespace or meta.deletion_timestamp is not None:
                continue
            labels = meta.labels
            if all(labels.get(key) == value for key, value in selector):
                count += 1
        return count

    def normalize(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> None:
        nodes = self.cluster.nodes
        label = self.label
        total = 0
        values: dict[str, str] = {}
        counts: dict[str, int] = {}
        for name, count in scores.items():
            total += count
            info = nodes.get(name)
            if info is None or label not in info.node.meta.labels:
                continue
            value = info.node.meta.labels[label]
            values[name] = value
            counts[value] = counts.get(value, 0) + count
        for name in list(scores):
            value_or_none = values.get(name)
            if value_or_none is None:
                scores[name] = 0
                continue
            score = float(MAX_NODE_SCORE)
            if total > 0:
                score = MAX_NODE_SCORE * (float(total - counts[value_or_none]) / float(total))
            scores[name] = int(score)
