"""PreEnqueue's side of the queue: the pods a check keeps out of the active queue.

A held pod is never attempted. It is checked again whenever it would become active — it
changed, its backoff ended, an event moved it — and, for a check other than scheduling
gates, on each cluster event the holding plugin registered for (a ResourceClaim made, for
DynamicResources). Only a gated pod is reported (its ``SchedulingGated`` condition):
upstream says nothing about a pod another check holds.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.events import ClusterEvent
from volsched.scheduling.framework.pre_enqueue import Hold
from volsched.scheduling.framework.requeue import RequeueTable


@dataclass(slots=True)
class QueuedPod:
    pod: Pod
    attempts: int = 0
    failed_plugins: frozenset[str] = frozenset()
    unschedulable_since: float = 0.0
    backoff_until: float = 0.0
    # The PreEnqueue check that keeps it out of the active queue, while one does.
    held: Hold | None = None


class HeldPods:
    def __init__(self, hold: Callable[[Pod], Hold | None]) -> None:
        # The profiles' PreEnqueue checks (scheduling gates alone without profiles).
        self._hold = hold
        self._entries: dict[str, QueuedPod] = {}
        # Told of a pod newly held for its gates (its condition is written), and of
        # any other hold as it starts or changes (the decisions page shows it).
        self.on_gated: Callable[[Pod], None] | None = None
        self.on_held: Callable[[Pod, Hold], None] | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key: str) -> bool:
        return key in self._entries

    def check(self, entry: QueuedPod) -> tuple[bool, bool]:
        """PreEnqueue, run as upstream runs it whenever a pod would become active:
        whether a check holds the pod (it then waits here), and whether it just came."""
        held = self._hold(entry.pod)
        if held is None:
            self.release(entry)
            return False, False
        return True, self._keep(entry, held)

    def _keep(self, entry: QueuedPod, held: Hold) -> bool:
        newly_gated = held.gated and (entry.held is None or not entry.held.gated)
        changed = held != entry.held
        entry.held = held
        key = entry.pod.meta.key
        arrived = key not in self._entries
        self._entries[key] = entry
        if newly_gated and self.on_gated is not None:
            self.on_gated(entry.pod)
        elif changed and not held.gated and self.on_held is not None:
            self.on_held(entry.pod, held)
        return arrived

    def release(self, entry: QueuedPod) -> None:
        entry.held = None
        self._entries.pop(entry.pod.meta.key, None)

    def forget(self, key: str) -> None:
        self._entries.pop(key, None)

    def gated_pods(self) -> list[Pod]:
        """The pods held for their scheduling gates."""
        return [e.pod for e in self._entries.values() if e.held is not None and e.held.gated]

    def helped_by(
        self, requeue: RequeueTable, event: ClusterEvent, old: Any, new: Any
    ) -> Iterator[QueuedPod]:
        """The held pods the event may let in: those whose holding plugin registered for
        it and whose hint agrees (only the pod's own update lifts a gate)."""
        for entry in list(self._entries.values()):
            held = entry.held
            if held is None or held.gated:
                continue
            if requeue.worth_requeueing(entry.pod, frozenset((held.plugin,)), event, old, new):
                yield entry
