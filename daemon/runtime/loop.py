"""The scheduling loop: one pod at a time through a scheduling cycle, then a binding cycle
in the background.

The cycle is synchronous (no await inside), so the cluster cache cannot change under it:
watch events are applied between cycles. Binding cycles run concurrently and are never
waited for, so a pod waiting for its volumes never holds up the next pod; the binder
bounds how many API writes are in flight, not how many pods wait.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable, Collection, Coroutine, Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Tracer

from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.core import Pod
from volsched.daemon.binding.binder import Binder, give_back
from volsched.daemon.binding.preempting import Preempting
from volsched.daemon.binding.reporting import Reporter
from volsched.daemon.queue.held import QueuedPod
from volsched.daemon.queue.queueing import SchedulingQueue
from volsched.daemon.telemetry.metrics import Metrics
from volsched.daemon.telemetry.tracing import record_cycle
from volsched.scheduling.framework.profiles import Profiles
from volsched.scheduling.framework.runner import Decision
from volsched.scheduling.plugins.scheduling_gates import REASON as GATED_REASON
from volsched.scheduling.preemption.nominated import NominatedPods
from volsched.scheduling.preemption.post_filter import Preemption, Preemptor

log = logging.getLogger("volsched.loop")
# How often one unreadable node is named in the log.
UNREADABLE_LOG_SECONDS = 60.0


def observe_binding(
    metrics: Metrics, pod: Pod, bound: bool, started: float, binding_started: float, now: float
) -> None:
    result = "scheduled" if bound else "error"
    profile = pod.scheduler_name
    if bound:
        metrics.startup.mark("first_binding")
    metrics.schedule_attempts.labels(result=result, profile=profile).inc()
    metrics.attempt_duration.labels(result=result, profile=profile).observe(now - started)
    metrics.binding_duration.labels(result=result).observe(now - binding_started)


async def finish_or_cancel(tasks: set[asyncio.Task[None]], grace_seconds: float) -> int:
    """Let the tasks finish within the grace; cancel the rest. How many were cancelled."""
    if not tasks:
        return 0
    _, not_done = await asyncio.wait(tasks, timeout=grace_seconds)
    for task in not_done:
        task.cancel()
    if not_done:
        await asyncio.gather(*not_done, return_exceptions=True)
    return len(not_done)


class UnreadableNodes:
    """Nodes a plugin could not read (damaged stored views) are passed over; each is
    named in the log once a minute, not once per pod."""

    def __init__(self, monotonic: Callable[[], float]) -> None:
        self.monotonic = monotonic
        self.logged: dict[str, float] = {}

    def report(self, unreadable: Mapping[str, str]) -> None:
        now = self.monotonic()
        for node, problem in unreadable.items():
            if now - self.logged.get(node, -UNREADABLE_LOG_SECONDS) >= UNREADABLE_LOG_SECONDS:
                self.logged[node] = now
                log.warning("node %s could not be evaluated (%s); passed over", node, problem)


def admitted(
    cluster: ClusterCache,
    queue: SchedulingQueue,
    profiles: Profiles,
    names: Collection[str],
    entry: QueuedPod,
) -> Pod | None:
    """The popped pod to decide, or None when it needs no cycle (gone, bound, assumed,
    or another scheduler's); a nomination it carries is taken up."""
    key = entry.pod.meta.key
    pod = cluster.pods.get(key)
    if pod is None or pod.node_name or pod.scheduler_name not in names:
        queue.done(key)
        return None
    if key in cluster.assumed_pods:
        # Placed and binding (or bound, not yet confirmed): never decide it twice.
        queue.done(key)
        return None
    nominated = profiles.nominated
    if (
        nominated is not None
        and pod.nominated_node_name
        and pod.nominated_node_name != nominated.node_of(key)
    ):
        # A nomination written before a restart (or by another leader) holds on.
        nominated.nominate(pod, pod.nominated_node_name)
    return pod


def expire_assumed(cluster: ClusterCache, queue: SchedulingQueue, now: float) -> None:
    """Forget the bound pods the informer never confirmed in time (kube-scheduler's
    assumed-pod TTL): what they held is free again, for the pods waiting on it."""
    for key, node_name in cluster.expire_assumed(now):
        pod = cluster.pods.get(key)
        if pod is not None:
            queue.assumed_pod_forgotten(pod, node_name)


class SchedulingLoop:
    def __init__(
        self,
        cluster: ClusterCache,
        scheduler: Profiles,
        queue: SchedulingQueue,
        binder: Binder,
        reporter: Reporter,
        metrics: Metrics,
        scheduler_names: Collection[str],
        monotonic: Callable[[], float] = time.monotonic,
        tracer: Tracer | None = None,
        preempting: Preempting | None = None,
    ) -> None:
        self.cluster = cluster
        self.preempting = preempting
        if preempting is not None and scheduler.nominated is None:
            # One nominator for every profile, as kube-scheduler keeps one queue.
            scheduler.share_nominated(NominatedPods())
        self.preemptors = {
            name: Preemptor(profile, profile.nominated)
            for name, profile in scheduler.by_name.items()
        }
        self.scheduler = scheduler
        self.queue = queue
        self.binder = binder
        self.reporter = reporter
        self.metrics = metrics
        self.scheduler_names = frozenset(scheduler_names)
        self.monotonic = monotonic
        self.tracer: Tracer = tracer or trace.NoOpTracer()
        self._bindings: set[asyncio.Task[None]] = set()
        self._side_tasks: set[asyncio.Task[None]] = set()
        self.heartbeat = monotonic()
        self.running = self.started = False
        self._unreadable = UnreadableNodes(monotonic)
        self.gate: asyncio.Event = asyncio.Event()
        self.gate.set()
        self.stopping = False
        queue.held.on_gated = self._gated
        queue.held.on_held = self.reporter.held

    def _gated(self, pod: Pod) -> None:
        """PreEnqueue kept a gated pod out: make sure its condition says so (the API
        server usually has already), once, and only as leader."""
        if pod.scheduled_reason == GATED_REASON or not self.gate.is_set():
            return
        self._spawn(self.reporter.gated(pod))

    def report_gated(self) -> None:
        """On becoming leader: the gated pods that arrived meanwhile get their condition
        (a standby writes nothing)."""
        for pod in self.queue.held.gated_pods():
            self._gated(pod)

    @property
    def in_flight(self) -> int:
        return len(self._bindings)

    async def run(self) -> None:
        """Forever: wait to be allowed (leader), take a pod, decide it. Nothing a pod or
        a stored object holds ends it: a cycle that raises fails that pod alone."""
        self.running = self.started = True
        try:
            await self._run()
        finally:
            self.running = False

    async def _run(self) -> None:
        while not self.stopping:
            self.heartbeat = self.monotonic()
            expire_assumed(self.cluster, self.queue, self.heartbeat)
            if not self.gate.is_set():
                # A standby waits for leadership, and stays visibly alive meanwhile.
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(self.gate.wait(), timeout=1.0)
                continue
            try:
                entry = await asyncio.wait_for(self.queue.pop(), timeout=1.0)
            except TimeoutError:
                continue
            if self.stopping or not self.gate.is_set():
                self.queue.requeue_error(entry.pod)
                continue
            try:
                await self.run_cycle(entry)
            except Exception as exc:
                self._cycle_crashed(entry.pod, exc)

    def _cycle_crashed(self, pod: Pod, exc: Exception) -> None:
        """As kube-scheduler: the pod's error (a log line, a Warning event, backoff)."""
        message = f"scheduling cycle failed: {type(exc).__name__}: {exc}"
        log.error("%s: %s", pod.meta.key, message)
        log.debug("scheduling cycle of %s", pod.meta.key, exc_info=exc)
        self.metrics.schedule_attempts.labels(result="error", profile=pod.scheduler_name).inc()
        self.queue.requeue_error(pod)
        self._spawn(self.reporter.failed(pod, message, "SchedulerError"))

    def schedule_one(self, entry: QueuedPod) -> None:
        """One scheduling cycle. It never waits for a binding: a placed pod's binding
        cycle runs on its own, as many at once as are waiting on storage (what limits
        them is the binder's budget of concurrent API writes, not pods in flight)."""
        pod = admitted(self.cluster, self.queue, self.scheduler, self.scheduler_names, entry)
        if pod is None:
            return
        started = self.monotonic()
        # The reasons of nodes passed over are forgotten once the pod is placed, so the
        # filters are not asked for them unless no node fits (``find_feasible``).
        decision = self.scheduler.schedule(pod, every_reason=False)
        self.decided(decision, started)
        if decision.node is None:
            self.failed(decision, started, self.post_filter(decision))
        else:
            self.placed(decision, started)

    async def run_cycle(self, entry: QueuedPod) -> None:
        """The cycle ``run`` drives; one that waits on HTTP extenders overrides it."""
        self.schedule_one(entry)

    def decided(self, decision: Decision, started: float) -> None:
        self.metrics.algorithm_duration.observe(self.monotonic() - started)
        if decision.unreadable:
            self._unreadable.report(decision.unreadable)
        nominated = self.scheduler.nominated
        if nominated is not None and decision.node is not None:
            nominated.forget(decision.pod.meta.key)

    def placed(self, decision: Decision, started: float) -> None:
        """Start the binding cycle of a reserved decision."""
        record_cycle(self.tracer, decision, "scheduled")
        # The binding may wait minutes for slow storage, with thousands of others: it
        # keeps the decision, not why each other node was passed over.
        decision.forget_diagnosis()
        started_flag: list[bool] = []
        key = decision.pod.meta.key
        self.queue.in_flight.binding(key)  # its scheduling cycle is over
        task = asyncio.create_task(self._bind(decision, started, started_flag), name=f"bind {key}")
        self._bindings.add(task)

        def finished(task: asyncio.Task[None]) -> None:
            self._bindings.discard(task)
            if task.cancelled() and not started_flag:
                # Cancelled before its first step: nothing ran, so clean up here.
                give_back(self.scheduler, self.cluster, self.queue, decision)
                self.queue.requeue_error(decision.pod)

        task.add_done_callback(finished)

    def post_filter(self, decision: Decision) -> Preemption | None:
        """The PostFilter of an unschedulable pod's profile, when preemption is on."""
        if self.preempting is None or decision.error is not None:
            return None
        preemptor = self.preemptors.get(decision.pod.scheduler_name)
        return (preemptor or next(iter(self.preemptors.values()))).post_filter(decision)

    def failed(self, decision: Decision, started: float, preemption: Preemption | None) -> None:
        pod = decision.pod
        elapsed = self.monotonic() - started
        if decision.error is not None:
            result, reason = "error", "SchedulerError"
            self.queue.requeue_error(pod)
        else:
            result, reason = "unschedulable", "Unschedulable"
            nominated = self.scheduler.nominated
            if preemption is not None and preemption.node is not None:
                if nominated is not None:
                    nominated.nominate(pod, preemption.node)
                    for other in preemption.lower_nominated:
                        nominated.forget(other.meta.key)
                self._spawn(self._preempt(pod, preemption))
            else:
                if preemption is not None and preemption.clear_nomination:
                    self._clear_nomination(pod)
                self.queue.requeue_unschedulable(pod, decision.failed_plugins)
        self.metrics.schedule_attempts.labels(result=result, profile=pod.scheduler_name).inc()
        self.metrics.attempt_duration.labels(result=result, profile=pod.scheduler_name).observe(
            elapsed
        )
        record_cycle(self.tracer, decision, result)
        message = decision.message or decision.error or "unschedulable"
        if preemption is not None and preemption.message:
            # kube-scheduler's FailedScheduling text: the filter message, then PostFilter's.
            message += " " + preemption.message
        self._spawn(self.reporter.failed(pod, message, reason))

    def _clear_nomination(self, pod: Pod) -> None:
        """No node can be helped any more: the pod holds no room anywhere (upstream
        clears ``status.nominatedNodeName``)."""
        nominated = self.scheduler.nominated
        held = nominated.node_of(pod.meta.key) if nominated is not None else ""
        if nominated is not None:
            nominated.forget(pod.meta.key)
        if (held or pod.nominated_node_name) and self.preempting is not None:
            self._spawn(self.preempting.clear_nominations((pod,)))

    async def _preempt(self, pod: Pod, preemption: Preemption) -> None:
        """Evict the victims, then send the pod round again (it finds them gone)."""
        assert self.preempting is not None
        try:
            await self.preempting.carry_out(pod, preemption)
        finally:
            self.queue.requeue_error(pod)

    async def _bind(self, decision: Decision, started: float, started_flag: list[bool]) -> None:
        started_flag.append(True)
        binding_started = self.monotonic()
        try:
            bound = await self.binder.bind(decision)
        except (asyncio.CancelledError, Exception) as exc:
            # Leadership lost or shutdown (the binder has undone its writes, or left them
            # to recovery), or a bug: give the decision back (idempotent) and requeue.
            cancelled = isinstance(exc, asyncio.CancelledError)
            if not cancelled:
                log.exception("binding %s crashed", decision.pod.meta.key)
            give_back(self.scheduler, self.cluster, self.queue, decision)
            self.queue.requeue_error(decision.pod)
            if cancelled:
                raise
            bound = False
        if bound and decision.node is not None:
            # The scheduler that chose the node says so, as kube-scheduler's finishBinding
            # does; a pod bound through the extender's /bind gets kube-scheduler's event.
            await self.reporter.scheduled(decision.pod, decision.node)
        observe_binding(
            self.metrics, decision.pod, bound, started, binding_started, self.monotonic()
        )

    def _spawn(self, work: Coroutine[Any, Any, None]) -> None:
        task = asyncio.create_task(work)
        self._side_tasks.add(task)
        task.add_done_callback(self._side_tasks.discard)

    async def abandon_bindings(self) -> None:
        """Cancel in-flight binding cycles (leadership lost): each unreserves and
        requeues its pod."""
        tasks = list(self._bindings)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def drain(self, grace_seconds: float) -> int:
        """Stop taking pods and let in-flight bindings finish; returns how many did not."""
        self.stopping = True
        return await finish_or_cancel(set(self._bindings) | set(self._side_tasks), grace_seconds)
