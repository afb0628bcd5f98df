"""What keeps volsched's events from flooding the API server: the counting, aggregating
and rate limiting that client-go's core/v1 event recorder (``tools/record``, its
``EventCorrelator``) does for kube-scheduler.

A pod that stays unschedulable is tried again and again, and each attempt reports a
``FailedScheduling`` event. Written as they come, 400 such pods leave thousands of Event
objects in a few minutes — load on etcd, and noise in ``kubectl describe``. Each event
goes through three steps instead, in upstream's order:

1. **Aggregate.** Events about one object from one source with the same type and reason
   but different messages are similar. Once ten different messages have been seen within
   ten minutes of each other, every further similar event is written as one event whose
   message is ``(combined from similar events): `` and the latest message.
2. **Count.** An event identical to one already written (same source, object, type,
   reason and message) is not created again: the existing event is patched with
   ``count`` + 1, the new ``lastTimestamp`` and the message. There is no time limit;
   when the API server has dropped the event meanwhile (its event TTL), the patch
   answers 404 and the event is created again, with its count.
3. **Rate-limit.** Each source may write 25 events about one object at once, then one
   more every five minutes (a token bucket per source and object). An event over the
   limit is not written, but it is counted: the next event written carries the total.

State is kept for the 4096 most recently seen keys of each step, as upstream keeps it.
Event names are chosen here and patches carry no resourceVersion, so nothing from the API
server's answer needs remembering. Pure: no I/O; time comes from the injected clock.
"""

from __future__ import annotations

import secrets
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

Raw = dict[str, Any]
Key = tuple[str, ...]
K = TypeVar("K")
V = TypeVar("V")

MAX_ENTRIES = 4096
# Ten different messages within ten minutes of each other, and similar events are combined.
AGGREGATE_MAX_MESSAGES = 10
AGGREGATE_INTERVAL_SECONDS = 600.0
COMBINED_PREFIX = "(combined from similar events): "
# 25 events per source and object at once, then one every five minutes.
SPAM_BURST = 25
SPAM_REFILL_PER_SECOND = 1.0 / 300.0


def event_name(object_name: str) -> str:
    """A new event's name: the object's, a dot, a random suffix (as upstream, unique)."""
    return f"{object_name}.{secrets.token_hex(8)}"


class Recent(Generic[K, V]):
    """The ``size`` most recently used entries; the least recent is forgotten first."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        value = self._entries.get(key)
        if value is not None:
            self._entries.move_to_end(key)
        return value

    def put(self, key: K, value: V) -> None:
        self._entries[key] = value
        self._entries.move_to_end(key)
        while len(self._entries) > self.size:
            self._entries.popitem(last=False)

    def __len__(self) -> int:
        return len(self._entries)


@dataclass(slots=True)
class TokenBucket:
    """``burst`` tokens to start with, refilled continuously at ``rate`` per second."""

    tokens: float
    updated: float

    def take(self, now: float, rate: float, burst: int) -> bool:
        elapsed = max(0.0, now - self.updated)
        self.tokens = min(float(burst), self.tokens + elapsed * rate)
        self.updated = max(self.updated, now)
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return True
        return False


@dataclass(slots=True)
class Similar:
    """The messages seen lately among similar events, and when the last one came."""

    messages: set[str] = field(default_factory=set)
    last_seen: float = 0.0


@dataclass(frozen=True, slots=True)
class Written:
    """An event as last written: its name, count and first timestamp."""

    name: str
    count: int
    first_timestamp: Any


@dataclass(frozen=True, slots=True)
class Correlated:
    """What to write: the whole event, and for an event written before, the patch that
    updates it (used first; the whole event is created when the patch finds nothing)."""

    event: Raw
    patch: Raw | None


def _mapping(event: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = event.get(name)
    return value if isinstance(value, Mapping) else {}


def _text(mapping: Mapping[str, Any], name: str) -> str:
    value = mapping.get(name)
    return "" if value is None else str(value)


def _source_and_object(event: Mapping[str, Any]) -> Key:
    source = _mapping(event, "source")
    involved = _mapping(event, "involvedObject")
    return (
        _text(source, "component"),
        _text(source, "host"),
        _text(involved, "kind"),
        _text(involved, "namespace"),
        _text(involved, "name"),
        _text(involved, "uid"),
        _text(involved, "apiVersion"),
    )


def spam_key(event: Mapping[str, Any]) -> Key:
    """Whose bucket an event takes a token from: its source and object."""
    return _source_and_object(event)


def similar_key(event: Mapping[str, Any]) -> Key:
    """Events that differ only in their message share this key."""
    return (
        "similar",
        *_source_and_object(event),
        _text(event, "type"),
        _text(event, "reason"),
        _text(event, "reportingComponent"),
        _text(event, "reportingInstance"),
    )


def identical_key(event: Mapping[str, Any]) -> Key:
    """Events that are the same event again share this key (the field path counts too)."""
    return (
        "identical",
        *_source_and_object(event),
        _text(_mapping(event, "involvedObject"), "fieldPath"),
        _text(event, "type"),
        _text(event, "reason"),
        _text(event, "message"),
    )


class EventCorrelator:
    """Decides, for each event volsched reports, whether and how it is written."""

    def __init__(
        self,
        clock: Callable[[], float],
        max_entries: int = MAX_ENTRIES,
        burst: int = SPAM_BURST,
        refill_per_second: float = SPAM_REFILL_PER_SECOND,
    ) -> None:
        self.clock = clock
        self.burst = burst
        self.refill_per_second = refill_per_second
        self._similar: Recent[Key, Similar] = Recent(max_entries)
        self._written: Recent[Key, Written] = Recent(max_entries)
        self._buckets: Recent[Key, TokenBucket] = Recent(max_entries)

    def correlate(self, event: Raw) -> Correlated | None:
        """The write for ``event``, or None when its source and object are over the limit."""
        now = self.clock()
        event, key = self._aggregate(event, now)
        event, patch = self._count(event, key)
        if not self._allowed(event, now):
            return None
        return Correlated(event, patch)

    def _aggregate(self, event: Raw, now: float) -> tuple[Raw, Key]:
        """The event to count, and the key it is counted under."""
        key = similar_key(event)
        similar = self._similar.get(key)
        if similar is None or now - similar.last_seen > AGGREGATE_INTERVAL_SECONDS:
            similar = Similar()
        similar.messages.add(_text(event, "message"))
        similar.last_seen = now
        self._similar.put(key, similar)
        if len(similar.messages) < AGGREGATE_MAX_MESSAGES:
            return event, identical_key(event)
        # Keep the set below the limit, so every later similar event is combined too.
        similar.messages.pop()
        combined = dict(event)
        combined["metadata"] = {
            **_mapping(event, "metadata"),
            "name": event_name(_text(_mapping(event, "involvedObject"), "name")),
        }
        combined["message"] = COMBINED_PREFIX + _text(event, "message")
        return combined, key

    def _count(self, event: Raw, key: Key) -> tuple[Raw, Raw | None]:
        """The event with its count so far, and the patch when it was written before."""
        before = self._written.get(key)
        patch = None
        if before is not None:
            event = dict(event)
            event["metadata"] = {**_mapping(event, "metadata"), "name": before.name}
            event["firstTimestamp"] = before.first_timestamp
            event["count"] = before.count + 1
            patch = {
                "count": event["count"],
                "lastTimestamp": event.get("lastTimestamp"),
                "message": event.get("message"),
            }
        name = _text(_mapping(event, "metadata"), "name")
        count = event.get("count")
        self._written.put(
            key,
            Written(name, count if isinstance(count, int) else 1, event.get("firstTimestamp")),
        )
        return event, patch

    def _allowed(self, event: Raw, now: float) -> bool:
        key = spam_key(event)
        bucket = self._buckets.get(key)
        if bucket is None:
            bucket = TokenBucket(float(self.burst), now)
        allowed = bucket.take(now, self.refill_per_second, self.burst)
        self._buckets.put(key, bucket)
        return allowed
