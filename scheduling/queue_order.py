"""The order pending pods are decided in: priority, then age, then namespace/name."""

from __future__ import annotations

from collections.abc import Iterable

from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.core import Pod


def queue_key(cluster: ClusterCache, pod: Pod) -> tuple[int, float, str, str]:
    return (-cluster.pod_priority(pod), pod.meta.creation_timestamp, pod.namespace, pod.name)


def in_queue_order(cluster: ClusterCache, pods: Iterable[Pod]) -> list[Pod]:
    return sorted(pods, key=lambda pod: queue_key(cluster, pod))
