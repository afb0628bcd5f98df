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
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TYPE_CHECKING

from aiohttp import web
from opentelemetry.trace import Tracer

from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import ApiError, StoreError
from volsched.cache.store import OpenResult, Store, StoreStats
from volsched.daemon.binding.attempts import LastAttempts, RecordingReporter
from volsched.daemon.binding.binder import Binder, BindingSettings
from volsched.daemon.binding.preempting import Preempting
from volsched.daemon.binding.recovery import RecoveryReport, recover
from volsched.daemon.binding.replica_reconciler import ReplicaReconciler
from volsched.daemon.config.settings import Settings
from volsched.daemon.http.decisions_page import decisions_routes
from volsched.daemon.http.extender import Extender, ExtenderSettings, extender_routes
from volsched.daemon.http.server import HealthChecks, bound_port
from volsched.daemon.http.setup import serve_daemon_http
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.kube.ownership import Writer
from volsched.daemon.queue.queueing import SchedulingQueue
from volsched.daemon.runtime.extending import close_loop, scheduling_loop
from volsched.daemon.runtime.health import collect_gauges, health_checks
from volsched.daemon.runtime.interpreter import GC_THRESHOLDS, switch_interval
from volsched.daemon.runtime.leader import LeaderElector
from volsched.daemon.runtime.profiles import build_profiles, profile_specs
from volsched.daemon.telemetry.metrics import Metrics
from volsched.daemon.telemetry.startup import StartupTimeline
from volsched.daemon.telemetry.tracing import make_tracer
from volsched.daemon.watch.cache_sync import CacheSync
from volsched.daemon.watch.ingest import Ingest
from volsched.daemon.watch.refresh import refresh_claims
from volsched.daemon.watch.waiting import ChangeNotifier
from volsched.daemon.watch.watching import WatchSettings
from volsched.scheduling.profile_builder import PluginFactory
from volsched.scheduling.provisioners import storage_provisioners
from volsched.scheduling.storage_placement import ReplicaContext

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider

# A stopped daemon is gone within this long (systemd's and Kubernetes' grace is longer),
# and binding cycles get this much of it to finish their writes.
SHUTDOWN_SECONDS = 8.0
BINDING_GRACE_SECONDS = 2.0


log = logging.getLogger("volsched")


@dataclass(slots=True)
class DaemonOptions:
    watch: WatchSettings = field(default_factory=WatchSettings)
    grace_seconds: float = 30.0
    seed: int | None = None
    instance: str = field(default_factory=socket.gethostname)
    clock: Callable[[], float] = time.time
    tracer: Tracer | None = None
    startup: StartupTimeline = field(default_factory=StartupTimeline)


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
        # Each part gets the writes it owns (``kube.ownership``), nothing more.
        self.client = client.read_only()
        # Decisions are written only while this replica holds the lease.
        writes = client.for_writer(Writer.BINDING, leading=lambda: self.elector.is_leader)
        self.store = store
        self.options = options or DaemonOptions()
        self.metrics = metrics or Metrics(self.options.startup)
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
        self.replicas = ReplicaContext(self.cluster, settings.replica_scheduling, clock)
        self.plugins = PluginFactory(self.cluster, storage_provisioners(self.replicas))
        self.profiles = build_profiles(settings, self.cluster, self.plugins, self.options.seed)
        self.scheduler = self.profiles.default
        # The events that move rejected pods are the ones the profiles' plugins declare.
        self.queue = SchedulingQueue(
            self.cluster.pod_priority,
            time.monotonic,
            settings.backoff.initial_seconds,
            settings.backoff.max_seconds,
            settings.backoff.max_in_unschedulable_seconds,
            requeue=self.profiles.requeue_table(),
            hold=self.profiles.hold,
        )
        self.changes = ChangeNotifier()
        self.ingest = Ingest(
            self.cluster,
            self.queue,
            frozenset(name for name, _ in profile_specs(settings)),
            store,
            on_change=self.changes.notify,
            on_error=lambda kind: self.metrics.ingest_errors.labels(kind=kind).inc(),
            on_undecodable=lambda kind: self.metrics.undecodable_objects.labels(kind=kind).inc(),
        )
        self.attempts = LastAttempts()
        self.reporter = RecordingReporter(
            self.attempts, writes, settings.scheduler_name, self.options.instance, clock
        )
        self.binder = Binder(
            writes,
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
        self.loop = scheduling_loop(
            settings.extenders,
            self.ingest,
            self.cluster,
            self.profiles,
            self.queue,
            self.binder,
            self.reporter,
            self.metrics,
            self.profiles.names,
            tracer=tracer,
            preempting=Preempting(writes, self.reporter, clock),
            source=settings.source,
        )
        if self.profiles.nominated is not None:
            self.ingest.follow_nominations(self.profiles.nominated)
        # Nothing is decided or reported before this replica leads.
        self.loop.gate.clear()
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
            refresh_claims=partial(refresh_claims, self.client, self.ingest),
        )
        self.elector = LeaderElector(
            client.for_writer(Writer.LEADER_ELECTION), settings.leader_election
        )
        self.metrics.on_scrape(lambda: self.metrics.leader.set(1 if self.elector.is_leader else 0))
        self.authenticating = client.for_writer(Writer.AUTHENTICATION)
        self.sync = CacheSync(
            self.client,
            store,
            opened,
            self.ingest,
            self.cluster,
            self.options.watch,
            settings.database.path,
            on_restart=lambda kind: self.metrics.watch_restarts.labels(kind=kind).inc(),
        )
        self.recovered: RecoveryReport | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._runner: web.AppRunner | None = None
        self.ready = asyncio.Event()
        self._leading = asyncio.Event()
        self._elector_task: asyncio.Task[None] | None = None
        self._switch_interval = False
        self.metrics.on_scrape(
            lambda: collect_gauges(self.metrics, self.queue, self.cluster, self.store)
        )

    def health(self) -> HealthChecks:
        return health_checks(self.loop, self.sync, self.store, self.metrics, self.ready)

    # -- lifecycle ---------------------------------------------------------------------

    async def start(self, serve_http: bool = True) -> None:
        await self.sync.start()
        if serve_http:
            self._runner = await serve_daemon_http(
                self.settings.http, self.authenticating, self.health(), self.http_routes()
            )
        # Warm or cold, nothing is decided before every kind has caught up with the API
        # server: a stored cache is a head start, never a source of decisions.
        await self.sync.wait_synced()
        self.metrics.startup.mark("caught_up")
        # The cache is built: keep the collector from walking it again and again
        # (generation-2 collections over it were the scheduling cycle's p99).
        gc.collect()
        gc.freeze()
        gc.set_threshold(*GC_THRESHOLDS)
        switch_interval.acquire()
        self._switch_interval = True
        await self.start_deciding()
        # Start-up is over (``volsched ready`` is logged next): /readyz may pass.
        self.ready.set()
        self.metrics.startup.mark("ready")

    def http_routes(self) -> list[web.RouteDef]:
        """The routes served beside health and metrics, behind the same authentication."""
        return extender_routes(self.extender) + decisions_routes(
            self.cluster, self.profiles, self.attempts
        )

    async def start_deciding(self) -> None:
        """Once the caches are synced: the scheduling loop, replica placement and leader
        election (shadow mode starts its own deciding instead)."""
        # Standbys keep their caches warm; only the leader schedules and repairs.
        self.loop.gate.clear()
        self._tasks.append(asyncio.create_task(self.loop.run(), name="scheduling loop"))
        self.reconciler = ReplicaReconciler(
            self.binder.client, self.cluster, self.ingest, self.replicas, self._leading
        )
        self._tasks.append(asyncio.create_task(self.reconciler.run(), name="replica placement"))
        self._tasks.append(asyncio.create_task(self.reporter.keep_series(), name="event series"))
        self._elector_task = asyncio.create_task(
            self.elector.run(self._started_leading, self._stopped_leading), name="leader election"
        )
        if not self.settings.leader_election.enabled:
            await self.leading.wait()

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
        self.sync.drop_restored()
        self.loop.gate.set()
        self.loop.report_gated()
        self._leading.set()

    async def _stopped_leading(self) -> None:
        if self.loop.gate.is_set() and not self.loop.stopping:
            log.warning("lost leadership: scheduling stops")
        self.loop.gate.clear()
        self._leading.clear()
        await self.loop.abandon_bindings()
        await self.binder.undo_retries.stop()

    @property
    def http_port(self) -> int:
        assert self._runner is not None
        return bound_port(self._runner)

    async def stop(self) -> None:
        """Stop taking pods and be gone within ``SHUTDOWN_SECONDS`` whatever is going on.

        Binding cycles get a short grace to finish their writes; those still waiting
        (on a slow provisioner, say) are cut short without undoing anything: their
        intents are in the journal and in the objects, and recovery — at the next start,
        or on the replica that leads next — finishes or releases them. Releasing the
        lease and closing the database are bounded too (an API server away, another
        process holding the file, a full disk)."""
        clock = asyncio.get_running_loop().time
        deadline = clock() + min(self.options.grace_seconds, SHUTDOWN_SECONDS)
        self.binder.leave_to_recovery = True
        unfinished = await self.loop.drain(min(self.options.grace_seconds, BINDING_GRACE_SECONDS))
        await self.binder.undo_retries.stop()
        if unfinished:
            log.warning("%d binding cycle(s) left to recovery by shutdown", unfinished)
        if self._elector_task is not None:
            self._elector_task.cancel()
            await asyncio.gather(self._elector_task, return_exceptions=True)
            self._elector_task = None
            try:
                async with asyncio.timeout(max(0.1, min(2.0, deadline - clock()))):
                    await self.elector.release()
            except (ApiError, TimeoutError) as exc:
                log.warning("could not release the leader lease: %s", exc or "timed out")
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        await self.sync.stop_watching()
        await close_loop(self.loop)
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        await close_store(self, max(0.5, deadline - clock()))
        gc.unfreeze()
        if self._switch_interval:
            switch_interval.release()
            self._switch_interval = False
        if self._tracer_provider is not None:
            self._tracer_provider.shutdown()


async def close_store(daemon: Daemon, seconds: float) -> None:
    """Keep the snapshot and close the database, within ``seconds``."""
    try:
        async with asyncio.timeout(seconds):
            await daemon.sync.keep_snapshot()
            await daemon.store.close()
    except (TimeoutError, StoreError) as exc:
        # What was not written is relisted at the next start; the journal is intact.
        log.warning(
            "database %s not closed cleanly (%s); the next start catches up",
            daemon.settings.database.path,
            exc or "timed out",
        )


async def open_daemon(
    settings: Settings, client: KubeClient, options: DaemonOptions | None = None
) -> Daemon:
    options = options or DaemonOptions()
    metrics = Metrics(options.startup)

    def flushed(stats: StoreStats) -> None:
        metrics.database_write.observe(stats.last_flush_seconds)

    store, opened = await Store.open(settings.database.path, on_flush=flushed)
    metrics.startup.mark("database_open")
    if opened.state == "rebuilt":
        log.warning(
            "database %s was unreadable; moved to %s and rebuilt from the API server",
            settings.database.path,
            opened.moved_to,
        )
    if settings.shadow.enabled:
        from volsched.daemon.runtime.shadowing import ShadowDaemon  # built on Daemon

        return ShadowDaemon(settings, client, store, opened, options, metrics)
    return Daemon(settings, client, store, opened, options, metrics)
