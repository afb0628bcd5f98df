"""Where every pod is: bound by the API server, assumed by this scheduler, or pending.

The informer's pods and the assume layer for pods live together because each decides
what the other means: an assumed pod is counted on its node until the informer shows it
bound (then the informer copy takes over) or its binding expires or fails (then it is
pending again). Every change keeps the nodes' pod lists and a map of the pods placed on
each node name, known node or not, so a node listed after its pods takes them at once.
"""

from __future__ import annotations

from collections import defaultdict

from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod


class PodPlacement:
    """The pods, the pending ones, the assumed ones, and who is placed on which node."""

    def __init__(self, nodes: dict[str, NodeInfo]) -> None:
        self._nodes = nodes
        self.pods: dict[str, Pod] = {}
        self.pending: dict[str, Pod] = {}
        self.assumed_pods: dict[str, str] = {}
        # Bound pods the informer has not confirmed yet, and when to stop waiting.
        self.assumed_expiry: dict[str, float] = {}
        # Node name -> keys of the pods placed there (bound or assumed, not terminal),
        # whether or not the node is known yet: a node that arrives after its pods (a
        # relist lists pods and nodes at once) takes them without a scan of every pod.
        self.by_node: defaultdict[str, dict[str, None]] = defaultdict(dict)

    def node_added(self, info: NodeInfo) -> None:
        """Count on a node that just arrived the pods already placed on it."""
        for key in self.by_node.get(info.name, ()):
            info.add_pod(self.pods[key])

    # -- the informer's pods ---------------------------------------------------------

    def upsert(self, pod: Pod) -> None:
        key = pod.meta.key
        before = self._placement_of(key)
        self._put(key, pod)
        self._placed(key, before)

    def _put(self, key: str, pod: Pod) -> None:
        nodes = self._nodes
        old = self.pods.get(key)
        if old is not None:
            old_node = self._placed_on(old)
            if old_node and old_node in nodes:
                nodes[old_node].remove_pod(key)
        if pod.node_name and key in self.assumed_pods:
            # The binding is confirmed: the informer copy takes over from the assumption.
            del self.assumed_pods[key]
            self.assumed_expiry.pop(key, None)
        self.pods[key] = pod
        node = self._placed_on(pod)
        if node and node in nodes:
            nodes[node].add_pod(pod)
        if not pod.node_name and not pod.terminal and key not in self.assumed_pods:
            self.pending[key] = pod
        else:
            self.pending.pop(key, None)

    def delete(self, key: str) -> None:
        before = self._placement_of(key)
        self._drop(key)
        self._placed(key, before)

    def _drop(self, key: str) -> None:
        old = self.pods.pop(key, None)
        self.pending.pop(key, None)
        self.assumed_pods.pop(key, None)
        self.assumed_expiry.pop(key, None)
        if old is None:
            return
        nodes = self._nodes
        for info in nodes.values() if not old.node_name else [nodes.get(old.node_name)]:
            if info is not None and key in info.pods:
                info.remove_pod(key)

    # -- the assume layer ------------------------------------------------------------

    def assume(self, pod: Pod, node_name: str) -> None:
        """Count a pod on a node before its binding is confirmed."""
        key = pod.meta.key
        if key in self.assumed_pods:
            self.forget(key)  # one assumption per pod: never counted on two nodes
        before = self._placement_of(key)
        self.assumed_pods[key] = node_name
        self.pending.pop(key, None)
        self.pods.setdefault(key, pod)
        info = self._nodes.get(node_name)
        if info is not None:
            info.add_pod(pod)
        self._placed(key, before)

    def finish_binding(self, key: str, expires_at: float) -> None:
        """The pod's binding was written; keep the assumption until the informer shows
        the pod bound, or until ``expires_at`` (kube-scheduler's assumed-pod TTL)."""
        if key in self.assumed_pods:
            self.assumed_expiry[key] = expires_at

    def expire(self, now: float) -> list[tuple[str, str]]:
        """Forget assumed pods whose binding was never confirmed in time; returns each
        one's key and the node it was assumed on."""
        expired = [key for key, deadline in self.assumed_expiry.items() if deadline <= now]
        forgotten = []
        for key in expired:
            del self.assumed_expiry[key]
            node_name = self.assumed_pods.get(key, "")
            self.forget(key)
            forgotten.append((key, node_name))
        return forgotten

    def forget(self, key: str) -> bool:
        """Undo ``assume`` (the binding failed): the pod is pending again. False when
        the pod was not assumed (nothing changes)."""
        before = self._placement_of(key)
        node_name = self.assumed_pods.pop(key, None)
        self.assumed_expiry.pop(key, None)
        if node_name is None:
            return False
        info = self._nodes.get(node_name)
        if info is not None:
            info.remove_pod(key)
        pod = self.pods.get(key)
        if pod is not None and not pod.node_name and not pod.terminal:
            self.pending[key] = pod
        self._placed(key, before)
        return True

    # -- the placement map -----------------------------------------------------------

    def _placed_on(self, pod: Pod) -> str:
        if pod.terminal:
            return ""
        return pod.node_name or self.assumed_pods.get(pod.meta.key, "")

    def _placement_of(self, key: str) -> str:
        pod = self.pods.get(key)
        return self._placed_on(pod) if pod is not None else ""

    def _placed(self, key: str, before: str) -> None:
        """Keep ``by_node`` right after a change that may have moved pod ``key``
        (placed on ``before`` until then)."""
        after = self._placement_of(key)
        if after == before:
            return
        if before:
            placed = self.by_node[before]
            placed.pop(key, None)
            if not placed:
                del self.by_node[before]
        if after:
            self.by_node[after][key] = None
