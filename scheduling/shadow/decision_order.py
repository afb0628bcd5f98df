"""The order the other scheduler decided its pods in, rebuilt from their queue order.

kube-scheduler decides one pod at a time but binds each in a goroutine of its own, so
its bindings reach the watch out of decision order: a pod decided first may be bound
last. Judged when its binding arrives, such a pod would meet a cluster that already
holds pods decided after it, and lack pods decided before it. The shadow cannot see
decisions, only bindings, so it approximates them from the order upstream's queue pops
pods in (priority, then the time each entered the queue — ``queue_order``):

- a binding is *held* while a pod ahead of it in that order, which volsched would
  place, is still pending — for at most ``HOLD_SECONDS``, the time a binding goroutine
  takes at most in practice;
- when the pod is judged, pods bound since it was first seen pending that come after it
  in the order (and the pod itself, if its binding is in the cache by then) are taken
  out of the cache for that one decision.

What this cannot rebuild: a pod that failed a cycle and was retried later was decided
after pods behind it in the queue.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.core import Pod
from volsched.scheduling.queue_order import queue_key

HOLD_SECONDS = 2.0
# Bindings remembered for taking out: a pod pending longer than this was decided long
# after the ones it could be mixed up with.
REMEMBER_SECONDS = 120.0

Order = tuple[int, float, int]


@dataclass(frozen=True, slots=True)
class Held:
    """A binding waiting for the pods decided before it."""

    pod: Pod
    node: str
    until: float
    # For a claim pod held from its PreBind write: claim key → the PV that write named.
    volumes: dict[str, str] | None = None


class DecisionOrder:
    """Where each shadowed pod stood in the queue, and when each was bound."""

    def __init__(self, monotonic: Callable[[], float]) -> None:
        self.monotonic = monotonic
        # Pending pods seen: their queue position and when they were first seen.
        self._seen: dict[str, tuple[Order, float]] = {}
        # Pods whose binding arrived: their queue position and when it arrived.
        self._bound: dict[str, tuple[Order, float]] = {}
        self.held: dict[str, Held] = {}

    def seen(self, cluster: ClusterCache, pod: Pod) -> None:
        key = pod.meta.key
        if key not in self._seen:
            self._seen[key] = (queue_key(cluster, pod), self.monotonic())

    def forget(self, key: str) -> None:
        """The pod is gone or judged; what it was bound as stays for ``decided_after``."""
        self._seen.pop(key, None)
        self.held.pop(key, None)

    def bound(self, key: str) -> None:
        """The pod was decided: its binding (or its volumes' PreBind write) arrived."""
        seen = self._seen.get(key)
        if seen is not None and key not in self._bound:
            self._bound[key] = (seen[0], self.monotonic())

    def hold(self, pod: Pod, node: str, volumes: dict[str, str] | None = None) -> None:
        self.held[pod.meta.key] = Held(pod, node, self.monotonic() + HOLD_SECONDS, volumes)

    def releasable(
        self, placeable: Callable[[str], bool], complete: Callable[[Pod], bool]
    ) -> list[Held]:
        """The held bindings to judge now, in queue order: those no pending pod is
        ahead of (one volsched cannot place the other scheduler may never bind either)
        and whose objects the cache holds (``complete``), and those that waited long
        enough."""
        now = self.monotonic()
        front = min(
            (
                order
                for key, (order, _) in self._seen.items()
                if key not in self._bound and key not in self.held and placeable(key)
            ),
            default=None,
        )
        ready = [
            held
            for key, held in self.held.items()
            if held.until <= now
            or ((front is None or self._order(key) <= front) and complete(held.pod))
        ]
        ready.sort(key=lambda held: self._order(held.pod.meta.key))
        for held in ready:
            del self.held[held.pod.meta.key]
        return ready

    def _order(self, key: str) -> Order:
        seen = self._seen.get(key)
        return seen[0] if seen is not None else (0, 0.0, 0)

    def decided_after(self, key: str) -> list[str]:
        """Pods bound since ``key`` was first seen pending that come after it in the
        queue: decided after it, though bound first."""
        seen = self._seen.get(key)
        if seen is None:
            return []
        order, first_seen = seen
        after = []
        # Newest binding first (insertion order is arrival order): only the bindings
        # since the pod was first seen are read.
        for other in reversed(self._bound):
            other_order, bound_at = self._bound[other]
            if bound_at < first_seen:
                break
            if other != key and other_order > order:
                after.append(other)
        return after

    def prune(self) -> None:
        oldest = self.monotonic() - REMEMBER_SECONDS
        while self._bound:
            key = next(iter(self._bound))
            if self._bound[key][1] >= oldest:
                break
            del self._bound[key]


@contextmanager
def without_pods(cluster: ClusterCache, keys: list[str]) -> Iterator[None]:
    """The cache with the pods ``keys`` taken out for one decision — bound ones, and
    ones counted on a node while their volumes are bound — put back as they were after."""
    removed: list[Pod] = []
    unassumed: list[tuple[Pod, str, float | None]] = []
    for key in keys:
        pod = cluster.pods.get(key)
        if pod is None:
            continue
        node = cluster.assumed_pods.get(key)
        if node is not None:
            unassumed.append((pod, node, cluster.assumed_expiry.get(key)))
            cluster.forget_pod(key)
        elif pod.node_name:
            cluster.delete("Pod", key)
            removed.append(pod)
    try:
        yield
    finally:
        for pod in removed:
            cluster.upsert("Pod", pod)
        for pod, node, expiry in unassumed:
            cluster.assume_pod(pod, node)
            if expiry is not None:
                cluster.finish_binding(pod.meta.key, expiry)
