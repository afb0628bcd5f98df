"""MatchNodeSelector and NodeAffinityPriority (upstream's NodeAffinity).

Required: the pod's ``nodeSelector`` map AND its required node affinity (terms ORed, the
expressions of a term ANDed, an empty term matching nothing). Preferred: the sum of the
weights of the preferred terms a node matches, scaled to 0..100 against the best node.

A scheduler profile may add affinity of its own (``NodeAffinityArgs.addedAffinity``): its
required terms must hold on every node the profile uses, whatever the pod says, and its
preferred terms score alongside the pod's.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Node, Pod
from volsched.cache.objects.selectors import NodeSelector, PreferredTerm
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.events import (
    ADD,
    NODE,
    UPDATE_NODE_LABEL,
    ClusterEventWithHint,
    on,
)
from volsched.scheduling.framework.interfaces import MAX_NODE_SCORE
from volsched.scheduling.framework.status import SKIP, SUCCESS, Status, unresolvable
from volsched.scheduling.plugins.normalize import default_normalize, normalized

REASON_POD = "node(s) didn't match Pod's node affinity/selector"
REASON_CONFLICT = "pod affinity terms conflict"
REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
_REJECTED = unresolvable(REASON_POD)
_REJECTED_ENFORCED = unresolvable(REASON_ENFORCED)


@dataclass(frozen=True, slots=True)
class AddedAffinity:
    """The profile's own node affinity, applied to every pod it schedules."""

    required: NodeSelector | None = None
    preferred: tuple[PreferredTerm, ...] = ()


@dataclass(frozen=True, slots=True)
class _Required:
    node_selector: tuple[tuple[str, str], ...]
    affinity: NodeSelector | None

    def matches(self, node: NodeInfo) -> bool:
        labels = node.node.meta.labels
        for key, value in self.node_selector:
            if labels.get(key) != value:
                return False
        affinity = self.affinity
        return affinity is None or affinity.matches(labels, node.name)


def _required(pod: Pod) -> _Required:
    return _Required(tuple(pod.node_selector.items()), pod.required_affinity)


def matches_required_node_affinity(pod: Pod, node: NodeInfo) -> bool:
    """The pod's nodeSelector and required node affinity hold on the node."""
    return _required(pod).matches(node)


def _named_nodes(affinity: NodeSelector) -> set[str] | None:
    """The nodes ``matchFields`` on ``metadata.name`` (In) confine the pod to, or None.

    A term without such a field admits every node (terms are ORed); within a term the
    name lists intersect (requirements are ANDed).
    """
    names: set[str] = set()
    for term in affinity.terms:
        term_names: set[str] | None = None
        for requirement in term.match_fields:
            if requirement.key == "metadata.name" and requirement.operator == "In":
                values = set(requirement.values)
                term_names = values if term_names is None else term_names & values
        if term_names is None:
            return None
        names |= term_names
    return names


class NodeAffinity:
    """Filter + score, one instance for both as upstream's plugin.

    The filter's rejection is UnschedulableAndUnresolvable. When every required term pins
    ``metadata.name``, pre-filter narrows the cycle to those nodes (upstream's
    PreFilterResult), and rejects the pod outright when the terms leave no name at all.
    """

    name = "NodeAffinity"

    def __init__(self, cluster: ClusterCache, added: AddedAffinity | None = None) -> None:
        self.cluster = cluster
        self.added = added if added is not None and (added.required or added.preferred) else None
        self._enforced = self.added.required if self.added is not None else None
        self._filter_key = f"PreFilter{self.name}"
        self._score_key = f"PreScore{self.name}"

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[Collection[str] | None, Status]:
        affinity = pod.required_affinity
        if affinity is None and not pod.node_selector:
            return None, SKIP if self._enforced is None else SUCCESS
        state.write(self._filter_key, _required(pod))
        if affinity is None or not affinity.terms:
            return None, SUCCESS
        names = _named_nodes(affinity)
        if names is not None and not names:
            return None, unresolvable(REASON_CONFLICT)
        return names, SUCCESS

    def filter_key(self, state: CycleState, pod: Pod) -> _Required:
        """NodeLocalFilter: the node's labels and name, and the pod's nodeSelector and
        required terms (the profile's added affinity is the plugin's own)."""
        required: _Required | None = state.read(self._filter_key)
        return required if required is not None else _required(pod)

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        enforced = self._enforced
        if enforced is not None and not enforced.matches(node.node.meta.labels, node.name):
            return _REJECTED_ENFORCED
        required: _Required | None = state.read(self._filter_key)
        if required is None:
            required = _required(pod)
            state.write(self._filter_key, required)
        return None if required.matches(node) else _REJECTED

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """Upstream's: a node added, or relabelled, may now match."""
        return (on(NODE, ADD | UPDATE_NODE_LABEL, self.after_node_change),)

    def _admits(self, required: _Required, node: Node) -> bool:
        enforced = self._enforced
        if enforced is not None and not enforced.matches(node.meta.labels, node.name):
            return False
        return required.matches(NodeInfo(node))

    def after_node_change(self, pod: Pod, old: Node | None, new: Node | None) -> bool:
        """Only a change from not matching to matching helps."""
        if new is None:
            return False
        required = _required(pod)
        if not self._admits(required, new):
            return False
        return old is None or not self._admits(required, old)

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        preferred = pod.preferred_affinity
        if self.added is not None:
            preferred = preferred + self.added.preferred
        if not preferred:
            return SKIP
        state.write(self._score_key, preferred)
        return SUCCESS

    def score_key(self, state: CycleState, pod: Pod) -> tuple[PreferredTerm, ...]:
        """NodeLocalScore: the node's labels and name, and the preferred terms."""
        preferred: tuple[PreferredTerm, ...] | None = state.read(self._score_key)
        if preferred is None:
            preferred = pod.preferred_affinity + (self.added.preferred if self.added else ())
        return preferred

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        preferred: tuple[PreferredTerm, ...] | None = state.read(self._score_key)
        if preferred is None:
            preferred = pod.preferred_affinity + (self.added.preferred if self.added else ())
        labels = node.node.meta.labels
        name = node.name
        return sum(item.weight for item in preferred if item.term.matches(labels, name))

    def normalize(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> None:
        default_normalize(scores, MAX_NODE_SCORE, reverse=False)

    def normalize_scores(self, state: CycleState, pod: Pod, scores: list[int]) -> list[int]:
        return normalized(scores, MAX_NODE_SCORE, reverse=False)
