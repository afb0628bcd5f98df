"""Watch streams: newline-delimited JSON events over a chunked HTTP response.

Semantics follow kube-apiserver's watch cache.  ``resourceVersion`` "" or "0" starts with
a synthetic ADDED per current object; a number replays every retained change after it,
or — when that history is gone — sends one ERROR event carrying a 410 Expired Status
(HTTP status stays 200, as upstream).  With selectors, a change that makes an object
stop matching is sent as DELETED (the previous content, the new resourceVersion) and one
that makes it start matching as ADDED.  ``allowWatchBookmarks`` adds BOOKMARK events
whose object holds only ``kind``, ``apiVersion`` and ``metadata.resourceVersion``, sent
every bookmark interval and once two seconds before ``timeoutSeconds`` ends the stream;
with the "apiserver" cadence, when kube-apiserver's watch cache would send them (see
``bookmark_timing``).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web

from volsched.emulator.bookmark_timing import ApiserverBookmarks
from volsched.emulator.errors import status_body
from volsched.emulator.faults import Faults
from volsched.emulator.raw import Raw, clone, metadata, namespace_of
from volsched.emulator.registry import serve
from volsched.emulator.resources import ResourceType
from volsched.emulator.selectors import Matcher
from volsched.emulator.store import ADDED, DELETED, MODIFIED, Change, Expired, Store, Subscription

# kube-apiserver bookmarks a watch this long before its timeoutSeconds ends it.
PRE_TIMEOUT_BOOKMARK_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class WatchRequest:
    resource: ResourceType
    namespace: str | None
    matches: Matcher
    since: int | None
    timeout_seconds: float | None
    bookmarks: bool


def translate(change: Change, request: WatchRequest) -> tuple[str, Raw] | None:
    """The event a watcher with this namespace and selectors sees, if any."""
    obj, previous = change.object, change.previous
    if request.namespace is not None and namespace_of(obj) != request.namespace:
        return None
    now = request.matches(obj)
    if change.type != MODIFIED or previous is None:
        return (change.type, obj) if now else None
    before = request.matches(previous)
    if now:
        return (MODIFIED if before else ADDED, obj)
    if before:
        gone = clone(previous)
        metadata(gone)["resourceVersion"] = str(change.revision)
        return (DELETED, gone)
    return None


class WatchStream:
    def __init__(
        self,
        store: Store,
        faults: Faults,
        request: WatchRequest,
        bookmark_interval_seconds: float,
        apiserver_bookmarks: ApiserverBookmarks | None = None,
    ) -> None:
        self.store = store
        self.faults = faults
        self.request = request
        self.bookmark_interval_seconds = bookmark_interval_seconds
        # Set for the "apiserver" cadence: bookmarks when kube-apiserver's cacher sends them.
        self.apiserver_bookmarks = apiserver_bookmarks
        # The newest revision this watcher has been sent (or started at): kube-apiserver
        # never sends a watcher anything at or below it.
        self._reached = 0

    async def serve(
        self, http: web.Request, on_open: Callable[[int], None] | None = None
    ) -> web.StreamResponse:
        """Stream until the timeout, a cut, or the client leaving; ``on_open`` gets the status."""
        response = web.StreamResponse(status=200, headers={"Content-Type": "application/json"})
        response.enable_chunked_encoding()
        try:
            replay, subscription = self.store.subscribe(
                self.request.resource.key, self.request.since
            )
            self._reached = (
                self.store.revision if self.request.since is None else self.request.since
            )
        except Expired as expired:
            await response.prepare(http)
            if on_open is not None:
                on_open(200)
            error = status_body(410, "Expired", str(expired))
            await self._send(response, {"type": "ERROR", "object": error})
            await response.write_eof()
            return response
        try:
            await response.prepare(http)
            if on_open is not None:
                on_open(200)
            await self._run(response, replay, subscription)
            if subscription.abrupt and http.transport is not None:
                http.transport.abort()
                return response
            await response.write_eof()
        except ConnectionResetError:
            pass
        finally:
            self.store.unsubscribe(subscription)
        return response

    async def _send(self, response: web.StreamResponse, event: Raw) -> None:
        data = json.dumps(event, separators=(",", ":")).encode()
        await response.write(self.faults.garbled(data) + b"\n")

    async def _send_change(self, response: web.StreamResponse, change: Change) -> None:
        event = translate(change, self.request)
        if event is not None:
            self._reached = max(self._reached, change.revision)
            kind, obj = event
            await self._send(response, {"type": kind, "object": serve(self.request.resource, obj)})

    async def _wait_out_stall(self, subscription: Subscription, deadline: float | None) -> None:
        loop = asyncio.get_running_loop()
        while (stall := self.faults.stall_remaining()) > 0 and not subscription.ended.is_set():
            if deadline is not None and not self.faults.stall_outlasts_timeouts():
                stall = min(stall, deadline - loop.time())
                if stall <= 0:
                    return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(subscription.ended.wait(), stall)

    async def _run(
        self, response: web.StreamResponse, replay: list[Change], subscription: Subscription
    ) -> None:
        loop = asyncio.get_running_loop()
        timeout = self.request.timeout_seconds
        deadline = loop.time() + timeout if timeout is not None else None
        next_bookmark = self._next_bookmark(loop.time(), deadline)
        await self._wait_out_stall(subscription, deadline)
        for change in replay:
            if subscription.ended.is_set():
                return
            await self._send_change(response, change)
        while not subscription.ended.is_set():
            now = loop.time()
            if deadline is not None and now >= deadline:
                return
            waits = [t - now for t in (deadline, next_bookmark) if t is not None]
            try:
                item: Change | None = await asyncio.wait_for(
                    subscription.queue.get(), max(0.0, min(waits)) if waits else None
                )
            except TimeoutError:
                await self._wait_out_stall(subscription, deadline)
                if subscription.ended.is_set():
                    return
                if next_bookmark is not None and loop.time() >= next_bookmark:
                    if subscription.queue.empty():
                        await self._send_bookmark(response)
                    next_bookmark = self._next_bookmark(loop.time(), deadline, after=next_bookmark)
                continue
            if item is None:
                return
            await self._wait_out_stall(subscription, deadline)
            if subscription.ended.is_set():
                return
            await self._send_change(response, item)

    def _next_bookmark(
        self, now: float, deadline: float | None, after: float | None = None
    ) -> float | None:
        """When the next bookmark is due, as kube-apiserver's watch cache has it: every
        interval, or two seconds before the watch's deadline when that is sooner (once,
        and never when that moment has passed)."""
        if not self.request.bookmarks:
            return None
        if self.apiserver_bookmarks is not None:
            return self.apiserver_bookmarks.next_delivery(self.request.resource.key, now, deadline)
        due = now + self.bookmark_interval_seconds
        if deadline is None:
            return due
        before_deadline = deadline - PRE_TIMEOUT_BOOKMARK_SECONDS
        if after is not None and after >= before_deadline:
            return None
        if before_deadline < due:
            return before_deadline if before_deadline >= now else None
        return due

    async def _send_bookmark(self, response: web.StreamResponse) -> None:
        resource = self.request.resource
        if self.faults.bookmarks_suppressed():
            return
        revision = self.faults.bookmark_revision()
        if self.apiserver_bookmarks is not None and revision <= self._reached:
            # kube-apiserver sends a watcher only what is past its resourceVersion.
            return
        if revision < self.store.revision and revision <= self._reached:
            # A frozen watch cache no further than this watcher stands (where it started,
            # or what it was sent): kube-apiserver never moves a watcher back, and a
            # bookmark at the same version would tell it nothing.
            return
        self._reached = max(self._reached, revision)
        bookmark = {
            "kind": resource.kind,
            "apiVersion": resource.api_version,
            "metadata": {"resourceVersion": str(revision)},
        }
        await self._send(response, {"type": "BOOKMARK", "object": bookmark})
