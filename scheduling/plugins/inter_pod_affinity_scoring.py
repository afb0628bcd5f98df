"""InterPodAffinity's PreScore sums (upstream's scoring.go), apart from its filter.

Per topology pair (label key, value): the weights of the incoming pod's preferred terms
that existing pods match (anti-affinity subtracts), the weights of existing pods'
preferred terms that match the incoming pod, and ``hardPodAffinityWeight`` for each
existing pod's required affinity term that matches it. A node's score is then the sum
over the pairs its labels hold. Only pods with affinity terms are walked unless the
incoming pod has preferred terms of its own (upstream keeps the same per-node lists).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable

from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.cache.objects.pod_constraints import PodAffinity, WeightedAffinityTerm

# Topology key → value → summed weight.
PairScores = dict[str, dict[str, int]]


def pair_scores(
    pod: Pod,
    nodes: Iterable[NodeInfo],
    incoming_preferred: bool,
    hard_pod_affinity_weight: int,
    namespace_labels: Callable[[str], dict[str, str]],
) -> PairScores:
    """The sums over ``nodes`` (every node when the pod has preferred terms, else only
    those with pods that have affinity terms); empty when no term matched anything."""
    scores: PairScores = defaultdict(lambda: defaultdict(int))
    affinity = pod.pod_affinity
    incoming_labels_ns = namespace_labels(pod.namespace)
    for info in nodes:
        labels = info.node.meta.labels
        if not labels:
            continue
        existing_pods = info.pods.values() if incoming_preferred else info.affinity_pods.values()
        for existing in existing_pods:
            if affinity is not None and incoming_preferred:
                existing_ns = namespace_labels(existing.namespace)
                _add_terms(scores, affinity.preferred_affinity, existing, existing_ns, labels, 1)
                _add_terms(
                    scores, affinity.preferred_anti_affinity, existing, existing_ns, labels, -1
                )
            theirs: PodAffinity | None = existing.pod_affinity
            if theirs is None:
                continue
            if hard_pod_affinity_weight > 0:
                for term in theirs.required_affinity:
                    value = labels.get(term.topology_key)
                    if value is not None and term.matches(
                        pod.namespace, pod.labels, incoming_labels_ns
                    ):
                        scores[term.topology_key][value] += hard_pod_affinity_weight
            _add_terms(scores, theirs.preferred_affinity, pod, incoming_labels_ns, labels, 1)
            _add_terms(scores, theirs.preferred_anti_affinity, pod, incoming_labels_ns, labels, -1)
    return scores


def _add_terms(
    scores: PairScores,
    terms: tuple[WeightedAffinityTerm, ...],
    target: Pod,
    target_namespace_labels: dict[str, str],
    node_labels: dict[str, str],
    sign: int,
) -> None:
    for weighted in terms:
        term = weighted.term
        value = node_labels.get(term.topology_key)
        if value is not None and term.matches(
            target.namespace, target.labels, target_namespace_labels
        ):
            scores[term.topology_key][value] += sign * weighted.weight
