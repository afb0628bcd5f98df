"""PodFitsHostPorts: a host port (ip, protocol, port) can be bound by one pod per node.

Upstream's NodePorts plugin. The node's ports in use are kept by ``NodeInfo``, whose
``port_conflict`` applies upstream's rule that ``0.0.0.0`` overlaps every address.
"""

from __future__ import annotations

from collections.abc import Collection

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import HostPort, Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.events import ADD, DELETE, NODE, POD, ClusterEventWithHint, on
from volsched.scheduling.framework.status import SKIP, SUCCESS, Status, unschedulable

REASON = "node(s) didn't have free ports for the requested pod ports"
_REJECTED = unschedulable(REASON)


def _overlap(used: HostPort, wanted: HostPort) -> bool:
    """``NodeInfo.port_conflict`` for one port in use."""
    if used.port != wanted.port or used.protocol != wanted.protocol:
        return False
    return "0.0.0.0" in (used.ip, wanted.ip) or used.ip == wanted.ip


class NodePorts:
    """Filter: every host port of the pod (containers and sidecars) must be free.

    The rejection is Unschedulable (not unresolvable): evicting the pod holding the port
    would free it. A pod without host ports skips the filter on every node.
    """

    name = "NodePorts"

    def __init__(self, cluster: ClusterCache) -> None:
        self.cluster = cluster
        self._key = f"PreFilter{self.name}"

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[Collection[str] | None, Status]:
        if not pod.host_ports:
            return None, SKIP
        state.write(self._key, pod.host_ports)
        return None, SUCCESS

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """Upstream's: a deleted pod frees its ports (a pod's ports never change), and
        a node added has all of them free."""
        return (on(POD, DELETE, self.after_pod_deleted), on(NODE, ADD))

    def after_pod_deleted(self, pod: Pod, old: Pod | None, new: Pod | None) -> bool:
        if old is None or not old.node_name:
            return False
        return any(_overlap(used, wanted) for used in old.host_ports for wanted in pod.host_ports)

    def filter_key(self, state: CycleState, pod: Pod) -> tuple[HostPort, ...]:
        """NodeLocalFilter: the ports the node's pods hold and those the pod wants."""
        return pod.host_ports

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        if not node.ports:
            return None
        wanted: tuple[HostPort, ...] | None = state.read(self._key)
        if wanted is None:
            wanted = pod.host_ports
        for port in wanted:
            if node.port_conflict(port):
                return _REJECTED
        return None
