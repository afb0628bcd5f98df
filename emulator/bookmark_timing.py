"""When kube-apiserver's watch cache sends a watcher a bookmark (the "apiserver" cadence).

kube-apiserver does not bookmark a watcher the moment one is due. Each resource's cacher
keeps its bookmark-wanting watchers in buckets one second wide, counted from when the
cacher was created, and a timer that fires every second plus up to a quarter second of
jitter pops every bucket whose second has begun and sends those watchers a bookmark. A
watcher's bookmark is due (``next_bookmark_time``):

- two seconds before its deadline (the request's ``timeoutSeconds``), when that comes
  before a minute from now — and never once that moment has passed;
- else a minute from now (the bookmark frequency);
- at once (the first bucket still to come) while a ``sendInitialEvents`` watch still
  owes its client the bookmark that ends the initial events.

After each pop the watcher is filed again from that moment, so a watch of 3 s is due at
1 s, is bookmarked at the first tick in or after that second's bucket — anywhere from
the start of the second to about 1.25 s after it — and may get a second bookmark at the
next tick when the first pop came before its due time. A bookmark is sent only when its
resourceVersion is past what the watcher has seen (or equal, for the initial-events
end), so a watch resumed at the cache's current version gets none until something moves.
The emulator computes the same delivery moments from each resource's tick schedule
(``ResourceTicks``) instead of running one timer task per resource.
"""

from __future__ import annotations

import bisect
import math
import random
from collections.abc import Hashable

# kube-apiserver's cacher: defaultBookmarkFrequency.
BOOKMARK_FREQUENCY_SECONDS = 60.0
# Bookmarked this long before the watch's deadline.
PRE_TIMEOUT_BOOKMARK_SECONDS = 2.0
# The cacher's bookmark timer: wait.Jitter(time.Second, 0.25).
TICK_SECONDS = 1.0
TICK_JITTER = 0.25
# A bucket before every real one: "as soon as possible".
AT_ONCE = -math.inf

CADENCES = ("interval", "apiserver")


def next_bookmark_time(
    now: float,
    deadline: float | None,
    frequency_seconds: float = BOOKMARK_FREQUENCY_SECONDS,
    initial_events_end_pending: bool = False,
) -> float | None:
    """When a watcher filed at ``now`` is next due a bookmark (``AT_ONCE`` for the
    first bucket to come), or None when it is due none any more."""
    if initial_events_end_pending:
        return AT_ONCE
    heartbeat = now + frequency_seconds
    if deadline is None:
        return heartbeat
    pre_timeout = deadline - PRE_TIMEOUT_BOOKMARK_SECONDS
    due = min(heartbeat, pre_timeout)
    return None if due < now else due


def bookmark_bucket(due: float, created: float) -> int:
    """The one-second bucket (counted from the cacher's creation) a due time is filed in;
    Go's integer division truncates toward zero, and "at once" is before every bucket."""
    if due == AT_ONCE:
        return -(2**62)
    return math.trunc(due - created)


class ResourceTicks:
    """The bookmark timer of one resource's cacher: when it fires, and which watchers'
    buckets each firing pops."""

    def __init__(self, created: float, rng: random.Random) -> None:
        self.created = created
        self._rng = rng
        self._ticks: list[float] = []
        self._last = created

    def _extend_past(self, moment: float) -> None:
        while self._last <= moment:
            self._last += TICK_SECONDS * (1 + TICK_JITTER * self._rng.random())
            self._ticks.append(self._last)

    def delivery(self, due: float, now: float) -> float:
        """When a watcher filed at ``now`` with this due time gets its bookmark: the
        first firing after ``now`` whose second (since creation) has reached the due
        time's bucket. That may be up to a second before ``due``."""
        bucket = bookmark_bucket(due, self.created)
        earliest = max(now, self.created + bucket)
        self._extend_past(earliest + 2 * TICK_SECONDS)
        index = bisect.bisect_right(self._ticks, now)
        index = max(index, bisect.bisect_left(self._ticks, earliest))
        # Ticks before ``now`` are never needed again (``now`` only moves forward).
        stale = bisect.bisect_left(self._ticks, now - 2 * TICK_SECONDS)
        if stale > 64:
            del self._ticks[:stale]
            index -= stale
        return self._ticks[index]


class ApiserverBookmarks:
    """The cachers' bookmark timers of one emulated API server, one per resource, all
    created when the server starts (each fires on its own jittered schedule)."""

    def __init__(
        self,
        created: float,
        rng: random.Random | None = None,
        frequency_seconds: float = BOOKMARK_FREQUENCY_SECONDS,
    ) -> None:
        self.created = created
        self.frequency_seconds = frequency_seconds
        self._rng = rng or random.Random()
        self._resources: dict[Hashable, ResourceTicks] = {}

    def ticks(self, resource: Hashable) -> ResourceTicks:
        found = self._resources.get(resource)
        if found is None:
            found = ResourceTicks(self.created, random.Random(self._rng.random()))
            self._resources[resource] = found
        return found

    def next_delivery(
        self,
        resource: Hashable,
        now: float,
        deadline: float | None,
        initial_events_end_pending: bool = False,
    ) -> float | None:
        """When a watcher of ``resource`` filed at ``now`` is next sent a bookmark."""
        due = next_bookmark_time(now, deadline, self.frequency_seconds, initial_events_end_pending)
        if due is None:
            return None
        return self.ticks(resource).delivery(due, now)
