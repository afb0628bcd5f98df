"""What keeps volsched's events from flooding the API server: events.k8s.io/v1 Events
with an EventSeries, built as client-go's events recorder (``tools/events``, the one
kube-scheduler 1.36 uses) builds them.

A pod that stays unschedulable is tried again and again, and each attempt reports a
``FailedScheduling``. Written as they come, 400 such pods would leave thousands of Event
objects in a few minutes. Instead:

1. **The first occurrence** of an event is created as it is.
2. **The same event again** — same type, action, reason, reporting controller and
   instance, and regarding object; the note may differ — turns the first into a series:
   it is patched at once with ``series: {count: 2, lastObservedTime}``.
3. **Later repeats** only count, in memory: no write.
4. **A heartbeat** writes the counts. Every 30 minutes each open series is patched with
   its count and last observed time (which also keeps it alive past the API server's
   event TTL); every 6 minutes a series not observed for 6 minutes is finished — its
   final count patched — and forgotten, and an event that never repeated is forgotten
   after 6 minutes. A forgotten event that happens again starts a new Event object.

A patch that finds its event gone (the TTL) creates it whole, with its series. The note
stays the first occurrence's: events.k8s.io allows an update to change only the series.
Unlike kube-scheduler, whose ``regarding`` carries the pod's resourceVersion — so its
first failure, followed by the PodScheduled condition's write, and the later ones are two
series — volsched's names the pod without it: one Event per pod and reason.

Pure: no I/O; time comes from the injected clock.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

Raw = dict[str, Any]
Key = tuple[str, ...]

# client-go's finishTime and refreshTime.
FINISH_SECONDS = 6 * 60.0
REFRESH_SECONDS = 30 * 60.0
REGARDING_FIELDS = ("apiVersion", "kind", "namespace", "name", "uid", "fieldPath")


def event_name(object_name: str) -> str:
    """A new event's name: the object's, a dot, a random suffix (unique even when two
    events about one pod come at the same instant of a frozen clock)."""
    return f"{object_name}.{secrets.token_hex(8)}"


def micro_time(seconds: float) -> str:
    """A metav1.MicroTime: RFC 3339 with exactly six fractional digits."""
    moment = datetime.fromtimestamp(seconds, UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond:06d}Z"


def _text(mapping: Mapping[str, Any], name: str) -> str:
    value = mapping.get(name)
    return "" if value is None else str(value)


def _reference(event: Mapping[str, Any], name: str) -> Key:
    value = event.get(name)
    reference = value if isinstance(value, Mapping) else {}
    return tuple(_text(reference, part) for part in REGARDING_FIELDS)


def isomorphic_key(event: Mapping[str, Any]) -> Key:
    """Events that are the same event again share this key (the note is not part of it)."""
    return (
        _text(event, "type"),
        _text(event, "action"),
        _text(event, "reason"),
        _text(event, "reportingController"),
        _text(event, "reportingInstance"),
        *_reference(event, "regarding"),
        *_reference(event, "related"),
    )


@dataclass(slots=True)
class Recorded:
    """An event as first written, and its series once it repeated."""

    event: Raw
    first_seen: float
    count: int = 1
    last_observed: float = 0.0

    def with_series(self) -> Raw:
        event = dict(self.event)
        event["series"] = self.series()
        return event

    def series(self) -> Raw:
        return {"count": self.count, "lastObservedTime": micro_time(self.last_observed)}


@dataclass(frozen=True, slots=True)
class Write:
    """What to send: the whole event, and for a series the patch that updates it (sent
    first; the whole event is created when the patch finds nothing)."""

    event: Raw
    patch: Raw | None


class EventSeriesBook:
    """The events recorded lately, and what each occurrence or heartbeat must write."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self._recorded: dict[Key, Recorded] = {}
        started = clock()
        self._next_finish = started + FINISH_SECONDS
        self._next_refresh = started + REFRESH_SECONDS

    def __len__(self) -> int:
        return len(self._recorded)

    def record(self, event: Raw) -> Write | None:
        """The write for one occurrence of ``event``, or None when it is only counted."""
        now = self.clock()
        key = isomorphic_key(event)
        known = self._recorded.get(key)
        if known is None:
            self._recorded[key] = Recorded(event, now)
            return Write(event, None)
        known.count += 1
        known.last_observed = now
        if known.count > 2:
            return None
        return self._series_write(known)

    def heartbeat(self) -> list[Write]:
        """The writes due by now: finished series (then forgotten) every 6 minutes, every
        open series every 30 minutes. Call it often; it does each only when due."""
        now = self.clock()
        writes: list[Write] = []
        if now >= self._next_finish:
            self._next_finish = now + FINISH_SECONDS
            for key, known in list(self._recorded.items()):
                if known.count > 1 and known.last_observed < now - FINISH_SECONDS:
                    writes.append(self._series_write(known))
                    del self._recorded[key]
                elif known.count == 1 and known.first_seen < now - FINISH_SECONDS:
                    del self._recorded[key]
        if now >= self._next_refresh:
            self._next_refresh = now + REFRESH_SECONDS
            writes += [self._series_write(k) for k in self._recorded.values() if k.count > 1]
        return writes

    def next_heartbeat(self) -> float:
        """When ``heartbeat`` next has something to do, on the injected clock."""
        return min(self._next_finish, self._next_refresh)

    @staticmethod
    def _series_write(known: Recorded) -> Write:
        return Write(known.with_series(), {"series": known.series()})
