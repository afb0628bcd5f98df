"""Bringing the cache up to date with the API server, and keeping it for the next start.

A start reads the SQLite store (a broken file is moved aside and rebuilt, never a crash
loop), checks that the file mirrors this cluster, opens one list+watch per kind resuming
from the stored resourceVersions, and counts the cache synced only when every kind is
proven to hold the API server's state as of the start: its watch caught up, a
metadata-only list matched it, or it was relisted (``proving`` picks the quickest). A
stored cache is a head start, never a source of decisions. A clean stop keeps the parsed cache as a snapshot for the next
warm start.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from volsched.cache.assumed import AssumeError
from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import ApiError, CorruptStore, ObjectError
from volsched.cache.objects.registry import KINDS
from volsched.cache.store import OpenResult, Store, snapshot
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.watch.cluster_identity import discard_foreign_state
from volsched.daemon.watch.ingest import Ingest
from volsched.daemon.watch.proving import CatchUpProofs
from volsched.daemon.watch.restart_plan import ProofCosts
from volsched.daemon.watch.watching import OPTIONAL_KINDS, WATCHED_KINDS, KindWatcher, WatchSettings

log = logging.getLogger("volsched")


class CacheSync:
    """The watchers of every kind and the stored state they resume from."""

    def __init__(
        self,
        client: KubeClient,
        store: Store,
        opened: OpenResult,
        ingest: Ingest,
        cluster: ClusterCache,
        watch: WatchSettings,
        database_path: str,
        on_restart: Callable[[str], None],
    ) -> None:
        self.client = client
        self.store = store
        self.opened = opened
        self.ingest = ingest
        self.cluster = cluster
        self.watch = watch
        self.database_path = database_path
        self.on_restart = on_restart
        self.watchers: list[KindWatcher] = []
        self.warm = False
        # The stored layer 1 came from the parsed snapshot, not from parsing the rows.
        self.loaded_from_snapshot = False
        self.discarded_foreign_state = False
        self._resume: dict[str, str] = {}
        self._restored: list[tuple[str, str]] = []
        self._watch_tasks: list[asyncio.Task[None]] = []
        # Proving the resumed kinds current after the load (see ``proving``).
        self.proofs = CatchUpProofs(client, cluster, ProofCosts())
        self._opened_at = 0.0

    def synced(self) -> bool:
        return all(w.state.synced for w in self.watchers)

    def waiting_for(self) -> list[str]:
        return [w.kind for w in self.watchers if not w.state.synced]

    async def start(self) -> None:
        """Load the stored cache and open the watches; return once every kind caught up."""
        await self.check_cluster_identity()
        # The resumed watches open first and take the API server's current version as
        # their catch-up target while the stored cache loads: the bookmark that proves a
        # quiet kind caught up comes due during the load, not after it. Nothing they
        # bring is applied before the load is done.
        loaded = asyncio.Event()
        resumed = await self.store.peek_resume_points()
        targets: asyncio.Task[None] | None = None
        if resumed:
            self._open_watches(resumed, loaded)
            targets = asyncio.create_task(self._set_catch_up_targets())
            self.proofs.prefetch([w.kind for w in self.watchers if w.state.resource_version])
        await self.load_from_disk()
        if resumed and (not self.warm or self._resume != resumed):
            # The load judged the file otherwise (rebuilt, empty): start over from it.
            if targets is not None:
                await asyncio.gather(targets, return_exceptions=True)
            await self.close()
            targets = None
        if not self.watchers:
            self._open_watches(self._resume if self.warm else {}, loaded)
            if self.warm:
                targets = asyncio.create_task(self._set_catch_up_targets())
        if targets is not None:
            await targets
        loaded.set()
        if self.warm and self._resume:
            self.proofs.start(self.watchers, self._opened_at, self._relist)

    async def wait_synced(self) -> None:
        await asyncio.gather(*(w.state.synced_event.wait() for w in self.watchers))

    async def _relist(self, watcher: KindWatcher) -> None:
        """Drop a resumed kind's watch and relist it instead."""
        index = self.watchers.index(watcher)
        task = self._watch_tasks[index]
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        watcher.forget_resume_point()
        self._watch_tasks[index] = asyncio.create_task(watcher.run(), name=f"watch {watcher.kind}")

    async def _set_catch_up_targets(self) -> None:
        """The API server's current resourceVersion per resumed kind (a one-item list
        each): a resumed watch counts as synced only at or past it."""

        async def target(watcher: KindWatcher) -> None:
            if not watcher.state.resource_version:
                return
            try:
                _, version = await self.client.list(watcher.kind, limit=1)
            except ApiError:
                # Absent CRD, or the server is away: the watch finds out and relists.
                return
            watcher.catch_up_to(version)

        await asyncio.gather(*(target(w) for w in self.watchers))

    async def check_cluster_identity(self) -> None:
        if await discard_foreign_state(self.client, self.store, self.database_path):
            self.discarded_foreign_state = True

    async def load_from_disk(self) -> None:
        started = time.perf_counter()
        try:
            stored = await self.store.load(snapshot_fingerprint=snapshot.fingerprint())
        except CorruptStore as problem:
            # One bad row must not become a crash loop: start over from a relist.
            moved = await self.store.rebuild(str(problem))
            log.warning(
                "database %s unusable (%s); moved to %s and rebuilt from the API server",
                self.database_path,
                problem,
                moved,
            )
            self.opened = OpenResult("rebuilt", moved, str(problem))
            stored = await self.store.load()
        count = 0
        parsed = stored.snapshot
        for kind in WATCHED_KINDS:
            if parsed is not None:
                texts = parsed.raw.get(kind, {})
                for key, view in parsed.views.get(kind, {}).items():
                    self.ingest.apply_view(kind, view, texts.get(key))
                    count += 1
                continue
            for raw in stored.objects.get(kind, {}).values():
                self.ingest.upsert(kind, raw, persist=False)
                count += 1
        self.warm = count > 0 and bool(stored.resume_points)
        self.loaded_from_snapshot = parsed is not None
        self._resume = dict(stored.resume_points)
        self.restore_assumptions(stored.assumed)
        log.info(
            "database %s: %d objects loaded in %.2fs (%s start%s)",
            self.database_path,
            count,
            time.perf_counter() - started,
            "warm" if self.warm else "cold",
            ", from the snapshot" if parsed is not None else "",
        )

    def restore_assumptions(self, assumed: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> None:
        """Put layer 2 back as it was when the previous process stopped. It belongs to
        open journal intents, which recovery resolves before any scheduling; until then
        the cache shows what was assumed (and ``drop_restored`` clears it after)."""
        for kind, items in assumed.items():
            for key, raw in items.items():
                self._restored.append((kind, key))
                if kind == "Pod":
                    pod = self.cluster.pods.get(key)
                    spec = raw.get("spec")
                    node = spec.get("nodeName") if isinstance(spec, Mapping) else None
                    if pod is not None and not pod.node_name and isinstance(node, str) and node:
                        self.cluster.assume_pod(pod, node)
                    continue
                if kind not in ("PersistentVolume", "PersistentVolumeClaim"):
                    continue
                try:
                    view = KINDS[kind].parse(raw)
                    target = self.cluster.pvs if kind == "PersistentVolume" else self.cluster.pvcs
                    target.assume(key, view)
                except (ObjectError, AssumeError) as exc:
                    log.info("stored assumption %s %s no longer applies: %s", kind, key, exc)

    def drop_restored(self) -> None:
        for kind, key in self._restored:
            if kind == "Pod":
                self.cluster.forget_pod(key)
            elif kind == "PersistentVolume":
                self.cluster.pvs.restore(key)
            elif kind == "PersistentVolumeClaim":
                self.cluster.pvcs.restore(key)
            self.store.delete_assumed(kind, key)
        self._restored.clear()

    def _open_watches(self, resume: Mapping[str, str], loaded: asyncio.Event) -> None:
        self._opened_at = asyncio.get_running_loop().time()
        for kind in WATCHED_KINDS:
            watcher = KindWatcher(
                kind,
                self.client,
                self.ingest,
                self.store,
                self.watch,
                resume_from=resume.get(kind, ""),
                on_restart=self.on_restart,
                optional=kind in OPTIONAL_KINDS,
                apply_after=loaded,
            )
            self.watchers.append(watcher)
            task = asyncio.create_task(watcher.run(), name=f"watch {kind}")
            self._watch_tasks.append(task)

    async def stop_watching(self) -> None:
        """End every watch; the watchers stay, to tell whether the cache had caught up."""
        await self.proofs.close()
        for task in self._watch_tasks:
            task.cancel()
        await asyncio.gather(*self._watch_tasks, return_exceptions=True)
        self._watch_tasks.clear()

    async def close(self) -> None:
        await self.stop_watching()
        self.watchers.clear()

    async def keep_snapshot(self) -> None:
        """At a clean stop, the parsed cache for the next warm start (see
        ``volsched.cache.store.snapshot``). Only a cache that had caught up is kept: one
        cut short mid-relist holds a mix the rows do not."""
        if not self.store.is_open or not self.watchers or not self.synced():
            return
        started = time.perf_counter()
        views = self.ingest.views()
        parts = snapshot.encode(views, self.ingest.raw)
        written = await self.store.write_snapshot(snapshot.fingerprint(), parts)
        if written:
            log.info(
                "database %s: snapshot of %d objects (%.1f MB) kept in %.2fs",
                self.database_path,
                sum(len(by_key) for by_key in views.values()),
                written / 1e6,
                time.perf_counter() - started,
            )
