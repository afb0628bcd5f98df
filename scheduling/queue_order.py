"""The order pending pods are decided in: priority, then age, then arrival.

kube-scheduler's PrioritySort breaks a tie in priority by the time a pod entered the
queue, so pods created in the same second go in the order they arrived — never by
name. Arrival is read from what the objects carry: the resourceVersion the API server
gave them (a pending pod's is its creation's, or close to it), and for objects written
by hand, which carry none, the order the snapshot's files list them (the sort is
stable).
"""

from __future__ import annotations

from collections.abc import Iterable

from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.core import Pod


def queue_key(cluster: ClusterCache, pod: Pod) -> tuple[int, float, int]:
    return (-cluster.pod_priority(pod), pod.meta.creation_timestamp, pod.meta.resource_version)


def in_queue_order(cluster: ClusterCache, pods: Iterable[Pod]) -> list[Pod]:
    return sorted(pods, key=lambda pod: queue_key(cluster, pod))
