"""List + watch, one loop per kind, into the ingest.

Resume from the stored resourceVersion after a restart; follow bookmarks; on ``410
Gone`` (our resourceVersion was compacted away) relist and let the ingest delete what
vanished; reconnect with backoff on any transport error.

Silence is not a failure. A kind nobody writes has no events, and without etcd's
progress notifications (off by default) kube-apiserver sends its watchers no bookmark
either: a healthy watch of it says nothing at all until the server ends it. As
client-go's reflector does, each watch asks the server to end it after a timeoutSeconds
picked at random between ``timeout_seconds`` and ``max_timeout_seconds`` (5 to 10
minutes), and when the server does, it is reopened from where it was, quietly. What is
a failure, and logged at WARNING with a backoff: an error, a broken connection (the
client notices a dead peer through TCP keepalive), a stream still open
``overdue_seconds`` past its own timeoutSeconds (the server, or something between,
stopped serving it), and a stream the server ends within a second with nothing in it
(reflector's "very short watch": reopening it at once would loop).

The forever-loop only retries and sleeps; ``sync`` and ``watch_once`` are the finite
steps tests drive directly.
"""

from __future__ import annotations

import asyncio
import logging
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from volsched.cache.errors import ApiError, Gone, NotFound
from volsched.cache.objects.meta import is_older_version
from volsched.cache.objects.registry import KINDS
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.kube.decoding import Undecodable
from volsched.daemon.watch.ingest import Ingest, StoreSink

log = logging.getLogger("volsched.watch")

# kube-scheduler's informers, plus volsched's storage kinds when their CRDs exist.
CORE_KINDS = (
    "Node",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CSINode",
    "CSIDriver",
    "CSIStorageCapacity",
    "PriorityClass",
    "Namespace",
    "PodDisruptionBudget",
    "Service",
    "ReplicaSet",
    "StatefulSet",
    "Pod",
)
VOLSCHED_STORAGE_KINDS = ("StorageNode", "Volume", "Replica")
# Longhorn's own objects, read-only: Longhorn writes them, volsched follows them.
LONGHORN_KINDS = ("LonghornNode", "LonghornVolume", "LonghornReplica", "LonghornSetting")
STORAGE_KINDS = (*VOLSCHED_STORAGE_KINDS, *LONGHORN_KINDS)
# Dynamic resource allocation's kinds (resource.k8s.io/v1, served from Kubernetes 1.34)
# that DynamicResources reads to check a pod's claims.
DRA_KINDS = ("DeviceClass", "ResourceClaim")
# Kinds read where the API server serves them: a cluster without them has none to read.
OPTIONAL_KINDS = (*DRA_KINDS, *STORAGE_KINDS)
WATCHED_KINDS = (*CORE_KINDS, *OPTIONAL_KINDS)


# Objects parsed between two yields to the event loop during a relist (~10 ms of work).
RELIST_SLICE = 100
# The first watch after a resume asks the server to end it this soon. kube-apiserver
# sends a watcher a bookmark once a minute, or two seconds before its deadline when that
# is sooner: a short first watch brings the bookmark that proves a quiet kind caught up
# in about a second instead of up to a minute.
CATCH_UP_WATCH_SECONDS = 3
# A resumed kind still short of its target after this many of those watches (ended by
# the server or failed) is relisted. kube-apiserver's bookmark carries its watch cache's
# resourceVersion, which for a kind nobody writes moves only when etcd reports progress.
# Where consistent lists are served from the watch cache (1.31 on), the catch-up
# target's read brings that server's cache forward at once; otherwise (older servers, or
# a watch that lands on another API server of an HA control plane) it moves only at
# etcd's progress-notify interval (kubeadm: 5 s; etcd's default: 10 minutes), and a
# resume point ahead of that cache is refused with "Too large resource version".
CATCH_UP_WATCHES = 3
# Logged when a resumed kind is relisted for that reason (the cluster bench counts it).
CATCH_UP_RELIST = "relisting to catch up"


# A stream the server ends sooner than this with nothing in it is a failure, as
# client-go's reflector has it ("very short watch"): reopened at once, it would loop.
SHORTEST_WATCH_SECONDS = 1.0


@dataclass(slots=True)
class WatchSettings:
    # Each watch asks the server to end it after a timeoutSeconds picked at random in
    # this range (client-go's reflector: 5 to 10 minutes), so that the watches of many
    # kinds and many clients do not all end, and come back, at the same moment.
    timeout_seconds: int = 300
    max_timeout_seconds: int = 600
    # A stream still open this long after its timeoutSeconds is no longer being served.
    overdue_seconds: float = 30.0
    backoff_initial_seconds: float = 0.5
    backoff_max_seconds: float = 30.0
    # Objects per list page on a relist.
    page_size: int = 500


@dataclass(slots=True)
class WatchState:
    kind: str
    resource_version: str = ""
    synced: bool = False
    restarts: int = 0
    relists: int = 0
    absent: bool = False
    last_error: str = ""
    synced_event: asyncio.Event = field(default_factory=asyncio.Event)
    # A resumed watch is synced only once it has reached the API server's state as of
    # the start (this resourceVersion): before, the cache may hold deleted nodes.
    catch_up_to: int = 0
    # Watches that ended before the resumed kind reached ``catch_up_to``.
    catch_up_watches: int = 0


class KindWatcher:
    def __init__(
        self,
        kind: str,
        client: KubeClient,
        ingest: Ingest,
        store: StoreSink | None,
        settings: WatchSettings,
        resume_from: str = "",
        on_restart: Callable[[str], None] | None = None,
        optional: bool = False,
        apply_after: asyncio.Event | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.kind = kind
        self.client = client
        self.ingest = ingest
        self.store = store
        self.settings = settings
        self.state = WatchState(kind, resume_from)
        self.optional = optional
        self._on_restart = on_restart
        # Set once the stored cache is loaded: a watch may open (and its first bookmark
        # come due) while the cache loads, but nothing it brings is applied before, or
        # an older stored object would overwrite a newer one.
        self._apply_after = apply_after
        self._rng = rng or random.Random()

    async def _may_apply(self) -> None:
        gate = self._apply_after
        if gate is not None and not gate.is_set():
            await gate.wait()

    def catch_up_to(self, version: str) -> None:
        """Count as synced only at or past ``version`` (the server's, as of the start);
        a resume point already there has nothing to catch up."""
        if not version.isdigit():
            return
        self.state.catch_up_to = int(version)
        if self.state.resource_version:
            self._mark_caught_up(self.state.resource_version)

    def proven_current(self, version: str) -> None:
        """The cache was shown to hold this kind as of ``version``, at or past the
        target, by other means than the watch (a matching metadata list)."""
        log.debug("%s: proven current as of %s", self.kind, version)
        self._mark_synced()

    def forget_resume_point(self) -> None:
        """Relist on the next run, instead of resuming."""
        self.state.resource_version = ""

    async def sync(self) -> None:
        """List everything and make the cache exactly that (emitting deletions).

        Page by page (``limit``/``continue``), each page applied and the event loop given
        back before the next: a relist of 50,000 objects never holds the loop long
        enough to miss a lease renewal or a health probe."""
        await self._may_apply()
        fresh: dict[str, str] = {}
        version = ""
        pages = self.client.list_pages(
            self.kind,
            self.settings.page_size,
            skipped=self.ingest.undecodable,
            prune_deep=self.kind in STORAGE_KINDS,
        )
        async for items, page_version in pages:
            version = page_version
            for start in range(0, len(items), RELIST_SLICE):
                self.ingest.relist_page(self.kind, items[start : start + RELIST_SLICE], fresh)
                await asyncio.sleep(0)
        vanished = self.ingest.finish_relist(self.kind, fresh, version)
        self.state.resource_version = version
        self.state.relists += 1
        self._mark_synced()
        if vanished:
            log.info("%s relist: %d object(s) vanished while we were away", self.kind, vanished)

    def _mark_caught_up(self, version: str) -> None:
        target = self.state.catch_up_to
        if target and (not version.isdigit() or int(version) < target):
            return
        self._mark_synced()

    def _mark_synced(self) -> None:
        self.state.synced = True
        self.state.synced_event.set()

    def next_timeout_seconds(self) -> int:
        """The timeoutSeconds the next watch asks for."""
        if not self.state.synced:
            return min(self.settings.timeout_seconds, CATCH_UP_WATCH_SECONDS)
        shortest = self.settings.timeout_seconds
        return self._rng.randint(shortest, max(shortest, self.settings.max_timeout_seconds))

    async def watch_once(self) -> None:
        """Follow one watch stream until the server ends it; raises on 410, transport
        errors, a stream overdue past its timeout and one ended at once with nothing."""
        state = self.state
        timeout = self.next_timeout_seconds()
        loop = asyncio.get_running_loop()
        opened = loop.time()
        received = 0
        async for event in self.client.watch(
            self.kind,
            state.resource_version,
            timeout,
            self.settings.overdue_seconds,
            prune_deep=self.kind in STORAGE_KINDS,
        ):
            received += 1
            await self._may_apply()
            if isinstance(event, Undecodable):
                self._skip(event)
                continue
            kind_of_event = event.get("type")
            obj = event.get("object") or {}
            version = str((obj.get("metadata") or {}).get("resourceVersion") or "")
            if kind_of_event == "BOOKMARK":
                if is_older_version(version, state.resource_version):
                    # kube-apiserver never goes back; a proxy or a stale server might.
                    continue
                state.resource_version = version or state.resource_version
                self._mark_caught_up(version)
                if self.store is not None and version:
                    self.store.set_resume_point(self.kind, version)
                continue
            if kind_of_event in ("ADDED", "MODIFIED"):
                obj.setdefault("kind", self.kind)
                self.ingest.upsert(self.kind, obj)
            elif kind_of_event == "DELETED":
                self.ingest.delete(self.kind, obj)
            else:
                continue
            if version:
                state.resource_version = version
                if self.store is not None:
                    self.store.set_resume_point(self.kind, version)
            self._mark_caught_up(version)
        lasted = loop.time() - opened
        if not received and lasted < SHORTEST_WATCH_SECONDS:
            raise ApiError(
                0, f"watch {self.kind}: ended by the server after {lasted:.1f}s with no event"
            )
        log.debug(
            "%s watch ended by the server after %.0fs (timeoutSeconds %d, %d event(s)); "
            "resuming from %s",
            self.kind,
            lasted,
            timeout,
            received,
            state.resource_version,
        )

    def _skip(self, notice: Undecodable) -> None:
        """An event whose object cannot be decoded: named and counted, and the watch goes
        on past it, or it would be sent again on every retry and hold back every later
        event of the kind. A deletion still deletes, when the object's name was found."""
        self.ingest.undecodable(notice)
        if notice.kept:
            return  # its event follows
        if notice.event_type == "DELETED" and notice.name:
            namespaced = KINDS[self.kind].namespaced
            key = f"{notice.namespace or 'default'}/{notice.name}" if namespaced else notice.name
            self.ingest.delete_key(self.kind, key)
        version = notice.resource_version
        if not version.isdigit() or is_older_version(version, self.state.resource_version):
            return
        self.state.resource_version = version
        if self.store is not None:
            self.store.set_resume_point(self.kind, version)
        self._mark_caught_up(version)

    async def run(self) -> None:
        """Forever: (re)list when needed, watch, and retry with backoff."""
        delay = self.settings.backoff_initial_seconds
        while True:
            try:
                if not self.state.resource_version:
                    await self.sync()
                await self.watch_once()
                delay = self.settings.backoff_initial_seconds
                if not self.state.synced:
                    self._count_catch_up_watch()
                # The server ended the stream at its timeoutSeconds: resume at once, quietly.
                continue
            except Gone:
                # Our resourceVersion was compacted away: relist and carry on.
                log.info("%s watch: resource version expired; relisting", self.kind)
                self.state.resource_version = ""
                self._restarted("410 Gone")
                continue
            except NotFound as exc:
                if self.optional:
                    # The CRD is not installed: nothing to watch, nothing to wait for.
                    self.state.absent = True
                    self._mark_synced()
                else:
                    self.state.last_error = str(exc)
                self._restarted(str(exc))
            except ApiError as exc:
                self.state.last_error = str(exc)
                if exc.status == 400 and self.state.resource_version:
                    # The stored resume point is unusable (garbage, or from elsewhere):
                    # a 400 will never heal; relist.
                    log.warning("%s watch refused its resume point (%s); relisting", self.kind, exc)
                    self.state.resource_version = ""
                    self._restarted(str(exc))
                    continue
                log.warning("%s watch failed: %s; retrying in %.1fs", self.kind, exc, delay)
                self._restarted(str(exc))
                if not self.state.synced and self.state.resource_version:
                    self._count_catch_up_watch()
            await asyncio.sleep(delay)
            delay = min(delay * 2, self.settings.backoff_max_seconds)

    def _count_catch_up_watch(self) -> None:
        """A resumed kind whose bookmarks stay short of the target is relisted: the cold
        start's cost for that kind, rather than waiting on etcd for minutes."""
        state = self.state
        state.catch_up_watches += 1
        if state.catch_up_watches < CATCH_UP_WATCHES:
            return
        target = f"the API server's {state.catch_up_to}" if state.catch_up_to else "a bookmark"
        log.info(
            "%s: %d watches from resourceVersion %s never reached %s; %s",
            self.kind,
            state.catch_up_watches,
            state.resource_version,
            target,
            CATCH_UP_RELIST,
        )
        state.resource_version = ""
        self._restarted("catch-up relist")

    def _restarted(self, why: str) -> None:
        self.state.restarts += 1
        if self._on_restart is not None:
            self._on_restart(self.kind)
