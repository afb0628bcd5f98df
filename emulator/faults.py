"""Fault injection, for testing how a client copes with a misbehaving API server.

``cut_watches`` ends every open watch now (cleanly, as a server-side timeout does, or
abruptly, dropping the connection mid-stream); ``stall_watches`` keeps streams open but
silent — no events, no bookmarks — for a while, then delivers what queued up (a stream
whose timeoutSeconds comes first still ends then, unless the stall is ``past_timeout``:
a server that stopped serving its streams but keeps their connections open);
``freeze_bookmarks`` makes bookmarks carry the revision of that moment, as a watch cache
does that has not heard from etcd since (a resource nobody writes, on a server whose
cache nothing has asked to catch up); ``suppress_bookmarks`` sends none at all, as
kube-apiserver does for a resource nobody writes when etcd reports no progress (etcd's
progress-notify is off by default);
``compact`` forgets history so the next resume gets 410 Expired; ``fail_next`` answers
the next requests matching a method and a regular expression (searched in the path with
its query string) with an error Status instead of serving them; ``delay_next`` serves
them only after a while, as a busy server does.  ``request_log`` records every request's
method, path, query and status, so a test can assert what a client did.

``garble`` serves a placeholder string value as other bytes wherever it appears in a
watch event or a list body: what a strict encoder here cannot write and the client must
survive (a number of thousands of digits, a lone surrogate, nesting thousands of levels
deep, as a custom resource that preserves unknown fields may hold).

``trip`` arms a tripwire on writes (POST, PUT, PATCH, DELETE): on the n-th write it
matches, its action runs either just before the write is served — the write is then
refused with 503 and never applied — or just after the write was applied, before the
answer is sent.  A crash test's action kills the client there, so the client dies with
the write not made, or made but never acknowledged.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from volsched.emulator.store import Store


@dataclass(frozen=True, slots=True)
class RequestRecord:
    method: str
    path: str
    status: int
    query: str = ""
    # When the request arrived (time.monotonic()), to order it against a client's clock;
    # not part of what the request was.
    received: float = field(default=0.0, compare=False)


@dataclass(slots=True)
class InjectedFailure:
    method: str
    pattern: re.Pattern[str]
    status: int
    remaining: int
    message: str


@dataclass(slots=True)
class InjectedDelay:
    method: str
    pattern: re.Pattern[str]
    seconds: float
    remaining: int


WRITE_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


@dataclass(frozen=True, slots=True)
class WriteRequest:
    """A write as a tripwire sees it; ``body`` is the parsed JSON (None if not JSON)."""

    method: str
    path: str
    body: Any


# Called with the write and, for a tripwire that fires after the write, the status it
# was answered with (None before).  The server cancels a request's handler when its
# connection drops, so an action that kills the client may be cancelled at its first
# await: do what must happen before awaiting.
TripAction = Callable[[WriteRequest, int | None], Awaitable[None]]


@dataclass(slots=True, eq=False)
class Tripwire:
    """What ``trip`` armed: how many matching writes it has seen, and whether it fired."""

    matches: Callable[[WriteRequest], bool]
    action: TripAction
    nth: int
    after: bool
    seen: int = 0
    fired: bool = False


class Faults:
    # A long-running demo must not grow without bound: the oldest records go first.
    request_log_limit = 50_000

    def __init__(self, store: Store) -> None:
        self._store = store
        self._failures: list[InjectedFailure] = []
        self._delays: list[InjectedDelay] = []
        self._tripwires: list[Tripwire] = []
        self._stalled_until = 0.0
        self._stall_past_timeout = False
        self._bookmarks_frozen_at: int | None = None
        self._bookmarks_suppressed = False
        self._garbles: list[tuple[bytes, bytes]] = []
        self.request_log: list[RequestRecord] = []

    def cut_watches(self, abrupt: bool = False) -> int:
        """End every open watch stream now; returns how many there were."""
        subscriptions = self._store.subscriptions()
        for subscription in subscriptions:
            subscription.end(abrupt=abrupt)
        return len(subscriptions)

    def stall_watches(self, seconds: float, *, past_timeout: bool = False) -> None:
        """Send nothing on any watch (new ones included) for ``seconds``; with
        ``past_timeout``, not even the end of a stream whose timeoutSeconds passes meanwhile."""
        self._stalled_until = asyncio.get_running_loop().time() + seconds
        self._stall_past_timeout = past_timeout

    def stall_remaining(self) -> float:
        return max(0.0, self._stalled_until - asyncio.get_running_loop().time())

    def stall_outlasts_timeouts(self) -> bool:
        """Whether the current stall keeps streams open past their timeoutSeconds."""
        return self._stall_past_timeout and self.stall_remaining() > 0

    def freeze_bookmarks(self) -> None:
        """From now on, every bookmark carries the store's current revision; a watcher that
        started at or past it, or was sent anything past it, gets no bookmark."""
        self._bookmarks_frozen_at = self._store.revision

    def bookmark_revision(self) -> int:
        """The revision a bookmark sent now carries."""
        frozen = self._bookmarks_frozen_at
        return self._store.revision if frozen is None else frozen

    def suppress_bookmarks(self) -> None:
        """From now on, send no bookmark on any watch, whatever it asked for."""
        self._bookmarks_suppressed = True

    def bookmarks_suppressed(self) -> bool:
        return self._bookmarks_suppressed

    def compact(self) -> None:
        """Forget every resource's history: resuming from before now is 410 Expired."""
        self._store.compact()

    def fail_next(
        self, method: str, path_regex: str, status: int, times: int = 1, message: str = ""
    ) -> None:
        """Answer the next ``times`` matching requests with a ``status`` Status.

        ``method`` is an HTTP method (any case) or ``"*"``; ``path_regex`` is searched in
        the request path plus query string, e.g. ``r"/persistentvolumes/pv-1$"``.  Without
        a message, the error reads as upstream's for that code (for 409, the Conflict
        message of a stale write).
        """
        if times < 1:
            raise ValueError("times must be at least 1")
        self._failures.append(
            InjectedFailure(method.upper(), re.compile(path_regex), status, times, message)
        )

    def delay_next(self, method: str, path_regex: str, seconds: float, times: int = 1) -> None:
        """Serve the next ``times`` matching requests only after ``seconds`` (``method`` and
        ``path_regex`` as for ``fail_next``)."""
        if times < 1:
            raise ValueError("times must be at least 1")
        self._delays.append(InjectedDelay(method.upper(), re.compile(path_regex), seconds, times))

    def take_delay(self, method: str, path_and_query: str) -> float:
        """How long to hold this request before serving it (0: not at all)."""
        for delay in self._delays:
            if delay.method not in ("*", method.upper()):
                continue
            if delay.pattern.search(path_and_query):
                delay.remaining -= 1
                if delay.remaining == 0:
                    self._delays.remove(delay)
                return delay.seconds
        return 0.0

    def take_failure(self, method: str, path_and_query: str) -> InjectedFailure | None:
        for failure in self._failures:
            if failure.method not in ("*", method.upper()):
                continue
            if failure.pattern.search(path_and_query):
                failure.remaining -= 1
                if failure.remaining == 0:
                    self._failures.remove(failure)
                return failure
        return None

    def trip(
        self,
        matches: Callable[[WriteRequest], bool],
        action: TripAction,
        *,
        nth: int = 1,
        after: bool = False,
    ) -> Tripwire:
        """Run ``action`` once, on the ``nth`` write for which ``matches`` is true (counted
        from now), before serving it (``after=False``) or after (``after=True``).

        ``matches`` is called once for every write while the tripwire is armed.  Before:
        once the action returns, the write is answered 503 and not applied.  After: the
        write is served as usual (applied, or refused by the server's own checks) and the
        action runs before the answer leaves.
        """
        if nth < 1:
            raise ValueError("nth must be at least 1")
        tripwire = Tripwire(matches, action, nth, after)
        self._tripwires.append(tripwire)
        return tripwire

    def disarm(self, tripwire: Tripwire) -> None:
        if tripwire in self._tripwires:
            self._tripwires.remove(tripwire)

    def tripwires_armed(self) -> bool:
        return bool(self._tripwires)

    def take_tripwire(self, write: WriteRequest) -> Tripwire | None:
        """Count the write against each armed tripwire it matches; the first whose count
        it reaches is disarmed and returned, to be fired by the caller."""
        fired: Tripwire | None = None
        for tripwire in list(self._tripwires):
            if not tripwire.matches(write):
                continue
            tripwire.seen += 1
            if fired is None and tripwire.seen >= tripwire.nth:
                self._tripwires.remove(tripwire)
                tripwire.fired = True
                fired = tripwire
        return fired

    def garble(self, placeholder: str, written: bytes) -> None:
        """From now on, serve the string value ``placeholder`` as ``written`` (raw JSON
        text, valid or not) in every watch event and list body."""
        self._garbles.append((json.dumps(placeholder).encode(), written))

    def garbled(self, body: bytes) -> bytes:
        """``body`` as it is served, garbled where ``garble`` asked."""
        for quoted, written in self._garbles:
            body = body.replace(quoted, written)
        return body

    def record(self, record: RequestRecord) -> None:
        self.request_log.append(record)
        if len(self.request_log) > self.request_log_limit:
            del self.request_log[: len(self.request_log) - self.request_log_limit]

    def pending_failures(self) -> int:
        return sum(f.remaining for f in self._failures)

    def requests(
        self, method: str | None = None, path_regex: str | None = None
    ) -> list[RequestRecord]:
        """The logged requests, optionally filtered by method and a path regex."""
        pattern = re.compile(path_regex) if path_regex else None
        return [
            r
            for r in self.request_log
            if (method is None or r.method == method.upper())
            and (pattern is None or pattern.search(r.path + ("?" + r.query if r.query else "")))
        ]

    def reset(self) -> None:
        """Drop pending failures, delays and tripwires, end any stall, thaw and resume
        bookmarks and clear the request log."""
        self._failures.clear()
        self._delays.clear()
        self._tripwires.clear()
        self._stalled_until = 0.0
        self._stall_past_timeout = False
        self._bookmarks_frozen_at = None
        self._bookmarks_suppressed = False
        self._garbles.clear()
        self.request_log.clear()
