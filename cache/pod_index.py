"""Placed pods by label, and the nodes holding pods with inter-pod affinity terms.

Inter-pod affinity and topology spread ask, for each incoming pod, "which placed pods
match this selector, and on which nodes?". Walking every pod of a 5,000-node cluster for
that costs milliseconds per pod; the pods carrying one label pair of the selector are
usually a handful. ``NodeInfo`` keeps this index as pods are placed, assumed, moved and
removed, so it always agrees with the nodes' pod lists.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import TYPE_CHECKING

from volsched.cache.objects.core import Pod
from volsched.cache.objects.selectors import LabelSelector

if TYPE_CHECKING:
    from volsched.cache.node_info import NodeInfo

LabelPair = tuple[str, str]


class PodIndex:
    def __init__(self) -> None:
        # (label key, value) → pod key → (pod, the node it is placed on)
        self._by_label: dict[LabelPair, dict[str, tuple[Pod, NodeInfo]]] = defaultdict(dict)
        self.nodes_with_affinity_pods: set[str] = set()

    def added(self, pod: Pod, node: NodeInfo) -> None:
        key = pod.meta.key
        for pair in pod.labels.items():
            self._by_label[pair][key] = (pod, node)
        if pod.pod_affinity is not None:
            self.nodes_with_affinity_pods.add(node.name)

    def removed(self, pod: Pod, node: NodeInfo) -> None:
        key = pod.meta.key
        for pair in pod.labels.items():
            holders = self._by_label.get(pair)
            if holders is not None:
                holders.pop(key, None)
                if not holders:
                    del self._by_label[pair]
        if not node.affinity_pods:
            self.nodes_with_affinity_pods.discard(node.name)

    def node_removed(self, node: NodeInfo) -> None:
        for pod in list(node.pods.values()):
            self.removed(pod, node)
        self.nodes_with_affinity_pods.discard(node.name)

    def candidates(self, selector: LabelSelector) -> Iterable[tuple[Pod, NodeInfo]] | None:
        """Placed pods that may match ``selector`` (a superset), or None when the selector
        names no label value to look up (then every pod is a candidate)."""
        best: list[dict[str, tuple[Pod, NodeInfo]]] | None = None
        for pair in selector.match_labels:
            holders = self._by_label.get(pair)
            if holders is None:
                return ()
            if best is None or len(holders) < sum(len(h) for h in best):
                best = [holders]
        for requirement in selector.match_expressions:
            if requirement.operator != "In":
                continue
            groups = [self._by_label.get((requirement.key, v)) or {} for v in requirement.values]
            if best is None or sum(len(g) for g in groups) < sum(len(h) for h in best):
                best = groups
        if best is None:
            return None
        return [entry for group in best for entry in group.values()]
