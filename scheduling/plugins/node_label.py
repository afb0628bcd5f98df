"""The policy's ``labelsPresence`` predicate and ``labelPreference`` priority.

Upstream's (since removed) NodeLabel plugin: only whether a node carries a label key
matters, never its value. Each policy rule is its own instance here, so several rules
with different labels can sit side by side.
"""

from __future__ import annotations

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.events import (
    ADD,
    NODE,
    UPDATE_NODE_LABEL,
    ClusterEventWithHint,
    on,
)
from volsched.scheduling.framework.interfaces import MAX_NODE_SCORE
from volsched.scheduling.framework.status import Status, unresolvable

REASON_PREFIX = "node(s) didn't have the requested labels"


class NodeLabelPresence:
    """Filter: every label in ``labels`` present (``presence``) or every one absent.

    The reason keeps upstream's text and names the labels that failed, e.g.
    ``node(s) didn't have the requested labels: zone`` or, for labels that must be
    absent, ``node(s) didn't have the requested labels: retiring (must be absent)``.
    UnschedulableAndUnresolvable: evictions do not change labels.
    """

    name = "NodeLabel"

    def __init__(self, cluster: ClusterCache, labels: tuple[str, ...], presence: bool) -> None:
        self.cluster = cluster
        self.labels = tuple(labels)
        self.presence = presence

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        return (on(NODE, ADD | UPDATE_NODE_LABEL),)

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        node_labels = node.node.meta.labels
        presence = self.presence
        for label in self.labels:
            if (label in node_labels) != presence:
                return self._rejection(node_labels)
        return None

    def _rejection(self, node_labels: dict[str, str]) -> Status:
        failed = [label for label in self.labels if (label in node_labels) != self.presence]
        listed = ", ".join(failed)
        if self.presence:
            return unresolvable(f"{REASON_PREFIX}: {listed}")
        return unresolvable(f"{REASON_PREFIX}: {listed} (must be absent)")


class NodeLabelPreference:
    """Score 100 when the node's having ``label`` agrees with ``presence``, else 0."""

    name = "NodeLabel"

    def __init__(self, cluster: ClusterCache, label: str, presence: bool) -> None:
        self.cluster = cluster
        self.label = label
        self.presence = presence

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        has_label = self.label in node.node.meta.labels
        return MAX_NODE_SCORE if has_label == self.presence else 0
