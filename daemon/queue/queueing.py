"""Where pending pods wait: an active queue, a backoff queue and an unschedulable pool.

After kube-scheduler's scheduling queue:

- **active**: ready to be decided, highest priority first, then oldest;
- **backoff**: failed recently; waits ``initial × 2^(attempts−1)`` seconds, capped;
- **unschedulable**: no node fits; waits for a cluster event that could change that
  or for the periodic flush (the safety net upstream keeps too). Which events move it
  is the profiles' requeue table: each plugin declares the events that can make a pod
  it rejected schedulable, with a hint that looks at the change itself.

Time is injected (``clock``), so tests move it by hand.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from volsched.cache.objects.core import Pod
from volsched.daemon.queue.held import HeldPods, QueuedPod
from volsched.daemon.queue.in_flight import InFlight
from volsched.scheduling.framework.events import ASSIGNED_POD_DELETE, ClusterEvent, as_placed
from volsched.scheduling.framework.pre_enqueue import Hold, hold_of
from volsched.scheduling.framework.requeue import RequeueTable


@dataclass(slots=True)
class QueueStats:
    incoming: dict[tuple[str, str], int] = field(default_factory=dict)

    def count(self, queue: str, event: str) -> None:
        self.incoming[(queue, event)] = self.incoming.get((queue, event), 0) + 1


class SchedulingQueue:
    def __init__(
        self,
        priority_of: Callable[[Pod], int],
        clock: Callable[[], float],
        backoff_initial_seconds: float = 1.0,
        backoff_max_seconds: float = 10.0,
        unschedulable_flush_seconds: float = 300.0,
        requeue: RequeueTable | None = None,
        hold: Callable[[Pod], Hold | None] = hold_of,
    ) -> None:
        self._priority_of = priority_of
        # Built from the profiles' plugins; without one no event moves anything (the
        # flush still does).
        self.requeue = requeue if requeue is not None else RequeueTable({})
        self._clock = clock
        self.backoff_initial = backoff_initial_seconds
        self.backoff_max = backoff_max_seconds
        self.unschedulable_flush = unschedulable_flush_seconds
        self._entries: dict[str, QueuedPod] = {}
        self._active: list[tuple[int, float, str, int]] = []
        self._active_keys: set[str] = set()
        self._backoff: dict[str, QueuedPod] = {}
        self._unschedulable: dict[str, QueuedPod] = {}
        # PreEnqueue: pods a check holds (scheduling gates, claims not there yet) wait
        # here, never in the active queue (``held.on_gated`` hears of gated ones).
        self.held = HeldPods(hold)
        # Pods popped and not yet done, requeued or failed, and the events meanwhile.
        self.in_flight = InFlight()
        self._seq = itertools.count()
        self._wakeup = asyncio.Event()
        self.stats = QueueStats()

    # -- sizes -----------------------------------------------------------------------

    def lengths(self) -> dict[str, int]:
        return {
            "active": len(self._active_keys),
            "backoff": len(self._backoff),
            "unschedulable": len(self._unschedulable),
            "gated": len(self.held),
        }

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    # -- arrivals --------------------------------------------------------------------

    def _push_active(self, entry: QueuedPod, event: str) -> None:
        key = entry.pod.meta.key
        self._backoff.pop(key, None)
        self._unschedulable.pop(key, None)
        if key in self._active_keys:
            return
        if self._held_back(entry, event):
            return
        pod = entry.pod
        heapq.heappush(
            self._active,
            (-self._priority_of(pod), pod.meta.creation_timestamp, key, next(self._seq)),
        )
        self._active_keys.add(key)
        self.stats.count("active", event)
        self._wakeup.set()

    def add(self, pod: Pod) -> None:
        """A new pending pod (or one seen again after a relist)."""
        key = pod.meta.key
        entry = self._entries.get(key)
        if entry is not None:
            entry.pod = pod
            return
        entry = QueuedPod(pod)
        self._entries[key] = entry
        if key in self.in_flight:
            self._held_back(entry, "PodAdd")
        else:
            self._push_active(entry, "PodAdd")

    def _held_back(self, entry: QueuedPod, event: str) -> bool:
        held, arrived = self.held.check(entry)
        if arrived:
            self.stats.count("gated", event)
        return held

    def update(self, pod: Pod) -> None:
        """A pending pod changed: an unschedulable one gets another chance now."""
        key = pod.meta.key
        entry = self._entries.get(key)
        if entry is None:
            self.add(pod)
            return
        entry.pod = pod
        if key in self.held:
            # The last gate removed, its claims named: checked again, active if let in.
            self._push_active(entry, "PodUpdate")
            return
        if key in self._unschedulable:
            self._move(entry, "PodUpdate")

    def delete(self, key: str) -> None:
        """The pod is gone or no longer pending (bound by someone, deleted)."""
        self._entries.pop(key, None)
        self._backoff.pop(key, None)
        self._unschedulable.pop(key, None)
        self.held.forget(key)
        self._active_keys.discard(key)

    # -- after a cycle ---------------------------------------------------------------

    def _finish(self, key: str, uid: str) -> QueuedPod | None:
        """The pod's entry, or None when the key now holds a namesake (which then goes
        to the active queue in its own right)."""
        entry = self._entries.get(key)
        replaced = self.in_flight.finish(key, uid, entry.pod.meta.uid if entry else "")
        if entry is None or not replaced:
            return entry
        if key not in self.held:
            self._push_active(entry, "PodAdd")
        return None

    def done(self, key: str, uid: str = "") -> None:
        """The pod's cycle (and binding) ended with the pod placed."""
        if self._finish(key, uid) is not None:
            self.delete(key)

    def _backoff_seconds(self, attempts: int) -> float:
        return min(self.backoff_initial * 2.0 ** max(attempts - 1, 0), self.backoff_max)

    def requeue_unschedulable(self, pod: Pod, failed_plugins: Iterable[str]) -> None:
        """Parked until an event may help, unless one during its cycle may have, or no
        plugin rejected it (an extender did): then after its backoff, as upstream."""
        key = pod.meta.key
        failed = frozenset(failed_plugins)
        hint = partial(self.requeue.worth_requeueing, pod, failed)
        helped = self.in_flight.helping_event(key, hint) if failed else None
        entry = self._finish(key, pod.meta.uid)
        if entry is None:
            return
        entry.pod = pod
        entry.attempts += 1
        now = self._clock()
        entry.failed_plugins = failed
        entry.unschedulable_since = now
        entry.backoff_until = now + self._backoff_seconds(entry.attempts)
        if not failed or helped is not None:
            self._backoff[key] = entry
            self.stats.count("backoff", helped or "ScheduleAttemptFailure")
            self._wakeup.set()
            return
        self._unschedulable[key] = entry
        self.stats.count("unschedulable", "ScheduleAttemptFailure")

    def requeue_error(self, pod: Pod) -> None:
        """A scheduler error or a failed binding: retry after backoff."""
        key = pod.meta.key
        entry = self._finish(key, pod.meta.uid)
        if entry is None:
            return
        entry.pod = pod
        entry.attempts += 1
        entry.backoff_until = self._clock() + self._backoff_seconds(entry.attempts)
        self._backoff[key] = entry
        self.stats.count("backoff", "ScheduleAttemptFailure")
        self._wakeup.set()

    # -- cluster events ----------------------------------------------------------------

    def _move(self, entry: QueuedPod, event: str) -> None:
        key = entry.pod.meta.key
        self._unschedulable.pop(key, None)
        if entry.backoff_until > self._clock():
            self._backoff[key] = entry
            self.stats.count("backoff", event)
            self._wakeup.set()
        else:
            self._push_active(entry, event)

    def on_cluster_event(self, event: ClusterEvent, old: Any = None, new: Any = None) -> int:
        """Move the unschedulable pods this event may help (``old`` and ``new``: the
        object before and after the change, for the plugins' hints); how many moved."""
        if self.in_flight.deciding and self.requeue.interested(event):
            self.in_flight.event(event, old, new)
        if not (self._unschedulable or self.held) or not self.requeue.interested(event):
            return 0
        moved = 0
        label = event.label
        for entry in self.held.helped_by(self.requeue, event, old, new):
            self._push_active(entry, label)
            moved += entry.pod.meta.key in self._active_keys
        for entry in list(self._unschedulable.values()):
            if self.requeue.worth_requeueing(entry.pod, entry.failed_plugins, event, old, new):
                self._move(entry, label)
                moved += 1
        return moved

    def assumed_pod_forgotten(self, pod: Pod, node_name: str) -> int:
        """An assumed pod was forgotten (its binding failed, or was never confirmed):
        what it held on the node is free, as if an assigned pod had been deleted
        (kube-scheduler's binding-cycle error handling sends the same event)."""
        return self.on_cluster_event(ASSIGNED_POD_DELETE, as_placed(pod, node_name), None)

    def flush(self) -> None:
        """Backoff that expired goes active; pods unschedulable too long get a retry."""
        now = self._clock()
        for key, entry in list(self._backoff.items()):
            if entry.backoff_until <= now:
                del self._backoff[key]
                self._push_active(entry, "BackoffComplete")
        for entry in list(self._unschedulable.values()):
            if now - entry.unschedulable_since >= self.unschedulable_flush:
                self._move(entry, "UnschedulableTimeout")

    def next_backoff_deadline(self) -> float | None:
        return min((e.backoff_until for e in self._backoff.values()), default=None)

    # -- taking pods -------------------------------------------------------------------

    def pop_ready(self) -> QueuedPod | None:
        """The next active pod, or None when the active queue is empty."""
        self.flush()
        while self._active:
            _, _, key, _ = heapq.heappop(self._active)
            if key not in self._active_keys:
                continue
            self._active_keys.discard(key)
            entry = self._entries.get(key)
            if entry is None:
                continue
            self.in_flight.popped(entry.pod)
            return entry
        return None

    async def pop(self, poll_seconds: float = 1.0) -> QueuedPod:
        """Wait for the next active pod (backoff expiries are noticed within a poll)."""
        while True:
            entry = self.pop_ready()
            if entry is not None:
                return entry
            self._wakeup.clear()
            deadline = self.next_backoff_deadline()
            wait = poll_seconds
            if deadline is not None:
                wait = max(0.0, min(wait, deadline - self._clock()))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wakeup.wait(), timeout=wait)
