"""InterPodAffinity (policy names MatchInterPodAffinity and InterPodAffinityPriority).

Upstream's plugin, rule for rule. PreFilter counts, once per pod, topology pairs
(label key, value) over the pods already placed or assumed:

- pairs where an existing pod's *required anti-affinity* term selects the incoming pod
  (symmetry: the pod may not go where it would break someone else's rule);
- pairs where existing pods match *all* of the incoming pod's required affinity terms;
- pairs where an existing pod matches one of the incoming pod's required anti-affinity
  terms.

Filter is then dictionary lookups on the node's labels, in upstream's order and with its
codes: affinity unmet is UnschedulableAndUnresolvable (evicting pods cannot create the
pods it needs), anti-affinity and the existing pods' anti-affinity are Unschedulable. A
node without a term's topology label cannot satisfy an affinity term. The first pod of a
group with affinity to itself may go anywhere with the labels, when no pod anywhere
matches its terms yet and it matches them itself.

Score sums weights per topology pair (``inter_pod_affinity_scoring``), normalized to
0..100 between the lowest and the highest node.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Iterator
from dataclasses import dataclass, field

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Node, Pod
from volsched.cache.objects.pod_constraints import AffinityTerm
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.events import (
    ADD,
    DELETE,
    NAMESPACE,
    NODE,
    POD,
    UPDATE,
    UPDATE_NODE_LABEL,
    UPDATE_POD_LABEL,
    ClusterEventWithHint,
    on,
)
from volsched.scheduling.framework.interfaces import MAX_NODE_SCORE
from volsched.scheduling.framework.status import SKIP, SUCCESS, Status, unresolvable, unschedulable
from volsched.scheduling.plugins.inter_pod_affinity_scoring import pair_scores
from volsched.scheduling.plugins.pod_rule_events import (
    affinity_after_node_change,
    affinity_after_pod_change,
)

DEFAULT_HARD_POD_AFFINITY_WEIGHT = 1
REASON_AFFINITY = "node(s) didn't match pod affinity rules"
REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"

_AFFINITY = unresolvable(REASON_AFFINITY)
_ANTI_AFFINITY = unschedulable(REASON_ANTI_AFFINITY)
_EXISTING = unschedulable(REASON_EXISTING_ANTI_AFFINITY)

Pair = tuple[str, str]


@dataclass(slots=True)
class _FilterState:
    affinity: tuple[AffinityTerm, ...]
    anti_affinity: tuple[AffinityTerm, ...]
    affinity_counts: dict[Pair, int] = field(default_factory=dict)
    anti_affinity_counts: dict[Pair, int] = field(default_factory=dict)
    existing_anti_affinity_counts: dict[Pair, int] = field(default_factory=dict)
    matches_own_terms: bool = False

    def clone(self) -> _FilterState:
        return _FilterState(
            self.affinity,
            self.anti_affinity,
            dict(self.affinity_counts),
            dict(self.anti_affinity_counts),
            dict(self.existing_anti_affinity_counts),
            self.matches_own_terms,
        )


def _add(counts: dict[Pair, int], pair: Pair, amount: int) -> None:
    """Count ``amount`` more (or fewer) at ``pair``; a count down to zero is dropped, so
    "no pod matches anywhere" stays an empty map (the first pod of a group relies on it)."""
    total = counts.get(pair, 0) + amount
    if total:
        counts[pair] = total
    else:
        counts.pop(pair, None)


class InterPodAffinity:
    name = "InterPodAffinity"

    def __init__(
        self,
        cluster: ClusterCache,
        hard_pod_affinity_weight: int = DEFAULT_HARD_POD_AFFINITY_WEIGHT,
        ignore_preferred_terms_of_existing_pods: bool = False,
    ) -> None:
        self.cluster = cluster
        self.hard_pod_affinity_weight = hard_pod_affinity_weight
        # InterPodAffinityArgs.ignorePreferredTermsOfExistingPods: a pod with no preferred
        # terms of its own is not scored at all (existing pods' terms are not looked at);
        # a pod with some is scored as usual, existing pods' terms included, as upstream.
        self.ignore_preferred_terms_of_existing_pods = ignore_preferred_terms_of_existing_pods
        self._filter_key = f"PreFilter{self.name}"
        self._score_key = f"PreScore{self.name}"

    # -- helpers ---------------------------------------------------------------------

    def _namespace_labels(self, namespace: str) -> dict[str, str]:
        found = self.cluster.namespaces.get(namespace)
        return found.labels if found is not None else {}

    def _term_matches(self, term: AffinityTerm, pod: Pod) -> bool:
        return term.matches(pod.namespace, pod.labels, self._namespace_labels(pod.namespace))

    def _candidates(self, term: AffinityTerm) -> Iterable[tuple[Pod, NodeInfo]]:
        """Placed pods that may match the term: by label from the cluster's index, or
        every pod when the selector names no label value."""
        if term.selector is None:
            return ()
        found = self.cluster.pod_index.candidates(term.selector)
        if found is not None:
            return found
        return ((pod, info) for info in self.cluster.node_list() for pod in info.pods.values())

    def _nodes_with_affinity_pods(self) -> Iterator[NodeInfo]:
        nodes = self.cluster.nodes
        for name in self.cluster.nodes_with_affinity_pods:
            info = nodes.get(name)
            if info is not None:
                yield info

    # -- requeue ---------------------------------------------------------------------

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """Upstream's: placed pods added, relabelled or deleted change what the terms
        count; a node added or relabelled may be a new topology domain. And, as the
        terms' namespace selectors are read at each cycle, a namespace's labels."""
        return (
            on(POD, ADD | UPDATE_POD_LABEL | DELETE, self.after_pod_change),
            on(NODE, ADD | UPDATE_NODE_LABEL, self.after_node_change),
            on(NAMESPACE, ADD | UPDATE),
        )

    def after_pod_change(self, pod: Pod, old: Pod | None, new: Pod | None) -> bool:
        return affinity_after_pod_change(pod, old, new, self._term_matches)

    def after_node_change(self, pod: Pod, old: Node | None, new: Node | None) -> bool:
        return affinity_after_node_change(pod, new)

    # -- filter ----------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[Collection[str] | None, Status]:
        affinity = pod.pod_affinity
        required = affinity.required_affinity if affinity else ()
        anti = affinity.required_anti_affinity if affinity else ()
        filter_state = _FilterState(required, anti)
        # Existing pods' required anti-affinity that selects the incoming pod.
        for info in self._nodes_with_affinity_pods():
            labels = info.node.meta.labels
            for existing in info.affinity_pods.values():
                existing_affinity = existing.pod_affinity
                if existing_affinity is None:
                    continue
                for term in existing_affinity.required_anti_affinity:
                    value = labels.get(term.topology_key)
                    if value is not None and self._term_matches(term, pod):
                        _add(
                            filter_state.existing_anti_affinity_counts,
                            (term.topology_key, value),
                            1,
                        )
        if not required and not anti:
            if not filter_state.existing_anti_affinity_counts:
                return None, SKIP
            state.write(self._filter_key, filter_state)
            return None, SUCCESS
        namespace_labels = self._namespace_labels
        if required:
            for existing, info in self._candidates(required[0]):
                existing_ns = namespace_labels(existing.namespace)
                if all(
                    t.matches(existing.namespace, existing.labels, existing_ns) for t in required
                ):
                    labels = info.node.meta.labels
                    for term in required:
                        value = labels.get(term.topology_key)
                        if value is not None:
                            _add(filter_state.affinity_counts, (term.topology_key, value), 1)
        for term in anti:
            for existing, info in self._candidates(term):
                value = info.node.meta.labels.get(term.topology_key)
                if value is not None and term.matches(
                    existing.namespace, existing.labels, namespace_labels(existing.namespace)
                ):
                    _add(filter_state.anti_affinity_counts, (term.topology_key, value), 1)
        filter_state.matches_own_terms = bool(required) and all(
            self._term_matches(term, pod) for term in required
        )
        state.write(self._filter_key, filter_state)
        return None, SUCCESS

    # -- pods added and removed (preemption's dry run, nominated pods) -------------------

    def add_pod(self, state: CycleState, pod: Pod, added: Pod, node: NodeInfo) -> None:
        self._update(state, pod, added, node, 1)

    def remove_pod(self, state: CycleState, pod: Pod, removed: Pod, node: NodeInfo) -> None:
        self._update(state, pod, removed, node, -1)

    def _update(self, state: CycleState, pod: Pod, other: Pod, node: NodeInfo, delta: int) -> None:
        """Upstream's updateWithPod: ``other`` placed on (or taken off) ``node`` changes
        the three counts as if PreFilter had seen it there."""
        filter_state: _FilterState | None = state.read(self._filter_key)
        if filter_state is None:
            return
        labels = node.node.meta.labels
        other_affinity = other.pod_affinity
        if other_affinity is not None:
            for term in other_affinity.required_anti_affinity:
                value = labels.get(term.topology_key)
                if value is not None and self._term_matches(term, pod):
                    _add(
                        filter_state.existing_anti_affinity_counts,
                        (term.topology_key, value),
                        delta,
                    )
        namespace_labels = self._namespace_labels(other.namespace)
        required = filter_state.affinity
        if required and all(
            t.matches(other.namespace, other.labels, namespace_labels) for t in required
        ):
            for term in required:
                value = labels.get(term.topology_key)
                if value is not None:
                    _add(filter_state.affinity_counts, (term.topology_key, value), delta)
        for term in filter_state.anti_affinity:
            value = labels.get(term.topology_key)
            if value is not None and term.matches(other.namespace, other.labels, namespace_labels):
                _add(filter_state.anti_affinity_counts, (term.topology_key, value), delta)

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        filter_state: _FilterState | None = state.read(self._filter_key)
        if filter_state is None:
            self.pre_filter(state, pod)
            filter_state = state.read(self._filter_key)
            if filter_state is None:
                return None
        labels = node.node.meta.labels
        if not self._satisfies_affinity(filter_state, labels):
            return _AFFINITY
        for term in filter_state.anti_affinity:
            value = labels.get(term.topology_key)
            if (
                value is not None
                and filter_state.anti_affinity_counts.get((term.topology_key, value), 0) > 0
            ):
                return _ANTI_AFFINITY
        counts = filter_state.existing_anti_affinity_counts
        if counts:
            for pair in labels.items():
                if counts.get(pair, 0) > 0:
                    return _EXISTING
        return None

    @staticmethod
    def _satisfies_affinity(filter_state: _FilterState, labels: dict[str, str]) -> bool:
        pods_exist = True
        for term in filter_state.affinity:
            value = labels.get(term.topology_key)
            if value is None:
                # Every term's topology label must be on the node.
                return False
            if filter_state.affinity_counts.get((term.topology_key, value), 0) <= 0:
                pods_exist = False
        if pods_exist:
            return True
        # The first pod of a group with affinity to itself: nothing matches anywhere yet.
        return not filter_state.affinity_counts and filter_state.matches_own_terms

    def explain(self, state: CycleState, pod: Pod, node: NodeInfo) -> str | None:
        """Which term rejected ``node`` (for ``volsched explain``; not on the hot path)."""
        filter_state: _FilterState | None = state.read(self._filter_key)
        if filter_state is None:
            return None
        labels = node.node.meta.labels
        for index, term in enumerate(filter_state.affinity):
            value = labels.get(term.topology_key)
            if value is None:
                return f"required affinity term {index}: the node has no {term.topology_key} label"
            if filter_state.affinity_counts.get((term.topology_key, value), 0) <= 0:
                return (
                    f"required affinity term {index}: no matching pod in "
                    f"{term.topology_key}={value}"
                )
        for index, term in enumerate(filter_state.anti_affinity):
            value = labels.get(term.topology_key)
            count = filter_state.anti_affinity_counts.get((term.topology_key, value or ""), 0)
            if value is not None and count > 0:
                return (
                    f"required anti-affinity term {index}: {count} matching pod(s) in "
                    f"{term.topology_key}={value}"
                )
        for key, value in labels.items():
            count = filter_state.existing_anti_affinity_counts.get((key, value), 0)
            if count > 0:
                return f"{count} existing pod(s) in {key}={value} have anti-affinity to this pod"
        return None

    # -- score -----------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        affinity = pod.pod_affinity
        incoming_preferred = affinity is not None and affinity.has_preferred
        if not incoming_preferred and self.ignore_preferred_terms_of_existing_pods:
            return SKIP
        if not incoming_preferred and not self.cluster.nodes_with_affinity_pods:
            return SKIP
        node_source: Iterable[NodeInfo] = (
            self.cluster.node_list() if incoming_preferred else self._nodes_with_affinity_pods()
        )
        scores = pair_scores(
            pod,
            node_source,
            incoming_preferred,
            self.hard_pod_affinity_weight,
            self._namespace_labels,
        )
        if not scores:
            return SKIP
        state.write(self._score_key, scores)
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        scores: dict[str, dict[str, int]] | None = state.read(self._score_key)
        if not scores:
            return 0
        labels = node.node.meta.labels
        total = 0
        for key, by_value in scores.items():
            value = labels.get(key)
            if value is not None:
                total += by_value.get(value, 0)
        return total

    def normalize(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> None:
        if not scores:
            return
        low = min(scores.values())
        high = max(scores.values())
        spread = high - low
        for name, value in scores.items():
            # Go's float64(MaxNodeScore) * (float64(v-min) / float64(max-min)), truncated:
            # the ratio first, as upstream, so 29 of 100 normalizes to 28, not 29.
            scores[name] = int(MAX_NODE_SCORE * ((value - low) / spread)) if spread > 0 else 0
