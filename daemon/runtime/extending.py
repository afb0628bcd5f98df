"""The scheduling loop when a KubeSchedulerConfiguration lists HTTP extenders.

The pure cycle is cut where kube-scheduler calls its extenders, and the loop awaits
them in between: ``find_feasible`` (PreFilter, Filter) → the extenders' filter →
``select`` (Score plus the extenders' weighted scores, then the host) → ``commit``
(Reserve, assume). An unschedulable pod's PostFilter is cut the same way: candidates →
the extenders' preempt verb → the chosen candidate. The binder calls the binding
extender instead of posting the binding itself.

Awaiting an extender lets watch events in, unlike the plain cycle: when the answer
comes back the pod may be gone or bound, the node deleted, or leadership lost, and then
the pod is simply tried again (nothing was reserved yet). A node that changed under
the cycle is judged as kube-scheduler judges a stale snapshot: the binding or the kubelet
finds out.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Sequence
from typing import Any

from opentelemetry.trace import Tracer

from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.core import Pod
from volsched.daemon.binding.binder import Binder
from volsched.daemon.binding.intent import BindingFailed
from volsched.daemon.binding.preempting import Preempting
from volsched.daemon.binding.reporting import Reporter
from volsched.daemon.extenders.calling import ExtenderCalls
from volsched.daemon.extenders.client import ExtenderError, Extenders
from volsched.daemon.queue.held import QueuedPod
from volsched.daemon.queue.queueing import SchedulingQueue
from volsched.daemon.runtime.loop import SchedulingLoop, admitted
from volsched.daemon.telemetry.metrics import Metrics
from volsched.daemon.watch.ingest import Ingest
from volsched.scheduling.extender_config import ExtenderSpec
from volsched.scheduling.framework.profiles import Profiles
from volsched.scheduling.framework.runner import Decision, Scheduler
from volsched.scheduling.preemption.post_filter import Preemption

log = logging.getLogger("volsched.loop")


def extender_binding(calls: ExtenderCalls) -> Callable[[str, str, str], Awaitable[bool]]:
    """The binder's hook: the binding extender's error fails the binding cycle as any
    failed write does (the pod's SchedulerError, its writes undone, a retry)."""

    async def bind(key: str, uid: str, node: str) -> bool:
        try:
            return await calls.bind(key, uid, node)
        except ExtenderError as exc:
            raise BindingFailed(str(exc)) from None

    return bind


class ExtendedSchedulingLoop(SchedulingLoop):
    """``SchedulingLoop`` with its cycle cut around the extenders' answers."""

    def __init__(self, calls: ExtenderCalls, *parts: Any, **options: Any) -> None:
        """``parts`` and ``options`` are ``SchedulingLoop``'s own."""
        super().__init__(*parts, **options)
        self.calls = calls

    async def run_cycle(self, entry: QueuedPod) -> None:
        pod = admitted(self.cluster, self.queue, self.scheduler, self.scheduler_names, entry)
        if pod is None:
            return
        started = self.monotonic()
        scheduler = self.scheduler.for_pod(pod)
        decision = await self.decide(scheduler, pod)
        # An extender's answer is progress: health checks see a loop that moves.
        self.heartbeat = self.monotonic()
        if self._overtaken(decision):
            return
        if decision.node is not None:
            scheduler.commit(decision)
        self.decided(decision, started)
        if decision.node is None:
            preemption = await self.post_filter_extended(decision)
            if self.stopping or not self.gate.is_set():
                # The preempt verb answered a replica that no longer leads: no writes.
                self.queue.requeue_error(pod)
                return
            self.failed(decision, started, preemption)
        else:
            self.placed(decision, started)

    async def decide(self, scheduler: Scheduler, pod: Pod) -> Decision:
        """A decision not yet reserved: the nominated node first (upstream's
        evaluateNominatedNode: if it passes the filters and the extenders it is taken
        without scoring), else every node."""
        held = scheduler.nominated_node_of(pod)
        if held and held in self.cluster.nodes:
            decision = scheduler.find_feasible(pod, only={held})
            if decision.feasible:
                await self.calls.filter(decision)
                if decision.error is not None:
                    return decision
            if decision.feasible:
                scheduler.select(decision)
                return decision
        decision = scheduler.find_feasible(pod)
        if decision.feasible:
            await self.calls.filter(decision)
        if decision.feasible and decision.error is None:
            # Upstream scores only when there is a choice to make.
            extra = await self.calls.prioritize(decision) if len(decision.feasible) > 1 else {}
            scheduler.select(decision, extra)
        return decision

    def _overtaken(self, decision: Decision) -> bool:
        """While the extenders answered, the pod was bound or deleted, its node went,
        or this replica stopped leading: nothing was reserved, so drop or retry it."""
        pod = decision.pod
        key = pod.meta.key
        current = self.cluster.pods.get(key)
        if current is None or current.node_name or key in self.cluster.assumed_pods:
            self.queue.done(key)
            return True
        gone = decision.node is not None and decision.node not in self.cluster.nodes
        if gone or self.stopping or not self.gate.is_set():
            self.queue.requeue_error(pod)
            return True
        return False

    async def post_filter_extended(self, decision: Decision) -> Preemption | None:
        """The PostFilter with the extenders' preempt verb between finding the
        candidates and choosing one (upstream's callExtenders). An extender's error is
        the preemption's message; the pod stays unschedulable and keeps any nomination."""
        if self.preempting is None or decision.error is not None:
            return None
        preemptor = self.preemptors.get(decision.pod.scheduler_name)
        preemptor = preemptor or next(iter(self.preemptors.values()))
        found = preemptor.find_candidates(decision)
        if found is None or found.message is not None:
            return found
        try:
            found.candidates = await self.calls.preempt(decision.pod, found.candidates)
        except ExtenderError as exc:
            found.refuse(str(exc))
            return found
        finally:
            self.heartbeat = self.monotonic()
        return preemptor.select_candidate(decision, found)

    async def close(self) -> None:
        await self.calls.extenders.close()


def scheduling_loop(
    extenders: Sequence[ExtenderSpec],
    ingest: Ingest,
    cluster: ClusterCache,
    scheduler: Profiles,
    queue: SchedulingQueue,
    binder: Binder,
    reporter: Reporter,
    metrics: Metrics,
    scheduler_names: Collection[str],
    tracer: Tracer | None = None,
    preempting: Preempting | None = None,
    source: str = "(config)",
) -> SchedulingLoop:
    """The loop the daemon runs: the plain one, or the extended one when extenders are
    configured (then the binder asks the binding extender too)."""
    parts = (cluster, scheduler, queue, binder, reporter, metrics, scheduler_names)
    if not extenders:
        return SchedulingLoop(*parts, tracer=tracer, preempting=preempting)
    calls = ExtenderCalls(Extenders(extenders, metrics, source), cluster, ingest)
    binder.extender_bind = extender_binding(calls)
    log.info("calling extenders: %s", ", ".join(spec.name for spec in extenders))
    return ExtendedSchedulingLoop(calls, *parts, tracer=tracer, preempting=preempting)


async def close_loop(loop: SchedulingLoop) -> None:
    """Close what the loop holds open (the extenders' HTTP connections)."""
    if isinstance(loop, ExtendedSchedulingLoop):
        await loop.close()
