"""What /livez, /readyz and the scrape-time gauges read from the running daemon."""

from __future__ import annotations

import asyncio
import time
from typing import Protocol

from volsched.cache.cluster import ClusterCache
from volsched.cache.store import Store
from volsched.daemon.http.server import Check, HealthChecks
from volsched.daemon.queue.queueing import SchedulingQueue
from volsched.daemon.telemetry.metrics import Metrics
from volsched.daemon.watch.cache_sync import CacheSync
from volsched.daemon.watch.watching import WATCHED_KINDS

STUCK_LOOP_SECONDS = 30.0


class DecidingLoop(Protocol):
    """What the checks read of the loop that decides pods: the scheduling loop, or the
    shadow's."""

    heartbeat: float
    started: bool
    running: bool


def collect_gauges(
    metrics: Metrics, queue: SchedulingQueue, cluster: ClusterCache, store: Store
) -> None:
    for name, length in queue.lengths().items():
        metrics.pending_pods.labels(queue=name).set(length)
    metrics.sync_incoming(queue.stats.incoming)
    for kind in WATCHED_KINDS:
        metrics.cache_objects.labels(kind=kind).set(sum(1 for _ in cluster.objects(kind)))
    metrics.assumed_objects.labels(kind="Pod").set(len(cluster.assumed_pods))
    metrics.assumed_objects.labels(kind="PersistentVolume").set(len(cluster.pvs.assumed_keys()))
    metrics.assumed_objects.labels(kind="PersistentVolumeClaim").set(
        len(cluster.pvcs.assumed_keys())
    )
    stats = store.stats
    metrics.database_pending.set(stats.pending)
    metrics.database_writable.set(1 if stats.writable else 0)
    metrics.journal_depth.set(stats.journal_depth)


def health_checks(
    loop: DecidingLoop,
    sync: CacheSync,
    store: Store,
    metrics: Metrics,
    started: asyncio.Event,
) -> HealthChecks:
    """``started`` is set when start-up is over (the daemon logs ``volsched ready``):
    /readyz passes no sooner, whatever the other checks say."""

    def loop_alive() -> str | None:
        age = time.monotonic() - loop.heartbeat
        return None if age < STUCK_LOOP_SECONDS else f"no progress for {age:.0f}s"

    def caches() -> str | None:
        if sync.synced():
            return None
        return "waiting for " + ", ".join(sync.waiting_for()[:5])

    def scheduling() -> str | None:
        # A loop that stopped, or makes no progress, decides nothing: not ready.
        if loop.started and not loop.running:
            return "scheduling loop stopped"
        return loop_alive()

    def startup() -> str | None:
        return None if started.is_set() else "starting"

    def database() -> str | None:
        # While writes fail (a full disk), bindings that need the journal cannot start.
        return store.write_problem if store.is_open else "closed"

    return HealthChecks(
        live=[Check("loop", loop_alive)],
        ready=[
            Check("startup", startup),
            Check("informer-sync", caches),
            Check("database", database),
            Check("scheduling", scheduling),
        ],
        metrics=metrics.render,
    )
