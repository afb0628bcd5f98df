"""When a change to other pods or to a node can unblock a pod that inter-pod affinity or
topology spread rejected: the queueing hints of those two plugins.

Upstream's ``isSchedulableAfterPodChange`` / ``isSchedulableAfterNodeChange`` of
InterPodAffinity and PodTopologySpread (kube-scheduler 1.36), as pure functions of the
rejected pod and the object before and after the change. Where upstream's answer could
strand a pod, these answer "retry": a deleted pod that had required anti-affinity of its
own (it may have kept the pod away by symmetry), an anti-affinity term that stopped
matching even if others still do, a new node for a pod rejected only by other pods'
anti-affinity.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from volsched.cache.objects.core import Node, Pod
from volsched.cache.objects.pod_constraints import AffinityTerm, SpreadConstraint

# Whether a pod (the second argument) is selected by a term (the first).
TermMatcher = Callable[[AffinityTerm, Pod], bool]


def _placed(changed: Pod | None) -> bool:
    return changed is None or bool(changed.node_name)


def _matches_all(terms: Sequence[AffinityTerm], other: Pod, matches: TermMatcher) -> bool:
    """Upstream's podMatchesAllAffinityTerms: one pod must satisfy every required
    affinity term; no terms, no match."""
    return bool(terms) and all(matches(term, other) for term in terms)


def affinity_after_pod_change(
    pod: Pod, old: Pod | None, new: Pod | None, matches: TermMatcher
) -> bool:
    if not (_placed(old) and _placed(new)):
        return False  # a pending pod counts for nobody's affinity
    affinity = pod.pod_affinity
    required = affinity.required_affinity if affinity else ()
    anti = affinity.required_anti_affinity if affinity else ()
    if old is not None and new is not None:
        # Relabelled: it may now be the pod the affinity wants, or no longer one the
        # anti-affinity forbids.
        if not _matches_all(required, old, matches) and _matches_all(required, new, matches):
            return True
        return any(matches(term, old) and not matches(term, new) for term in anti)
    if new is not None:
        return _matches_all(required, new, matches)
    assert old is not None
    if any(matches(term, old) for term in anti):
        return True
    # Its own required anti-affinity may have kept this pod away (symmetry).
    return old.pod_affinity is not None and bool(old.pod_affinity.required_anti_affinity)


def affinity_after_node_change(pod: Pod, new: Node | None) -> bool:
    """A node that carries one of the pod's terms' topology keys may be a new domain."""
    if new is None:
        return False
    affinity = pod.pod_affinity
    terms = (affinity.required_affinity + affinity.required_anti_affinity) if affinity else ()
    if not terms:
        return True  # rejected by other pods' anti-affinity: any new node may be free
    labels = new.meta.labels
    return any(term.topology_key in labels for term in terms)


def _counted_with(pod: Pod, other: Pod) -> bool:
    """Upstream's involvedInTopologySpreading."""
    return other.meta.key == pod.meta.key or (
        bool(other.node_name) and other.namespace == pod.namespace
    )


def spread_after_pod_change(
    pod: Pod, old: Pod | None, new: Pod | None, constraints: Sequence[SpreadConstraint]
) -> bool:
    for changed in (old, new):
        # Only the pod itself or pods placed in its namespace are counted.
        if changed is not None and not _counted_with(pod, changed):
            return False
    if old is not None and new is not None:
        if old.meta.labels == new.meta.labels:
            return False
        return any(c.counts(old.labels) != c.counts(new.labels) for c in constraints)
    changed = new if new is not None else old
    return changed is not None and any(c.counts(changed.labels) for c in constraints)


def _has_keys(node: Node | None, constraints: Sequence[SpreadConstraint]) -> bool:
    return node is not None and all(c.topology_key in node.meta.labels for c in constraints)


def spread_after_node_change(
    old: Node | None, new: Node | None, constraints: Sequence[SpreadConstraint]
) -> bool:
    had, has = _has_keys(old, constraints), _has_keys(new, constraints)
    if old is not None and new is not None:
        if had != has:
            return True
        moved = any(
            old.meta.labels.get(c.topology_key) != new.meta.labels.get(c.topology_key)
            for c in constraints
        )
        return has and (moved or old.taints != new.taints)
    return has if new is not None else had
