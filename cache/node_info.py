"""Per-node aggregates the filters read on every cycle: pods, requested resources, ports.

Kept incrementally as pods come, go and are assumed, so a cycle never sums a node's pods
again (kube-scheduler's NodeInfo, for the same reason).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any

from volsched.cache.objects.core import (
    LABEL_FAILURE_DOMAIN_BETA_REGION,
    LABEL_FAILURE_DOMAIN_BETA_ZONE,
    LABEL_TOPOLOGY_REGION,
    LABEL_TOPOLOGY_ZONE,
    HostPort,
    Node,
    Pod,
)

if TYPE_CHECKING:
    from volsched.cache.node_changes import NodeChanges
    from volsched.cache.pod_index import PodIndex

ZONE_LABELS = (LABEL_TOPOLOGY_ZONE, LABEL_FAILURE_DOMAIN_BETA_ZONE)
# What ``NodeInfo.memo.get(key, UNKNOWN)`` returns for nothing remembered (None is a
# verdict: "fits").
UNKNOWN: Any = object()
# Entries (a few per pod shape: each plugin's, and the combined verdict and score row
# of the runner) remembered per node between two changes of the node.
MEMO_LIMIT = 24
REGION_LABELS = (LABEL_TOPOLOGY_REGION, LABEL_FAILURE_DOMAIN_BETA_REGION)


def zone_key(labels: dict[str, str]) -> str:
    """Upstream's GetZoneKey: region and zone together, "" when the node has neither."""
    region = next((labels[k] for k in REGION_LABELS if k in labels), "")
    zone = next((labels[k] for k in ZONE_LABELS if k in labels), "")
    if not region and not zone:
        return ""
    return f"{region}:\x00:{zone}"


class NodeInfo:
    """A node and the pods placed or assumed on it.

    ``name`` and ``zone`` are plain attributes, refreshed by ``set_node``: filters and
    scores read them for every node of every cycle.
    """

    __slots__ = (
        "_changes",
        "_index",
        "affinity_pods",
        "memo",
        "name",
        "node",
        "nonzero_cpu",
        "nonzero_memory",
        "pods",
        "ports",
        "requested",
        "zone",
    )

    def __init__(
        self, node: Node, index: PodIndex | None = None, changes: NodeChanges | None = None
    ) -> None:
        self.node = node
        self.name = node.meta.name
        self.zone = zone_key(node.meta.labels)
        self.pods: dict[str, Pod] = {}
        # Pods with inter-pod (anti-)affinity terms (upstream keeps the same list per
        # node), and the cluster's index of placed pods, kept as pods come and go.
        self.affinity_pods: dict[str, Pod] = {}
        self._index = index
        # The cluster's record of changed nodes (see ``node_changes``), told of every
        # change that empties the memo.
        self._changes = changes
        self.requested: dict[str, int] = {}
        self.nonzero_cpu = 0
        self.nonzero_memory = 0
        self.ports: dict[HostPort, int] = {}
        # What pure per-node functions (a resource fit, a resource score) computed for
        # a pod's requests since the node last changed; emptied by every change below.
        self.memo: dict[Hashable, Any] = {}

    def remember(self, key: Hashable, value: Any) -> Any:
        """Keep ``value`` until the node changes; a few pod shapes at a time at most."""
        memo = self.memo
        if len(memo) >= MEMO_LIMIT:
            memo.clear()
        memo[key] = value
        return value

    def _forget(self) -> None:
        """Empty the memo: the node changed."""
        self.memo = {}
        if self._changes is not None:
            self._changes.record(self.name)

    def set_node(self, node: Node) -> None:
        self._forget()
        self.node = node
        self.name = node.meta.name
        self.zone = zone_key(node.meta.labels)

    def add_pod(self, pod: Pod) -> None:
        """Count the pod here. Its fields are read before anything changes, so a view
        that cannot be counted (a damaged stored object) leaves the node as it was."""
        key = pod.meta.key
        requests = [(resource, amount + 0) for resource, amount in pod.requests.items()]
        ports = tuple(pod.host_ports)
        nonzero_cpu = pod.nonzero_cpu + 0
        nonzero_memory = pod.nonzero_memory + 0
        self._forget()
        if key in self.pods:
            self.remove_pod(key)
        self.pods[key] = pod
        requested = self.requested
        for resource, amount in requests:
            requested[resource] = requested.get(resource, 0) + amount
        self.nonzero_cpu += nonzero_cpu
        self.nonzero_memory += nonzero_memory
        for port in ports:
            self.ports[port] = self.ports.get(port, 0) + 1
        if pod.pod_affinity is not None:
            self.affinity_pods[key] = pod
        if self._index is not None:
            self._index.added(pod, self)

    def remove_pod(self, key: str) -> Pod | None:
        pod = self.pods.pop(key, None)
        if pod is None:
            return None
        self._forget()
        self.affinity_pods.pop(key, None)
        if self._index is not None:
            self._index.removed(pod, self)
        requested = self.requested
        for resource, amount in pod.requests.items():
            left = requested.get(resource, 0) - amount
            if left:
                requested[resource] = left
            else:
                requested.pop(resource, None)
        self.nonzero_cpu -= pod.nonzero_cpu
        self.nonzero_memory -= pod.nonzero_memory
        for port in pod.host_ports:
            count = self.ports.get(port, 0) - 1
            if count > 0:
                self.ports[port] = count
            else:
                self.ports.pop(port, None)
        return pod

    def port_conflict(self, want: HostPort) -> bool:
        """Upstream's HostPortInfo.CheckConflict: 0.0.0.0 overlaps every address."""
        for used in self.ports:
            if used.port != want.port or used.protocol != want.protocol:
                continue
            if want.ip == "0.0.0.0" or used.ip == "0.0.0.0" or used.ip == want.ip:
                return True
        return False
