"""Which PersistentVolumes each node can reach, per StorageClass, kept incrementally.

The volume binding design proposal asks for this so that matching a WaitForFirstConsumer
claim on a node looks at the PVs that node can reach, not at every PV of the class. A PV
without node affinity is reachable from every node and is kept once per class instead of
once per node.

Finding a PV's nodes uses the nodes' labels: a term with an ``In`` expression can only
match nodes that carry one of its values, so those nodes are looked up by label and the
term is checked on them alone. A term without any ``In`` (NotIn / Exists / Gt …) is
checked against every node; such PVs are rare and are re-checked on every node change.
"""

from __future__ import annotations

import bisect
from collections import defaultdict

from volsched.cache.objects.selectors import NodeSelector, NodeSelectorTerm
from volsched.cache.objects.storage import PersistentVolume

_LabelPair = tuple[str, str]


def _narrowing_expression(term: NodeSelectorTerm) -> tuple[str, tuple[str, ...]] | None:
    best: tuple[str, tuple[str, ...]] | None = None
    for requirement in term.match_expressions:
        if requirement.operator == "In" and (
            best is None or len(requirement.values) < len(best[1])
        ):
            best = (requirement.key, requirement.values)
    return best


class PersistentVolumeIndex:
    """PV names by (node, class), plus node-independent PVs by class."""

    def __init__(self) -> None:
        self._node_labels: dict[str, dict[str, str]] = {}
        self._nodes_by_label: dict[_LabelPair, set[str]] = defaultdict(set)
        # (capacity, name) pairs kept sorted: matching wants the smallest PV that fits.
        self._by_node_class: dict[str, dict[str, list[tuple[int, str]]]] = defaultdict(
            lambda: defaultdict(list)
        )
        self._pv_capacity: dict[str, int] = {}
        self._anywhere: dict[str, set[str]] = defaultdict(set)
        self._pv_nodes: dict[str, set[str]] = {}
        self._pv_class: dict[str, str] = {}
        self._pv_affinity: dict[str, NodeSelector] = {}
        self._watchers: dict[_LabelPair, set[str]] = defaultdict(set)
        self._scan_everywhere: set[str] = set()

    # -- queries ---------------------------------------------------------------------

    def on_node(self, node: str, storage_class: str) -> list[tuple[int, str]]:
        """(capacity, name) of the class's PVs whose node affinity names this node, smallest
        first (not the unconstrained ones)."""
        classes = self._by_node_class.get(node)
        if classes is None:
            return []
        return classes.get(storage_class) or []

    def _add(self, node: str, storage_class: str, name: str) -> None:
        entries = self._by_node_class[node][storage_class]
        entry = (self._pv_capacity[name], name)
        index = bisect.bisect_left(entries, entry)
        if index == len(entries) or entries[index] != entry:
            entries.insert(index, entry)

    def _remove(self, node: str, storage_class: str, name: str) -> None:
        classes = self._by_node_class.get(node)
        if classes is None or storage_class not in classes:
            return
        entries = classes[storage_class]
        entry = (self._pv_capacity.get(name, -1), name)
        index = bisect.bisect_left(entries, entry)
        if index < len(entries) and entries[index] == entry:
            del entries[index]

    def anywhere(self, storage_class: str) -> set[str]:
        """PVs of the class without node affinity: reachable from every node."""
        return self._anywhere.get(storage_class) or set()

    def nodes_of(self, pv_name: str) -> set[str] | None:
        """The nodes a PV reaches, or None when it reaches all of them."""
        return self._pv_nodes.get(pv_name)

    # -- PVs -------------------------------------------------------------------------

    def upsert_pv(self, pv: PersistentVolume) -> None:
        name = pv.meta.name
        if name in self._pv_class:
            if (
                self._pv_class[name] == pv.storage_class
                and self._pv_affinity.get(name) == pv.node_affinity
                and self._pv_capacity.get(name) == pv.capacity
            ):
                return
            self.delete_pv(name)
        self._pv_class[name] = pv.storage_class
        self._pv_capacity[name] = pv.capacity
        affinity = pv.node_affinity
        if affinity is None:
            self._anywhere[pv.storage_class].add(name)
            return
        self._pv_affinity[name] = affinity
        nodes: set[str] = set()
        for term in affinity.terms:
            narrowing = _narrowing_expression(term)
            if narrowing is None:
                self._scan_everywhere.add(name)
                candidates: set[str] | list[str] = list(self._node_labels)
            else:
                key, values = narrowing
                candidates = set()
                for value in values:
                    self._watchers[(key, value)].add(name)
                    candidates |= self._nodes_by_label.get((key, value), set())
            for node in candidates:
                if node not in nodes and term.matches(self._node_labels[node], node):
                    nodes.add(node)
        self._pv_nodes[name] = nodes
        for node in nodes:
            self._add(node, pv.storage_class, name)

    def delete_pv(self, name: str) -> None:
        storage_class = self._pv_class.pop(name, None)
        if storage_class is None:
            return
        affinity = self._pv_affinity.pop(name, None)
        if affinity is None:
            self._anywhere[storage_class].discard(name)
            self._pv_capacity.pop(name, None)
            return
        for node in self._pv_nodes.pop(name, set()):
            self._remove(node, storage_class, name)
        self._pv_capacity.pop(name, None)
        self._scan_everywhere.discard(name)
        for term in affinity.terms:
            narrowing = _narrowing_expression(term)
            if narrowing is not None:
                key, values = narrowing
                for value in values:
                    watchers = self._watchers.get((key, value))
                    if watchers is not None:
                        watchers.discard(name)
                        if not watchers:
                            del self._watchers[(key, value)]

    # -- nodes -----------------------------------------------------------------------

    def upsert_node(self, name: str, labels: dict[str, str]) -> None:
        old = self._node_labels.get(name)
        if old == labels:
            return
        old = old or {}
        for pair in old.items():
            self._nodes_by_label[pair].discard(name)
        for pair in labels.items():
            self._nodes_by_label[pair].add(name)
        self._node_labels[name] = dict(labels)
        affected = set(self._scan_everywhere)
        for pair in list(old.items()) + list(labels.items()):
            affected |= self._watchers.get(pair, set())
        for pv_name in affected:
            self._recheck(pv_name, name)

    def delete_node(self, name: str) -> None:
        labels = self._node_labels.pop(name, None)
        if labels is None:
            return
        for pair in labels.items():
            self._nodes_by_label[pair].discard(name)
        for entries in self._by_node_class.pop(name, {}).values():
            for _, pv_name in entries:
                self._pv_nodes.get(pv_name, set()).discard(name)

    def _recheck(self, pv_name: str, node: str) -> None:
        affinity = self._pv_affinity.get(pv_name)
        if affinity is None:
            return
        storage_class = self._pv_class[pv_name]
        nodes = self._pv_nodes[pv_name]
        if affinity.matches(self._node_labels[node], node):
            nodes.add(node)
            self._add(node, storage_class, pv_name)
        else:
            nodes.discard(node)
            self._remove(node, storage_class, pv_name)
