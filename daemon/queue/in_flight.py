"""The pods between pop and outcome, and the cluster events that arrived meanwhile.

Upstream's queue keeps both (``inFlightPods``, ``inFlightEvents``): a pod is told apart
from a namesake created while it was in flight by its uid, and a pod found unschedulable
is checked against the events of its own cycle — an extender's answer may take a while —
before it is parked to wait for one.
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from typing import Any

from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.events import ClusterEvent

# Events are pruned once this many are kept and the oldest pod in flight has seen them.
PRUNE_AT = 1024


class InFlight:
    def __init__(self) -> None:
        # key → (the uid of the pod popped, the last event's number when it was popped)
        self._pods: dict[str, tuple[str, int]] = {}
        # The pods still in their scheduling cycle (not yet handed to binding): only they
        # can be found unschedulable, so events are kept only while there are some.
        self._deciding: set[str] = set()
        self._events: collections.deque[tuple[int, ClusterEvent, Any, Any]] = collections.deque()
        self._last = 0

    def __contains__(self, key: str) -> bool:
        return key in self._pods

    @property
    def deciding(self) -> bool:
        """Whether some pod is in its scheduling cycle (events then are kept)."""
        return bool(self._deciding)

    def popped(self, pod: Pod) -> None:
        self._pods[pod.meta.key] = (pod.meta.uid, self._last)
        self._deciding.add(pod.meta.key)

    def binding(self, key: str) -> None:
        """The pod's scheduling cycle ended in a decision; it binds now."""
        self._deciding.discard(key)
        self._forget_old_events()

    def event(self, event: ClusterEvent, old: Any, new: Any) -> None:
        """Called only while some pod is in flight, for events a plugin registered."""
        self._last += 1
        self._events.append((self._last, event, old, new))

    def helping_event(
        self, key: str, helps: Callable[[ClusterEvent, Any, Any], bool]
    ) -> str | None:
        """The label of an event since the pod's pop that ``helps`` says may make it
        schedulable, if any."""
        flight = self._pods.get(key)
        since = flight[1] if flight is not None else self._last
        for number, event, old, new in self._events:
            if number > since and helps(event, old, new):
                return event.label
        return None

    def finish(self, key: str, uid: str, queued_uid: str) -> bool:
        """The cycle of the pod ``uid`` (or, if not given, the one popped under ``key``)
        ended: whether the pod now queued under ``key`` is another one, created again
        under the name while this one was in flight."""
        flight = self._pods.pop(key, None)
        self._deciding.discard(key)
        self._forget_old_events()
        ended = uid or (flight[0] if flight is not None else "")
        return bool(ended and queued_uid and ended != queued_uid)

    def _forget_old_events(self) -> None:
        events = self._events
        if not events:
            return
        if not self._deciding:
            events.clear()
            return
        if len(events) < PRUNE_AT:
            return
        oldest = min(self._pods[key][1] for key in self._deciding if key in self._pods)
        while events and events[0][0] <= oldest:
            events.popleft()
