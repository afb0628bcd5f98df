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
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field

from aiohttp import web
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.trace import Tracer

from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import ApiError, NotFound, StoreError
from volsched.cache.objects.core import Pod
from volsched.cache.store import OpenResult, Store, StoreStats
from volsched.daemon.binding.binder import Binder, BindingSettings
from volsched.daemon.binding.preempting import Preempting
from volsched.daemon.binding.recovery import RecoveryReport, recover
from volsched.daemon.binding.replica_reconciler import ReplicaReconciler
from volsched.daemon.binding.reporting import Reporter
from volsched.daemon.config.settings import Settings
from volsched.daemon.http.extender import Extender, ExtenderSettings, extender_routes
from volsched.daemon.http.server import HealthChecks, bound_port
from volsched.daemon.http.setup import serve_daemon_http
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.kube.ownership import Writer
from volsched.daemon.queue.queueing import SchedulingQueue
from volsched.daemon.runtime.extending import close_loop, scheduling_loop
from volsched.daemon.runtime.health import collect_gauges, health_checks
from volsched.daemon.runtime.leader import LeaderElector
from volsched.daemon.runtime.profiles import build_profiles, profile_specs
from volsched.daemon.telemetry.metrics import Metrics
from volsched.daemon.telemetry.tracing import make_tracer
from volsched.daemon.watch.cache_sync import CacheSync
from volsched.daemon.watch.ingest import Ingest
from volsched.daemon.watch.waiting import ChangeNotifier
from volsched.daemon.watch.watching import WatchSettings
from volsched.scheduling.profile_builder import PluginSet
from volsched.scheduling.provisioners import storage_provisioners
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
# A stopped daemon is gone within this long (systemd's and Kubernetes' grace is longer),
# and binding cycles get this much of it to finish their writes.
SHUTDOWN_SECONDS = 8.0
BINDING_GRACE_SECONDS = 2.0


class _SwitchInterval:
    """The process's switch interval while any daemon in it runs, and the embedding
    process's own setting back when the last one stops (two daemons in one process, as
    in tests, must not hand each other's setting back)."""

    def __init__(self) -> None:
        self.users = 0
        self.saved = 0.0

    def acquire(self) -> None:
        if self.users == 0:
            self.saved = sys.getswitchinterval()
            sys.setswitchinterval(SWITCH_INTERVAL_SECONDS)
        self.users += 1

    def release(self) -> None:
        self.users -= 1
        if self.users == 0:
            sys.setswitchinterval(self.saved)


_switch_interval = _SwitchInterval()

log = logging.getLogger("volsched")


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
        # Each part gets the writes it owns (``kube.ownership``), nothing more.
        self.client = client.read_only()
        # Decisions are written only while this replica holds the lease.
        writes = client.for_writer(Writer.BINDING, leading=lambda: self.elector.is_leader)
        self.store = store
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
        self.replicas = ReplicaContext(self.cluster, settings.replica_scheduling, clock)
        self.plugins = PluginSet(self.cluster, storage_provisioners(self.replicas))
        self.profiles = build_profiles(settings, self.cluster, self.plugins, self.options.seed)
        self.scheduler = self.profiles.default
        # The events that move rejected pods are the ones the profiles' plugins declare.
        self.queue = SchedulingQueue(
            self.cluster.pod_priority,
            time.monotonic,
            settings.backoff.initial_seconds,
            settings.backoff.max_seconds,
            requeue=self.profiles.requeue_table(),
        )
        self.changes = ChangeNotifier()
        self.ingest = Ingest(
            self.cluster,
            self.queue,
            frozenset(name for name, _ in profile_specs(settings)),
            store,
            on_change=self.changes.notify,
            on_error=lambda kind: self.metrics.ingest_errors.labels(kind=kind).inc(),
        )
        self.reporter = Reporter(writes, settings.scheduler_name, self.options.instance, clock)
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
            refresh_claims=self._refresh_claims,
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
                self.settings.http,
                self.authenticating,
                self.health(),
                extender_routes(self.extender),
            )
        # Warm or cold, nothing is decided before every kind has caught up with the API
        # server: a stored cache is a head start, never a source of decisions.
        await self.sync.wait_synced()
        # The cache is built: keep the collector from walking it again and again
        # (generation-2 collections over it were the scheduling cycle's p99).
        gc.collect()
        gc.freeze()
        gc.set_threshold(*GC_THRESHOLDS)
        _switch_interval.acquire()
        self._switch_interval = True
        # Standbys keep their caches warm; only the leader schedules and repairs.
        self.loop.gate.clear()
        self._tasks.append(asyncio.create_task(self.loop.run(), name="scheduling loop"))
        self.reconciler = ReplicaReconciler(
            self.binder.client, self.cluster, self.ingest, self.replicas, self._leading
        )
        self._tasks.append(asyncio.create_task(self.reconciler.run(), name="replica placement"))
        self._elector_task = asyncio.create_task(
            self.elector.run(self._started_leading, self._stopped_leading), name="leader election"
        )
        if not self.settings.leader_election.enabled:
            await self.leading.wait()
        # Start-up is over (``volsched ready`` is logged next): /readyz may pass.
        self.ready.set()

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
            _switch_interval.release()
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
