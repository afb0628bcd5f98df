"""Prometheus metrics with kube-scheduler's names and labels, plus volsched's own.

One registry per daemon (not the global one), so two daemons in one process — as in the
leader-election tests — do not collide. Gauges that describe state (queue lengths,
cache sizes, journal depth) are read at scrape time from the live objects.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from volsched.daemon.telemetry.startup import StartupTimeline

ATTEMPT_BUCKETS = (
    0.001,
    0.002,
    0.004,
    0.008,
    0.016,
    0.032,
    0.064,
    0.128,
    0.256,
    0.512,
    1.024,
    2.048,
)

# kube-scheduler's buckets for the algorithm latency: 1 ms doubling, 15 of them.
ALGORITHM_BUCKETS = tuple(0.001 * 2**exponent for exponent in range(15))


class Metrics:
    def __init__(self, startup: StartupTimeline | None = None) -> None:
        self.registry = CollectorRegistry()
        registry = self.registry
        self.startup = startup or StartupTimeline()
        self.startup_seconds = Gauge(
            "volsched_startup_seconds",
            "Seconds after the process started that each start-up milestone was reached "
            "(imported, connected, database_open, caught_up, ready, first_binding).",
            ["milestone"],
            registry=registry,
        )
        self.startup.on_mark(
            lambda milestone, seconds: self.startup_seconds.labels(milestone=milestone).set(seconds)
        )
        self.schedule_attempts = Counter(
            "scheduler_schedule_attempts",
            "Number of attempts to schedule pods, by the result.",
            ["result", "profile"],
            registry=registry,
        )
        self.attempt_duration = Histogram(
            "scheduler_scheduling_attempt_duration_seconds",
            "Scheduling attempt latency in seconds (scheduling algorithm + binding).",
            ["result", "profile"],
            buckets=ATTEMPT_BUCKETS,
            registry=registry,
        )
        # The scheduling cycle alone (PreFilter to Reserve): what a pod costs before its
        # binding, which is what the end-to-end benchmark subtracts from the CPU it uses.
        self.algorithm_duration = Histogram(
            "scheduler_scheduling_algorithm_duration_seconds",
            "Scheduling algorithm latency in seconds",
            buckets=ALGORITHM_BUCKETS,
            registry=registry,
        )
        self.pending_pods = Gauge(
            "scheduler_pending_pods",
            "Number of pending pods, by the queue type.",
            ["queue"],
            registry=registry,
        )
        self.queue_incoming = Counter(
            "scheduler_queue_incoming_pods",
            "Number of pods added to scheduling queues by event and queue type.",
            ["queue", "event"],
            registry=registry,
        )
        self.cache_objects = Gauge(
            "volsched_cache_objects",
            "Objects held in the informer cache, by kind.",
            ["kind"],
            registry=registry,
        )
        self.assumed_objects = Gauge(
            "volsched_cache_assumed_objects",
            "Objects assumed by the scheduler and not yet confirmed, by kind.",
            ["kind"],
            registry=registry,
        )
        self.database_write = Histogram(
            "volsched_database_write_duration_seconds",
            "Time to flush one batch of cache writes to SQLite.",
            buckets=(0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5),
            registry=registry,
        )
        self.database_pending = Gauge(
            "volsched_database_pending_writes",
            "Cache writes queued for the next SQLite flush.",
            registry=registry,
        )
        self.database_writable = Gauge(
            "volsched_database_writable",
            "1 while writes to the SQLite database succeed, 0 while they fail (a full disk).",
            registry=registry,
        )
        self.journal_depth = Gauge(
            "volsched_binding_journal_depth",
            "Binding cycles in flight (open intents in the journal).",
            registry=registry,
        )
        self.watch_restarts = Counter(
            "volsched_watch_restarts",
            "Watch streams restarted after a failure (an error, a broken or stalled stream, "
            "410 Gone), by kind; a watch the server ended at its timeout is renewed uncounted.",
            ["kind"],
            registry=registry,
        )
        self.ingest_errors = Counter(
            "volsched_ingest_errors",
            "Objects from the API server that could not be read, by kind.",
            ["kind"],
            registry=registry,
        )
        self.undecodable_objects = Counter(
            "volsched_undecodable_objects",
            "Objects of a list or a watch that could not be decoded (a number too long, "
            "a lone surrogate, nesting too deep), skipped, by kind.",
            ["kind"],
            registry=registry,
        )
        self.binding_duration = Histogram(
            "volsched_binding_duration_seconds",
            "Binding cycle latency (volumes bound, pod bound).",
            ["result"],
            buckets=(0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60),
            registry=registry,
        )
        # Calls to the HTTP extenders of a KubeSchedulerConfiguration, by the extender's
        # urlPrefix and the verb (filter, prioritize, preempt, bind).
        self.extender_requests = Counter(
            "volsched_extender_requests",
            "Calls to HTTP scheduler extenders, by extender, verb and result "
            "(success, error: an HTTP or protocol failure or the extender's own error, "
            "timeout: no answer within its httpTimeout).",
            ["extender", "verb", "result"],
            registry=registry,
        )
        self.extender_duration = Histogram(
            "volsched_extender_request_duration_seconds",
            "Latency of calls to HTTP scheduler extenders, by extender and verb.",
            ["extender", "verb"],
            buckets=(0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10),
            registry=registry,
        )
        self.leader = Gauge(
            "leader_election_master_status",
            "1 while this replica holds the leader lease, 0 as a standby.",
            ["name"],
            registry=registry,
        ).labels(name="volsched")
        # Shadow mode (``volsched run --shadow``): each pod another scheduler bound,
        # compared with volsched's decision for it, by the outcome of the comparison.
        self.shadow_comparisons = Counter(
            "volsched_shadow_comparisons",
            "Pods another scheduler bound, compared with volsched's decision, by outcome "
            "(agreed, tied, lower_score, rejected, unschedulable, unknown_node, error), "
            "the pod's schedulerName and the cause of a difference (none, "
            "storage-preference, rejected, fidelity, tie-break, unknown).",
            ["outcome", "scheduler", "cause"],
            registry=registry,
        )
        self.shadow_pending_decisions = Counter(
            "volsched_shadow_pending_decisions",
            "Pending pods of the shadowed schedulers decided without binding, by result "
            "(placeable, unschedulable, error).",
            ["result"],
            registry=registry,
        )
        self._collectors: list[Callable[[], None]] = []
        self._incoming_seen: dict[tuple[str, str], int] = {}

    def on_scrape(self, collect: Callable[[], None]) -> None:
        self._collectors.append(collect)

    def sync_incoming(self, counts: Mapping[tuple[str, str], int]) -> None:
        """Bring the incoming-pods counter up to the queue's own counts."""
        for key, total in counts.items():
            seen = self._incoming_seen.get(key, 0)
            if total > seen:
                self.queue_incoming.labels(queue=key[0], event=key[1]).inc(total - seen)
                self._incoming_seen[key] = total

    def render(self) -> bytes:
        for collect in self._collectors:
            collect()
        return generate_latest(self.registry)
