"""ImageLocality: prefer nodes that already hold the pod's container images.

Upstream's plugin, from ``Node.status.images``: each container (init containers too) and
each image volume whose image the node lists adds the image's size scaled by its spread —
the share of all nodes that hold it — so an image already everywhere does not pull every
pod onto one node. The sum is clamped between 23 MiB and 1000 MiB per container (image
volumes are not counted there) and scaled to 0..100. The size is the one kube-scheduler's
cache keeps per image name — as first seen on a node listing it — for every node, not
each node's own figure.

Names are matched as upstream matches them: a reference without a tag (``nginx``,
``gcr.io:5000/app``) gets ``:latest``; nothing else is rewritten, so ``nginx:1.27`` in a
pod does not match ``docker.io/library/nginx:1.27`` on a node (upstream's own limitation:
runtimes report the names pods used, so consistent names match).
"""

from __future__ import annotations

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.interfaces import MAX_NODE_SCORE

MIB = 1024 * 1024
# The bounds of the score range: a reasonable size range for compressed container
# images in registries (upstream's minThreshold and per-container maxContainerThreshold).
MIN_THRESHOLD = 23 * MIB
MAX_CONTAINER_THRESHOLD = 1000 * MIB


def normalized_image_name(image: str) -> str:
    """The name as a node reports it: ``:latest`` added when the last path part has no
    tag (a ``:`` before the last ``/`` is a registry port)."""
    if image.rfind(":") <= image.rfind("/"):
        return image + ":latest"
    return image


def calculate_priority(sum_scores: int, containers: int) -> int:
    """0..100 from the summed image scores, clamped to the thresholds."""
    maximum = MAX_CONTAINER_THRESHOLD * containers
    clamped = min(max(sum_scores, MIN_THRESHOLD), maximum)
    return MAX_NODE_SCORE * (clamped - MIN_THRESHOLD) // (maximum - MIN_THRESHOLD)


def scaled_image_score(size: int, nodes_with_image: int, total_nodes: int) -> int:
    """The image's size times the share of nodes holding it (Go's int64(float64 * ratio))."""
    return int(size * (nodes_with_image / total_nodes))


class ImageLocality:
    name = "ImageLocality"

    def __init__(self, cluster: ClusterCache) -> None:
        self.cluster = cluster

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        return self.score_nodes(state, pod, [node])[0]

    def score_nodes(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> list[int]:
        """Every node's score; how many nodes hold each image comes from the cache's
        image index, so a pod whose images no node lists costs no pass over the nodes."""
        holders = self.cluster.image_nodes
        total = len(self.cluster.nodes)
        sizes = self.cluster.image_sizes
        wanted = [
            (image, scaled_image_score(sizes[image], holders[image], total))
            for image in map(normalized_image_name, pod.images + pod.image_volumes)
            if image in holders
        ]
        if not wanted:
            return [0] * len(nodes)
        containers = len(pod.images)
        scores = []
        for info in nodes:
            images = info.node.images
            summed = sum(scaled for image, scaled in wanted if image in images)
            scores.append(calculate_priority(summed, containers))
        return scores
