"""Objects, the global resourceVersion, and each resource's event history for watches.

Like etcd behind kube-apiserver, one counter numbers every write of every resource; an
object's ``metadata.resourceVersion`` is the counter value of its last write.  Each
resource keeps its last ``history_limit`` changes so a watch can resume from a
resourceVersion; a resume from before the retained window (or from before ``compact()``)
is *expired* — the server answers it with a 410 ERROR event and the client must relist.

All methods are synchronous: a write and the delivery of its change to every open watch
happen in one step of the event loop, so a list followed by a watch from the list's
resourceVersion can never miss or duplicate a change.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from volsched.emulator.raw import Raw, metadata
from volsched.emulator.resources import StorageKey

ObjectKey = tuple[str, str]  # (namespace, name); namespace "" for cluster-scoped objects

ADDED, MODIFIED, DELETED = "ADDED", "MODIFIED", "DELETED"


@dataclass(frozen=True, slots=True)
class Change:
    """One write: the object after it (the last state for DELETED) and before it."""

    revision: int
    type: str
    object: Raw
    previous: Raw | None


class Expired(Exception):
    """The requested resourceVersion is older than the retained history."""

    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


class Subscription:
    """An open watch's inbox; ``end()`` asks its stream to close now (``abrupt``: drop the
    connection), ``finish()`` once what is queued has been sent."""

    def __init__(self, key: StorageKey) -> None:
        self.key = key
        self.queue: asyncio.Queue[Change | None] = asyncio.Queue()
        self.ended = asyncio.Event()
        self.abrupt = False

    def finish(self) -> None:
        """Close the stream after the changes already queued have been sent."""
        self.queue.put_nowait(None)

    def end(self, abrupt: bool = False) -> None:
        self.abrupt = self.abrupt or abrupt
        self.ended.set()
        self.queue.put_nowait(None)


Listener = Callable[[StorageKey, Change], None]


class Store:
    def __init__(self, history_limit: int = 2000) -> None:
        if history_limit < 1:
            raise ValueError("history_limit must be at least 1")
        self.history_limit = history_limit
        self.revision = 1
        self._objects: dict[StorageKey, dict[ObjectKey, Raw]] = {}
        self._history: dict[StorageKey, deque[Change]] = {}
        self._floor: dict[StorageKey, int] = {}
        self._compacted_at = 0
        self._subscriptions: dict[StorageKey, set[Subscription]] = {}
        self.listeners: list[Listener] = []

    # Reads: stored dicts are shared, callers must copy before changing them.

    def get(self, key: StorageKey, namespace: str, name: str) -> Raw | None:
        return self._objects.get(key, {}).get((namespace, name))

    def list_objects(self, key: StorageKey, namespace: str | None = None) -> list[Raw]:
        objects = self._objects.get(key, {})
        return [objects[k] for k in sorted(objects) if namespace is None or k[0] == namespace]

    def keys(self) -> Iterator[StorageKey]:
        return iter(list(self._objects))

    # Writes.

    def put(self, key: StorageKey, obj: Raw) -> Raw:
        """Store ``obj`` (created or replaced) under a new resourceVersion; return it."""
        meta = metadata(obj)
        object_key = (str(meta.get("namespace") or ""), str(meta["name"]))
        objects = self._objects.setdefault(key, {})
        previous = objects.get(object_key)
        self.revision += 1
        meta["resourceVersion"] = str(self.revision)
        objects[object_key] = obj
        self._record(key, Change(self.revision, MODIFIED if previous else ADDED, obj, previous))
        return obj

    def remove(self, key: StorageKey, namespace: str, name: str, final: Raw) -> Raw:
        """Delete the object; ``final`` (its last state) is stamped with the new version."""
        previous = self._objects.get(key, {}).pop((namespace, name))
        self.revision += 1
        metadata(final)["resourceVersion"] = str(self.revision)
        self._record(key, Change(self.revision, DELETED, final, previous))
        return final

    def _record(self, key: StorageKey, change: Change) -> None:
        history = self._history.setdefault(key, deque())
        if len(history) >= self.history_limit:
            dropped = history.popleft()
            self._floor[key] = dropped.revision
        history.append(change)
        for subscription in self._subscriptions.get(key, ()):
            subscription.queue.put_nowait(change)
        for listener in list(self.listeners):
            listener(key, change)

    # Watches.

    def oldest_resumable(self, key: StorageKey) -> int:
        return max(self._floor.get(key, 0), self._compacted_at)

    def subscribe(self, key: StorageKey, since: int | None) -> tuple[list[Change], Subscription]:
        """The changes to replay, and an inbox for every later one.

        ``since`` None means "from now, starting with the current objects" (synthetic
        ADDED events, as for resourceVersion "" or "0"); otherwise every retained change
        after ``since`` is replayed, or ``Expired`` is raised when some were forgotten.
        """
        if since is None:
            replay = [Change(self.revision, ADDED, obj, None) for obj in self.list_objects(key)]
        else:
            oldest = self.oldest_resumable(key)
            if since < oldest:
                raise Expired(since, oldest)
            replay = [c for c in self._history.get(key, ()) if c.revision > since]
        subscription = Subscription(key)
        self._subscriptions.setdefault(key, set()).add(subscription)
        return replay, subscription

    def unsubscribe(self, subscription: Subscription) -> None:
        self._subscriptions.get(subscription.key, set()).discard(subscription)

    def subscriptions(self, key: StorageKey | None = None) -> list[Subscription]:
        return [
            s for k, subs in self._subscriptions.items() if key is None or k == key for s in subs
        ]

    def compact(self) -> None:
        """Forget all history: any resume from before now is answered 410 Expired."""
        self._compacted_at = self.revision
        self._history.clear()
        self._floor.clear()
