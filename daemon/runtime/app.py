"""``volsched run``: the daemon, assembled.

Start-up order matters and is the reason this module exists:

1. open the SQLite store (a broken file is moved aside and rebuilt, never a crash loop);
2. load both cache layers from it — with a warm database only the changes since are
   fetched, not every object;
3. start one list+watch per kind, resuming from the stored resourceVersions, and wait
   until each has caught up with the API server (or relisted) before anything is
   decided or /readyz passes;
4. finish or roll back the binding journal's open intents against the API server;
5. start the scheduling loop and the HTTP endpoints.

Shutdown is the reverse, with a grace period for in-flight binding cycles and a final
database flush.
"""

from __future__ import annotations

import asyncio
import gc
import logging
import random
import socket
import sys
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Tracer

from volsched.cache.assumed import AssumeError
from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import ApiError, ConfigError, CorruptStore, NotFound, ObjectError
from volsched.cache.objects.core import Pod
from volsched.cache.objects.registry import KINDS
from volsched.cache.store import OpenResult, Store, StoreStats, snapshot
from volsched.daemon.binding.binder import Binder, BindingSettings
from volsched.daemon.binding.preempting import Preempting
from volsched.daemon.binding.recovery import RecoveryReport, recover
from volsched.daemon.binding.replica_reconciler import ReplicaReconciler
from volsched.daemon.binding.reporting import Reporter
from volsched.daemon.config.policy_file import load_policy_file
from volsched.daemon.config.settings import Settings
from volsched.daemon.http.extender import Extender, ExtenderSettings, extender_routes
from volsched.daemon.http.server import Check, HealthChecks, bound_port
from volsched.daemon.http.setup import serve_daemon_http
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.queue.queueing import SchedulingQueue
from volsched.daemon.runtime.leader import LeaderElector
from volsched.daemon.runtime.loop import SchedulingLoop
from volsched.daemon.runtime.sd_notify import Notifier
from volsched.daemon.telemetry.metrics import Metrics
from volsched.daemon.telemetry.tracing import make_tracer
from volsched.daemon.watch.ingest import Ingest
from volsched.daemon.watch.waiting import ChangeNotifier
from volsched.daemon.watch.watching import CORE_KINDS, STORAGE_KINDS, KindWatcher, WatchSettings
from volsched.scheduling.framework.profiles import Profiles
from volsched.scheduling.framework.runner import Scheduler
from volsched.scheduling.policy import PolicySpec
from volsched.scheduling.profile_builder import PluginSet, build_profile
from volsched.scheduling.provisioners import storage_provisioners
from volsched.scheduling.scheduler_config import default_profile
from volsched.scheduling.storage_placement import ReplicaContext

# The collector's thresholds once the cache is built. CPython's default (700 allocations
# a young collection, 10 young for a middle one, 10 middle for a full one) made the
# scheduling cycle, which allocates a little per candidate node, pay for collections in
# about a third of its time. Reference cycles are rare here; memory stays bounded.
GC_THRESHOLDS = (50_000, 20, 20)
# How long a thread waiting for the interpreter lets the one holding it run on (CPython's
# default is 5 ms). A waiting thread asks for the lock only after a whole interval in
# which it never changed hands, and the event loop lets go of it briefly at every
# iteration (in epoll) and takes it straight back: with scheduling cycles of a few
# milliseconds that never happens, so SQLite's worker thread starved. A burst of pods
# then held a write-behind flush of a few thousand rows for 2-7 s, every binding intent
# queued behind it, and bindings completed in one wave when the burst was over. At
# 0.5 ms the same flush takes under a second and bindings keep pace with scheduling.
SWITCH_INTERVAL_SECONDS = 0.0005

log = logging.getLogger("volsched")
# The meta key of the cluster a database mirrors.
CLUSTER_IDENTITY = "cluster.kube-system-uid"

STUCK_LOOP_SECONDS = 30.0


@dataclass(slots=True)
class DaemonOptions:
    watch: WatchSettings = field(default_factory=WatchSettings)
    grace_seconds: float = 30.0
    seed: int | None = None
    instance: str = field(default_factory=socket.gethostname)
    clock: Callable[[], float] = time.time
    tracer: Tracer | None = None


class Daemon:
    def __init__(
        self,
        settings: Settings,
        client: KubeClient,
        store: Store,
        opened: OpenResult,
        options: DaemonOptions | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        self.settings = settings
        self.client = client
        self.store = store
        self.opened = opened
        self.options = options or DaemonOptions()
        self.metrics = metrics or Metrics()
        self._tracer_provider: TracerProvider | None = None
        if self.options.tracer is not None:
            tracer = self.options.tracer
        else:
            tracer, self._tracer_provider = make_tracer(
                settings.tracing_endpoint, {}, self.options.instance
            )
        self.tracer = tracer
        self.cluster = ClusterCache()
        clock = self.options.clock
        self.queue = SchedulingQueue(
            self.cluster.pod_priority,
            time.monotonic,
            settings.backoff.initial_seconds,
            settings.backoff.max_seconds,
        )
        self.changes = ChangeNotifier()
        self.ingest = Ingest(
            self.cluster,
            self.queue,
            self._profile_names(),
            store,
            on_change=self.changes.notify,
            on_error=lambda kind: self.metrics.ingest_errors.labels(kind=kind).inc(),
        )
        self.replicas = ReplicaContext(self.cluster, settings.replica_scheduling, clock)
        self.plugins = PluginSet(self.cluster, storage_provisioners(self.replicas))
        self.profiles = self._build_profiles()
        self.scheduler = self.profiles.default
        self.reporter = Reporter(client, settings.scheduler_name, self.options.instance, clock)
        self.binder = Binder(
            client,
            self.cluster,
            self.ingest,
            self.profiles,
            self.queue,
            self.reporter,
            store,
            BindingSettings(
                bind_timeout_seconds=settings.bind_timeout_seconds,
                concurrent_writes=settings.parallelism,
            ),
            notifier=self.changes,
            tracer=tracer,
        )
        self.loop = SchedulingLoop(
            self.cluster,
            self.profiles,
            self.queue,
            self.binder,
            self.reporter,
            self.metrics,
            self.profiles.names,
            tracer=tracer,
            preempting=Preempting(client, self.reporter, clock),
        )
        self.extender = Extender(
            self.scheduler,
            self.binder.bind,
            self.cluster.pods.get,
            ExtenderSettings(
                path_prefix=settings.extender_path_prefix,
                locality_points=settings.extender_locality_points,
                scheduler_names=frozenset(settings.extender_scheduler_names),
            ),
            leading=lambda: self.loop.gate.is_set(),
            refresh_claims=self._refresh_claims,
        )
        self.elector = LeaderElector(client, settings.leader_election)
        self.metrics.on_scrape(lambda: self.metrics.leader.set(1 if self.elector.is_leader else 0))
        self.watchers: list[KindWatcher] = []
        self._resume: dict[str, str] = {}
        self._restored: list[tuple[str, str]] = []
        self.warm = False
        # The stored layer 1 came from the parsed snapshot, not from parsing the rows.
        self.loaded_from_snapshot = False
        self.discarded_foreign_state = False
        self.recovered: RecoveryReport | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._watch_tasks: list[asyncio.Task[None]] = []
        self._runner: web.AppRunner | None = None
        self.ready = asyncio.Event()
        self._leading = asyncio.Event()
        self._elector_task: asyncio.Task[None] | None = None
        self._switch_interval: float | None = None
        self.metrics.on_scrape(self._collect)

    def _profile_specs(self) -> list[tuple[str, PolicySpec]]:
        """The profiles to run: a Policy file's one, a KubeSchedulerConfiguration's, or
        the default profile. The storage rules only act on pods with replicated volumes
        (they skip the rest), so the daemon's default always carries them."""
        settings = self.settings
        if settings.policy_file:
            if settings.profiles:
                raise ConfigError(
                    f"{settings.policy_file}: a Policy file and a KubeSchedulerConfiguration's "
                    "profiles cannot both be given; keep one"
                )
            return [(settings.scheduler_name, load_policy_file(settings.policy_file))]
        if settings.profiles:
            return [(profile.scheduler_name, profile.policy) for profile in settings.profiles]
        return [(settings.scheduler_name, default_profile(with_storage=True).policy)]

    def _profile_names(self) -> frozenset[str]:
        return frozenset(name for name, _ in self._profile_specs())

    def _build_profiles(self) -> Profiles:
        rng = random.Random(self.options.seed)
        schedulers = {}
        for name, spec in self._profile_specs():
            # Each profile its own plugin instances (their arguments differ), one cache.
            plugins = PluginSet(self.cluster, self.plugins.provisioner_checks)
            profile = build_profile(spec, plugins, self.settings.percentage_of_nodes_to_score)
            schedulers[name] = Scheduler(self.cluster, profile, rng)
        return Profiles(schedulers)

    # -- state -----------------------------------------------------------------------

    def journal_depth(self) -> int:
        return self.store.stats.journal_depth

    def synced(self) -> bool:
        return all(w.state.synced for w in self.watchers)

    def _collect(self) -> None:
        metrics = self.metrics
        for queue, length in self.queue.lengths().items():
            metrics.pending_pods.labels(queue=queue).set(length)
        metrics.sync_incoming(self.queue.stats.incoming)
        for kind in (*CORE_KINDS, *STORAGE_KINDS):
            metrics.cache_objects.labels(kind=kind).set(sum(1 for _ in self.cluster.objects(kind)))
        metrics.assumed_objects.labels(kind="Pod").set(len(self.cluster.assumed_pods))
        metrics.assumed_objects.labels(kind="PersistentVolume").set(
            len(self.cluster.pvs.assumed_keys())
        )
        metrics.assumed_objects.labels(kind="PersistentVolumeClaim").set(
            len(self.cluster.pvcs.assumed_keys())
        )
        stats = self.store.stats
        metrics.database_pending.set(stats.pending)
        metrics.database_writable.set(1 if stats.writable else 0)
        metrics.journal_depth.set(stats.journal_depth)

    def health(self) -> HealthChecks:
        def loop_alive() -> str | None:
            age = time.monotonic() - self.loop.heartbeat
            return None if age < STUCK_LOOP_SECONDS else f"no progress for {age:.0f}s"

        def caches() -> str | None:
            if self.synced():
                return None
            waiting = [w.kind for w in self.watchers if not w.state.synced]
            return "waiting for " + ", ".join(waiting[:5])

        def database() -> str | None:
            # While writes fail (a full disk), bindings that need the journal cannot start.
            return self.store.write_problem if self.store.is_open else "closed"

        return HealthChecks(
            live=[Check("loop", loop_alive)],
            ready=[Check("informer-sync", caches), Check("database", database)],
            metrics=self.metrics.render,
        )

    # -- lifecycle ---------------------------------------------------------------------

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
        """A database records the cluster it mirrors (the kube-system namespace's uid); one
        from another cluster — a restored volume, a copied file, a kubeconfig pointing
        elsewhere — is discarded, never acted on, and the caches are relisted."""
        try:
            namespace = await self.client.get("Namespace", "kube-system")
        except ApiError as exc:
            log.warning(
                "cannot read the cluster's identity (namespace kube-system): %s; "
                "keeping the database",
                exc,
            )
            return
        uid = str((namespace.get("metadata") or {}).get("uid") or "")
        if not uid:
            return
        stored = await self.store.read_meta(CLUSTER_IDENTITY)
        if stored == uid:
            return
        if stored is not None:
            log.warning(
                "database %s belongs to another cluster (kube-system uid %s, this one's is "
                "%s): discarded; relisting",
                self.settings.database.path,
                stored,
                uid,
            )
            await self.store.discard_cluster_state()
            self.discarded_foreign_state = True
        await self.store.write_meta(CLUSTER_IDENTITY, uid)

    async def load_from_disk(self) -> None:
        started = time.perf_counter()
        try:
            stored = await self.store.load(snapshot_fingerprint=snapshot.fingerprint())
        except CorruptStore as problem:
            # One bad row must not become a crash loop: start over from a relist.
            moved = await self.store.rebuild(str(problem))
            log.warning(
                "database %s unusable (%s); moved to %s and rebuilt from the API server",
                self.settings.database.path,
                problem,
                moved,
            )
            self.opened = OpenResult("rebuilt", moved, str(problem))
            stored = await self.store.load()
        count = 0
        parsed = stored.snapshot
        for kind in (*CORE_KINDS, *STORAGE_KINDS):
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
        self._restore_assumptions(stored.assumed)
        log.info(
            "database %s: %d objects loaded in %.2fs (%s start%s)",
            self.settings.database.path,
            count,
            time.perf_counter() - started,
            "warm" if self.warm else "cold",
            ", from the snapshot" if parsed is not None else "",
        )

    def _restore_assumptions(self, assumed: Mapping[str, Mapping[str, Mapping[str, Any]]]) -> None:
        """Put layer 2 back as it was when the previous process stopped. It belongs to
        open journal intents, which recovery resolves before any scheduling; until then
        the cache shows what was assumed (and ``_drop_restored`` clears it after)."""
        for kind, items in assumed.items():
            for key, raw in items.items():
                self._restored.append((kind, key))
                if kind == "Pod":
                    pod = self.cluster.pods.get(key)
                    node = str((raw.get("spec") or {}).get("nodeName") or "")
                    if pod is not None and not pod.node_name and node:
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

    def _drop_restored(self) -> None:
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
        for kind in (*CORE_KINDS, *STORAGE_KINDS):
            watcher = KindWatcher(
                kind,
                self.client,
                self.ingest,
                self.store,
                self.options.watch,
                resume_from=resume.get(kind, ""),
                on_restart=lambda k: self.metrics.watch_restarts.labels(kind=k).inc(),
                optional=kind in STORAGE_KINDS,
                apply_after=loaded,
            )
            self.watchers.append(watcher)
            task = asyncio.create_task(watcher.run(), name=f"watch {kind}")
            self._watch_tasks.append(task)
            self._tasks.append(task)

    async def _close_watches(self) -> None:
        for task in self._watch_tasks:
            task.cancel()
        await asyncio.gather(*self._watch_tasks, return_exceptions=True)
        self._tasks = [t for t in self._tasks if t not in self._watch_tasks]
        self._watch_tasks.clear()
        self.watchers.clear()

    async def start(self, serve_http: bool = True) -> None:
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
        await self.load_from_disk()
        if resumed and (not self.warm or self._resume != resumed):
            # The load judged the file otherwise (rebuilt, empty): start over from it.
            if targets is not None:
                await asyncio.gather(targets, return_exceptions=True)
            await self._close_watches()
            targets = None
        if not self.watchers:
            self._open_watches(self._resume if self.warm else {}, loaded)
            if self.warm:
                targets = asyncio.create_task(self._set_catch_up_targets())
        if targets is not None:
            await targets
        loaded.set()
        if serve_http:
            self._runner = await serve_daemon_http(
                self.settings.http, self.client, self.health(), extender_routes(self.extender)
            )
        # Warm or cold, nothing is decided before every kind has caught up with the API
        # server: a stored cache is a head start, never a source of decisions.
        await asyncio.gather(*(w.state.synced_event.wait() for w in self.watchers))
        # The cache is built: keep the collector from walking it again and again
        # (generation-2 collections over it were the scheduling cycle's p99).
        gc.collect()
        gc.freeze()
        gc.set_threshold(*GC_THRESHOLDS)
        self._switch_interval = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
        # Standbys keep their caches warm; only the leader schedules and repairs.
        self.loop.gate.clear()
        self._tasks.append(asyncio.create_task(self.loop.run(), name="scheduling loop"))
        self.reconciler = ReplicaReconciler(
            self.client, self.cluster, self.ingest, self.replicas, self._leading
        )
        self._tasks.append(asyncio.create_task(self.reconciler.run(), name="replica placement"))
        self._elector_task = asyncio.create_task(
            self.elector.run(self._started_leading, self._stopped_leading), name="leader election"
        )
        self.ready.set()
        if not self.settings.leader_election.enabled:
            await self.leading.wait()

    async def _refresh_claims(self, pod: Pod) -> str | None:
        """Read the pod's claims (and their volumes) from the API server into the cache."""
        for claim in pod.claim_names():
            try:
                raw = await self.client.get("PersistentVolumeClaim", claim, pod.meta.namespace)
                self.ingest.upsert("PersistentVolumeClaim", raw, persist=False)
                volume = (raw.get("spec") or {}).get("volumeName")
                if volume:
                    pv = await self.client.get("PersistentVolume", volume)
                    self.ingest.upsert("PersistentVolume", pv, persist=False)
            except NotFound:
                continue
            except ApiError as exc:
                return f"cannot read claim {pod.meta.namespace}/{claim}: {exc}"
        return None

    @property
    def leading(self) -> asyncio.Event:
        return self._leading

    async def _started_leading(self) -> None:
        log.info("leading as %s", self.settings.leader_election.identity)
        try:
            self.recovered = await recover(self.binder)
        except Exception:
            # Scheduling must not stop because the journal could not be read: what was
            # not recovered stays in it for the next start.
            log.exception("binding journal recovery failed; scheduling anyway")
        self._drop_restored()
        self.loop.gate.set()
        self._leading.set()

    async def _stopped_leading(self) -> None:
        if self.loop.gate.is_set() and not self.loop.stopping:
            log.warning("lost leadership: scheduling stops")
        self.loop.gate.clear()
        self._leading.clear()
        await self.loop.abandon_bindings()

    @property
    def http_port(self) -> int:
        assert self._runner is not None
        return bound_port(self._runner)

    async def _keep_snapshot(self) -> None:
        """At a clean stop, the parsed cache for the next warm start (see
        ``volsched.cache.store.snapshot``). Only a cache that had caught up is kept: one
        cut short mid-relist holds a mix the rows do not."""
        if not self.store.is_open or not self.watchers or not self.synced():
            return
        started = time.perf_counter()
        parts = snapshot.encode(self.ingest.views, self.ingest.raw)
        written = await self.store.write_snapshot(snapshot.fingerprint(), parts)
        if written:
            log.info(
                "database %s: snapshot of %d objects (%.1f MB) kept in %.2fs",
                self.settings.database.path,
                sum(len(views) for views in self.ingest.views.values()),
                written / 1e6,
                time.perf_counter() - started,
            )

    async def stop(self) -> None:
        """Stop taking pods, let bindings finish within the grace period, flush, close."""
        unfinished = await self.loop.drain(self.options.grace_seconds)
        if unfinished:
            log.warning("%d binding cycle(s) cut short by shutdown", unfinished)
        if self._elector_task is not None:
            self._elector_task.cancel()
            await asyncio.gather(self._elector_task, return_exceptions=True)
            self._elector_task = None
            try:
                await self.elector.release()
            except ApiError as exc:
                log.warning("could not release the leader lease: %s", exc)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await self._keep_snapshot()
        await self.store.close()
        gc.unfreeze()
        if self._switch_interval is not None:
            sys.setswitchinterval(self._switch_interval)
            self._switch_interval = None
        if self._tracer_provider is not None:
            self._tracer_provider.shutdown()


async def open_daemon(
    settings: Settings, client: KubeClient, options: DaemonOptions | None = None
) -> Daemon:
    metrics = Metrics()

    def flushed(stats: StoreStats) -> None:
        metrics.database_write.observe(stats.last_flush_seconds)

    store, opened = await Store.open(settings.database.path, on_flush=flushed)
    if opened.state == "rebuilt":
        log.warning(
            "database %s was unreadable; moved to %s and rebuilt from the API server",
            settings.database.path,
            opened.moved_to,
        )
    return Daemon(settings, client, store, opened, options, metrics)


async def _watchdog(daemon: Daemon, notifier: Notifier, period: float) -> None:
    """Ping systemd's watchdog only while every liveness check passes, so a stuck loop
    gets the service restarted."""
    checks = daemon.health().live
    while True:
        if all(check.probe() is None for check in checks):
            notifier.watchdog()
        await asyncio.sleep(period)


async def run_until_signalled(
    daemon: Daemon, stop: asyncio.Event, notifier: Notifier | None = None
) -> None:
    # SIGTERM counts in every phase: a cold start against an API server that cannot be
    # reached waits for its first list forever, and must still stop when told to.
    starting = asyncio.create_task(daemon.start(), name="start")
    stopping = asyncio.create_task(stop.wait(), name="stop signal")
    await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if not starting.done():
        log.info("stopped while starting")
        starting.cancel()
        await asyncio.gather(starting, return_exceptions=True)
        await daemon.stop()
        return
    stopping.cancel()
    await asyncio.gather(stopping, return_exceptions=True)
    starting.result()
    log.info(
        "volsched ready: scheduler %r, http on %s",
        daemon.settings.scheduler_name,
        daemon.settings.http.address,
    )
    watchdog: asyncio.Task[None] | None = None
    if notifier is not None:
        notifier.ready("caches warm; scheduling as leader or waiting as standby")
        period = notifier.watchdog_ping_seconds()
        if period is not None:
            watchdog = asyncio.create_task(_watchdog(daemon, notifier, period), name="watchdog")
    await stop.wait()
    log.info("shutting down")
    if notifier is not None:
        notifier.stopping("finishing binding cycles")
    if watchdog is not None:
        watchdog.cancel()
        await asyncio.gather(watchdog, return_exceptions=True)
    await daemon.stop()
