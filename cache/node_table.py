"""The nodes the cache knows, in the order a scheduling cycle walks them.

Every cycle lists the nodes, so the zone-interleaved order is built once and kept until a
node comes, goes or changes zone. The images the nodes hold are counted here too, as
kube-scheduler's cache keeps its image states: ImageLocality reads the counts for every
node it scores, so they are kept as nodes change rather than summed per cycle.
"""

from __future__ import annotations

from collections import defaultdict

from volsched.cache.node_changes import NodeChanges
from volsched.cache.node_info import NodeInfo, zone_key
from volsched.cache.objects.core import Node
from volsched.cache.pod_index import PodIndex


class NodeTable:
    """Nodes by name, their interleaved order, and the images they list."""

    def __init__(self) -> None:
        self.nodes: dict[str, NodeInfo] = {}
        # Placed pods by label, nodes with affinity pods (kept by NodeInfo).
        self.pod_index = PodIndex()
        # Every node change, by name, for the scheduler's verdicts kept per pod shape.
        self.node_changes = NodeChanges()
        # Bumped when a node comes, goes or changes labels (not on status updates).
        self.labels_generation = 0
        # How many nodes list each image name in status.images (ImageLocality's spread).
        self.image_nodes: dict[str, int] = {}
        # Each image name's size as first seen on a node that lists it, kept while any
        # node does: kube-scheduler's cache scores every node with this one size.
        self.image_sizes: dict[str, int] = {}
        self._order: list[NodeInfo] | None = None

    def upsert(self, node: Node) -> NodeInfo | None:
        """Take a node's latest object; returns its ``NodeInfo`` when the node is new
        (it has no pods yet: the caller gives it those already placed there)."""
        info = self.nodes.get(node.meta.name)
        old_images = info.node.images if info is not None else {}
        if old_images != node.images:
            self._count_images(old_images, -1)
            self._count_images(node.images, 1)
        if info is None or info.node.meta.labels != node.meta.labels:
            self.labels_generation += 1
        if info is None:
            info = NodeInfo(node, self.pod_index, self.node_changes)
            self.nodes[node.meta.name] = info
            self._order = None
            return info
        if info.zone != zone_key(node.meta.labels):
            self._order = None
        info.set_node(node)
        return None

    def delete(self, name: str) -> None:
        info = self.nodes.pop(name, None)
        if info is not None:
            self._count_images(info.node.images, -1)
            self._order = None
            self.labels_generation += 1
            self.pod_index.node_removed(info)

    def node_list(self) -> list[NodeInfo]:
        """Nodes interleaved across zones, as kube-scheduler's node tree lists them.

        Zones in name order, nodes by name inside a zone, then one node of each zone in
        turn, so that stopping early still sees every zone.
        """
        if self._order is None:
            zones: dict[str, list[NodeInfo]] = defaultdict(list)
            for name in sorted(self.nodes):
                info = self.nodes[name]
                zones[info.zone].append(info)
            ordered: list[NodeInfo] = []
            columns = [zones[zone] for zone in sorted(zones)]
            depth = max((len(column) for column in columns), default=0)
            for index in range(depth):
                for column in columns:
                    if index < len(column):
                        ordered.append(column[index])
            self._order = ordered
        return self._order

    def _count_images(self, images: dict[str, int], change: int) -> None:
        counts = self.image_nodes
        sizes = self.image_sizes
        for image, size in images.items():
            count = counts.get(image, 0) + change
            if count > 0:
                counts[image] = count
                sizes.setdefault(image, size)
            else:
                counts.pop(image, None)
                sizes.pop(image, None)
