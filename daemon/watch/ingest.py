"""From API events to state: typed views into the cluster cache, raw JSON into the store,
and the scheduling queue told which pods arrived and which cluster events happened —
each with the object before and after, for the hints of the plugins that registered it:
an assigned pod placed, relabelled, finished or deleted; a node added, deleted or changed
in what a plugin reads (labels, taints, allocatable, readiness); any other kind added,
updated or deleted.

Objects that do not decode (see ``decoding``) or do not parse are logged and skipped
(with a counter), never fatal: one bad object must not stop the scheduler. The log line
names the object and its resourceVersion, and is rate-limited per kind (``skip_log``).

One copy of each object: the cache's. An event the cache refuses — older than the revision
it holds, as when a watch delivers an update after the binder took the newer answer of its
own write — changes nothing anywhere: not the cache, not the body kept for writing back,
not the store, and nobody is woken. The body kept for a PV or claim is always the accepted
revision's, so a write based on it carries content and resourceVersion of one revision.
"""

from __future__ import annotations

import dataclasses
import json
import logging
from collections.abc import Callable, Collection, Iterable, Mapping
from typing import Any, Protocol

import orjson

from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import ObjectError
from volsched.cache.objects.core import Node, Pod, parse_pod, parse_pod_after
from volsched.cache.objects.registry import KINDS
from volsched.cache.store.flushing import dumps
from volsched.daemon.kube.decoding import Undecodable
from volsched.daemon.queue.queueing import SchedulingQueue
from volsched.daemon.watch.skip_log import SkipLog
from volsched.scheduling.framework.events import (
    ASSIGNED_POD_DELETE,
    ActionType,
    ClusterEvent,
    as_placed,
    assigned_pod_events,
    node_update_events,
)
from volsched.scheduling.preemption.nominated import NominatedPods

log = logging.getLogger("volsched.ingest")

Raw = dict[str, Any]
# Kinds whose raw JSON the binder needs to write whole objects back (PUT).
RAW_KEPT = ("PersistentVolume", "PersistentVolumeClaim")
# Longhorn's kinds wake the pods the kinds they map onto would wake; a Setting changes
# what the storage nodes can hold.
CLUSTER_EVENT_OF = {
    "LonghornNode": "StorageNode",
    "LonghornVolume": "Volume",
    "LonghornReplica": "Replica",
    "LonghornSetting": "StorageNode",
}


class StoreSink(Protocol):
    def put_object(self, kind: str, key: str, raw: Mapping[str, Any]) -> None: ...
    def delete_object(self, kind: str, key: str) -> None: ...
    def set_resume_point(self, kind: str, resource_version: str) -> None: ...
    def replace_kind(
        self, kind: str, objects: Mapping[str, str | Mapping[str, Any]], resource_version: str
    ) -> None: ...


def object_key(raw: Mapping[str, Any], namespaced: bool) -> str:
    meta = raw.get("metadata") or {}
    name = str(meta.get("name") or "")
    if namespaced:
        return f"{meta.get('namespace') or 'default'}/{name}"
    return name


def _resource(kind: str) -> str:
    return CLUSTER_EVENT_OF.get(kind, kind)


def object_events(kind: str, old: Any, new: Any) -> list[ClusterEvent]:
    """The cluster events of a change to an object other than a pod."""
    if new is None:
        return [ClusterEvent(_resource(kind), ActionType.DELETE)]
    if old is None:
        return [ClusterEvent(_resource(kind), ActionType.ADD)]
    if kind == "Node":
        node_old: Node = old
        return node_update_events(node_old, new)
    return [ClusterEvent(_resource(kind), ActionType.UPDATE)]


def _same_but_for_status(old: Pod, new: Pod) -> bool:
    """Equal but for resourceVersion (and status fields the view does not keep)."""
    if old.phase != new.phase:
        return False
    meta = dataclasses.replace(new.meta, resource_version=old.meta.resource_version)
    return (
        dataclasses.replace(
            new,
            meta=meta,
            scheduled_reason=old.scheduled_reason,
            scheduled_message=old.scheduled_message,
        )
        == old
    )


class Ingest:
    def __init__(
        self,
        cluster: ClusterCache,
        queue: SchedulingQueue | None,
        scheduler_names: str | Collection[str],
        store: StoreSink | None = None,
        on_error: Callable[[str], None] | None = None,
        on_change: Callable[[str, str], None] | None = None,
        on_undecodable: Callable[[str], None] | None = None,
    ) -> None:
        self.cluster = cluster
        self.queue = queue
        self.scheduler_names = (
            frozenset({scheduler_names})
            if isinstance(scheduler_names, str)
            else frozenset(scheduler_names)
        )
        self.store = store
        # The accepted revision's JSON, for the kinds written back whole.
        self.raw: dict[str, dict[str, str]] = {kind: {} for kind in RAW_KEPT}
        self._on_error = on_error
        self._on_undecodable = on_undecodable
        self.skip_log = SkipLog()
        # Told (kind, key) after every change applied to the cache: binding cycles wait
        # on it for the PV controller instead of polling.
        self._on_change = on_change
        # Told (pending pod, bound pod) when a pod the cache holds unassigned comes
        # assigned, before the cache takes the change: shadow mode judges the other
        # scheduler's choice against the cluster as it was when that choice was made.
        self.on_pod_bound: Callable[[Pod, Pod], None] | None = None
        # The scheduler's nominator, kept in step with every pod event (deleted, bound,
        # nominated elsewhere), as upstream's informer handlers keep theirs.
        self.nominated: NominatedPods | None = None
        # Each of our unbound pods' spec, as received, and the view parsed from it: the
        # event of its binding changes only spec.nodeName, metadata and status, and
        # ``parse_pod_after`` reads just those.
        self._unbound: dict[str, tuple[object, Pod]] = {}

    def follow_nominations(self, nominated: NominatedPods) -> None:
        """Keep ``nominated`` in step from here on, starting with the pending pods the
        cache already holds (a warm start's snapshot)."""
        self.nominated = nominated
        for pod in self.cluster.pending.values():
            nominated.follow(pod.meta.key, pod, self.ours(pod))

    def keep_raw(self, *kinds: str) -> None:
        """Keep these kinds' accepted JSON too (HTTP extenders are sent whole pods and
        nodes); from the next event of each object on."""
        for kind in kinds:
            self.raw.setdefault(kind, {})

    def raw_object(self, kind: str, key: str) -> Raw | None:
        """The accepted revision's JSON of a PV or PVC (to write it back whole)."""
        text = self.raw.get(kind, {}).get(key)
        if text is None:
            return None
        try:
            return orjson.loads(text)  # type: ignore[no-any-return]
        except orjson.JSONDecodeError:
            # Text ``dumps`` wrote with the standard library (what orjson refuses).
            return json.loads(text)  # type: ignore[no-any-return]

    def _parse(self, kind: str, raw: Mapping[str, Any]) -> Any | None:
        try:
            if kind == "Pod":
                return self._parse_pod(raw)
            return KINDS[kind].parse(raw)
        except ObjectError as exc:
            meta = raw.get("metadata")
            version = meta.get("resourceVersion") if isinstance(meta, Mapping) else None
            at = f" at resourceVersion {version}" if isinstance(version, str) and version else ""
            who = object_key(raw, KINDS[kind].namespaced) if isinstance(meta, Mapping) else ""
            field = f" field {exc.field}" if exc.field else ""
            self.skip_log.line(
                kind, f"skipping a malformed object: {kind} {who}{at}{field}: {exc.problem}"
            )
            if self._on_error is not None:
                self._on_error(kind)
            return None

    def undecodable(self, notice: Undecodable) -> None:
        """An object of a list or watch that could not be decoded: named in the log and
        counted (one ``kept`` without its deepest parts is named only)."""
        if notice.kept:
            text = f"{notice.described()}: read without what it holds deeper ({notice.problem})"
        else:
            text = f"{notice.described()}: cannot be decoded ({notice.problem}); skipped"
            if self._on_undecodable is not None:
                self._on_undecodable(notice.kind)
        self.skip_log.line(notice.kind, text)

    def _parse_pod(self, raw: Mapping[str, Any]) -> Pod:
        held = self._unbound.pop(object_key(raw, True), None) if self._unbound else None
        body = dict(raw) if not isinstance(raw, dict) else raw
        pod = parse_pod(body) if held is None else parse_pod_after(body, held[1], held[0])
        if self.ours(pod):
            self._unbound[pod.meta.key] = (raw.get("spec"), pod)
        return pod

    def ours(self, pod: Pod) -> bool:
        return (
            not pod.node_name
            and not pod.terminal
            and pod.meta.deletion_timestamp is None
            and pod.scheduler_name in self.scheduler_names
        )

    # -- events ----------------------------------------------------------------------

    def upsert(self, kind: str, raw: Mapping[str, Any], persist: bool = True) -> bool:
        """Parse and apply one object; False when it did not parse or the cache holds a
        newer revision (then nothing changed)."""
        view = self._parse(kind, raw)
        if view is None:
            return False
        raw_text = dumps(raw) if kind in self.raw else None
        if not self.apply_view(kind, view, raw_text):
            return False
        if persist and self.store is not None:
            self.store.put_object(kind, view.meta.key, raw)
        return True

    def apply_view(self, kind: str, view: Any, raw_text: str | None = None) -> bool:
        """An object already parsed (from the snapshot, or by ``upsert``) into the cache,
        waking what it wakes; False when the cache refused it as older. ``raw_text`` is
        its JSON, for the kinds kept raw."""
        key = view.meta.key
        old = self.cluster.get(kind, key)
        if (
            self.on_pod_bound is not None
            and kind == "Pod"
            and old is not None
            and not old.node_name
            and view.node_name
        ):
            self.on_pod_bound(old, view)
        if not self.cluster.upsert(kind, view):
            return False
        if raw_text is not None and kind in self.raw:
            self.raw[kind][key] = raw_text
        self._notify(kind, old, view)
        return True

    def views(self) -> dict[str, dict[str, Any]]:
        """Layer 1 of every kind watched, by key: the parsed objects a clean stop keeps
        as the snapshot a warm start loads instead of parsing."""
        views = {kind: dict(self.cluster.informer_items(kind)) for kind in KINDS}
        return {kind: by_key for kind, by_key in views.items() if by_key}

    def delete(self, kind: str, raw: Mapping[str, Any], persist: bool = True) -> None:
        key = object_key(raw, KINDS[kind].namespaced)
        self.delete_key(kind, key, persist)

    def delete_key(self, kind: str, key: str, persist: bool = True) -> None:
        old = self.cluster.get(kind, key)
        assumed_on = self.cluster.assumed_pods.get(key, "") if kind == "Pod" else ""
        self.cluster.delete(kind, key)
        if kind == "Pod":
            self._unbound.pop(key, None)
        if kind in self.raw:
            self.raw[kind].pop(key, None)
        if persist and self.store is not None:
            self.store.delete_object(kind, key)
        if self._on_change is not None:
            self._on_change(kind, key)
        if old is None or self.queue is None:
            return
        if kind == "Pod":
            self.queue.delete(key)
            if self.nominated is not None:
                self.nominated.follow(key, None, False)
            if old.node_name or assumed_on:
                # An assumed pod deleted frees its node as much as a placed one.
                placed = as_placed(old, old.node_name or assumed_on)
                self.queue.on_cluster_event(ASSIGNED_POD_DELETE, placed, None)
        else:
            for event in object_events(kind, old, None):
                self.queue.on_cluster_event(event, old, None)

    def replace(self, kind: str, items: Iterable[Mapping[str, Any]], resource_version: str) -> int:
        """A relist: exactly these objects exist now. Returns how many vanished."""
        fresh: dict[str, str] = {}
        self.relist_page(kind, items, fresh)
        return self.finish_relist(kind, fresh, resource_version)

    def relist_page(
        self, kind: str, items: Iterable[Mapping[str, Any]], fresh: dict[str, str]
    ) -> None:
        """Apply one page of a relist, remembering its objects in ``fresh`` as the JSON
        text the store keeps: a relist of 50,000 objects is applied page by page, with
        the event loop free in between, and each page's decoded objects can go as soon
        as it is applied (text takes a fraction of their memory)."""
        namespaced = KINDS[kind].namespaced
        keep = self.store is not None
        for item in items:
            fresh[object_key(item, namespaced)] = dumps(item) if keep else ""
            self.upsert(kind, item, persist=False)

    def finish_relist(self, kind: str, fresh: Mapping[str, str], resource_version: str) -> int:
        """After the last page: what was not listed is gone. How many vanished."""
        vanished = [obj.meta.key for obj in self.cluster.objects(kind) if obj.meta.key not in fresh]
        for key in vanished:
            self.delete_key(kind, key, persist=False)
        if self.store is not None:
            self.store.replace_kind(kind, fresh, resource_version)
        return len(vanished)

    def _notify(self, kind: str, old: Any, new: Any) -> None:
        if self._on_change is not None:
            changed = new if new is not None else old
            if changed is not None:
                self._on_change(kind, changed.meta.key)
        queue = self.queue
        if queue is None:
            return
        if kind == "Pod":
            pod: Pod = new
            ours = self.ours(pod)
            if self.nominated is not None:
                self.nominated.follow(pod.meta.key, pod, ours)
            if ours:
                if old is None:
                    queue.add(pod)
                elif not _same_but_for_status(old, pod):
                    # Upstream's isPodUpdated: a status-only change (our own PodScheduled
                    # condition, for one) is no reason to try again.
                    queue.update(pod)
            else:
                queue.delete(pod.meta.key)
                for event, before, after in assigned_pod_events(old, pod):
                    queue.on_cluster_event(event, before, after)
            return
        for event in object_events(kind, old, new):
            queue.on_cluster_event(event, old, new)
