"""Pods nominated to a node by an earlier preemption, as a filter run sees them.

A nominated pod has not been bound yet, but the node was cleared for it; pods of lower
priority must not take its room meanwhile. Upstream's rule: when filtering a pod on a
node, the pods nominated there with a priority higher or equal to its own count as if
they already ran. The node must fit with them, and — because a nominated pod may land
elsewhere in the end — also without them.
"""

from __future__ import annotations

from collections.abc import Callable, Container, Iterable, Mapping
from typing import TypeVar

from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.pod_changes import add_pod
from volsched.scheduling.framework.profile import Profile

R = TypeVar("R")


class NominatedPods:
    """Which pods are nominated to which node (the scheduler queue's nominator)."""

    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, Pod]] = {}
        self._node_of: dict[str, str] = {}

    def nominate(self, pod: Pod, node_name: str) -> None:
        self.forget(pod.meta.key)
        if not node_name:
            return
        self._by_node.setdefault(node_name, {})[pod.meta.key] = pod
        self._node_of[pod.meta.key] = node_name

    def forget(self, key: str) -> None:
        node_name = self._node_of.pop(key, None)
        if node_name is None:
            return
        pods = self._by_node.get(node_name, {})
        pods.pop(key, None)
        if not pods:
            self._by_node.pop(node_name, None)

    def node_of(self, key: str) -> str:
        return self._node_of.get(key, "")

    def on_node(self, node_name: str) -> Mapping[str, Pod]:
        return self._by_node.get(node_name, {})

    @property
    def nodes(self) -> Mapping[str, Mapping[str, Pod]]:
        """The nodes some pod is nominated to (a membership test per node is cheap)."""
        return self._by_node

    def follow(self, key: str, pod: Pod | None, ours: bool) -> None:
        """The informer's word on one pod, as upstream's nominator takes it: a pod
        deleted, bound, finished or no longer ours leaves; an unbound pod of ours with
        ``status.nominatedNodeName`` is nominated there (at start and on failover that
        rebuilds the nominations). An update without the field keeps a nomination made
        in memory (the write of it may not have come back yet), with the newer pod."""
        if pod is None or not ours or pod.node_name or pod.terminal:
            self.forget(key)
        elif pod.nominated_node_name:
            self.nominate(pod, pod.nominated_node_name)
        elif key in self._node_of:
            self.nominate(pod, self._node_of[key])


def clone_node(info: NodeInfo, without: Iterable[str] = (), adding: Iterable[Pod] = ()) -> NodeInfo:
    """A copy of a node's state with some pods removed and others added; the cache's own
    node is never touched."""
    removed = set(without)
    copy = NodeInfo(info.node)
    for key, pod in info.pods.items():
        if key not in removed:
            copy.add_pod(pod)
    for pod in adding:
        copy.add_pod(pod)
    return copy


def nominated_above(
    info: NodeInfo,
    pod: Pod,
    nominated: NominatedPods | None,
    priority_of: Callable[[Pod], int],
    pending: Container[str] | None = None,
) -> list[Pod]:
    """The pods nominated to this node that outrank or equal ``pod`` and are not on it
    yet. With ``pending``, only nominated pods still waiting count: one bound or deleted
    since holds nothing."""
    if nominated is None:
        return []
    own = priority_of(pod)
    return [
        other
        for key, other in nominated.on_node(info.name).items()
        if key != pod.meta.key
        and key not in info.pods
        and (pending is None or key in pending)
        and priority_of(other) >= own
    ]


def with_nominated_state(
    profile: Profile,
    state: CycleState,
    info: NodeInfo,
    pod: Pod,
    nominated: NominatedPods | None,
    priority_of: Callable[[Pod], int],
    pending: Container[str] | None = None,
) -> tuple[NodeInfo, CycleState] | None:
    """Upstream's addGENominatedPods: the node with those nominated pods, and a clone of
    the cycle state that counts them (their affinity, anti-affinity and spread matter
    as if they ran there); None when there are none."""
    extra = nominated_above(info, pod, nominated, priority_of, pending)
    if not extra:
        return None
    crowded = clone_node(info, adding=extra)
    crowded_state = state.clone()
    for other in extra:
        add_pod(profile, crowded_state, pod, other, crowded)
    return crowded, crowded_state


def judge_with_nominated(
    judge: Callable[[CycleState, NodeInfo], R | None],
    profile: Profile,
    state: CycleState,
    info: NodeInfo,
    pod: Pod,
    nominated: NominatedPods | None,
    priority_of: Callable[[Pod], int],
    pending: Container[str],
) -> R | None:
    """Upstream's RunFilterPluginsWithNominatedPods, the one routine for the scheduling
    cycle, the preemption dry run and the extender's preempt verb: ``judge`` (the
    filters, returning a rejection or None) on the node with the still-pending pods
    nominated there that outrank or equal ``pod``, counted in a clone of the cycle
    state, then on the node as it is (they may land elsewhere in the end)."""
    crowded = with_nominated_state(profile, state, info, pod, nominated, priority_of, pending)
    if crowded is not None:
        crowded_info, crowded_state = crowded
        rejection = judge(crowded_state, crowded_info)
        if rejection is not None:
            return rejection
    return judge(state, info)
