"""``volsched run --shadow``: volsched beside another scheduler, deciding its pods and
writing nothing.

The shadow is the daemon as ``volsched run`` assembles it — the same watches, cache,
profiles, database and HTTP server — with two differences:

- its root client is ``KubeClient.shadowed()``: every part that asks for a writer's
  client gets a read-only one (``kube.ownership``), so a bind, patch, event, eviction,
  Lease or Replica write is refused before any request is sent, whatever the code path;
- instead of the scheduling loop, replica placement and leader election, it runs
  ``ShadowLoop``. A shadow never takes a lease: it decides nothing that another replica
  could also decide, and any number of shadows may run at once.

The loop decides each pending pod of the shadowed schedulerNames over every node, with
nothing reserved or assumed (the cache stays exactly what the API server says), and
keeps that verdict for the report. When a watch update shows the pod bound, it decides
the pod once more against the cluster as it was just before the binding arrived, with the
other scheduler's own writes for the pod's claims taken out (``shadow.own_writes``) —
the cluster it decided on — and records how the two compare.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Collection

from aiohttp import web

from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.core import Pod
from volsched.cache.store import OpenResult, Store
from volsched.daemon.config.settings import Settings
from volsched.daemon.http.decisions_page import decisions_routes
from volsched.daemon.http.extender import extender_routes
from volsched.daemon.http.server import HealthChecks
from volsched.daemon.http.shadow_report import shadow_routes
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.queue.held import QueuedPod
from volsched.daemon.queue.queueing import SchedulingQueue
from volsched.daemon.runtime.app import Daemon, DaemonOptions
from volsched.daemon.runtime.health import health_checks
from volsched.daemon.telemetry.metrics import Metrics
from volsched.scheduling.framework.profiles import Profiles
from volsched.scheduling.framework.runner import Decision
from volsched.scheduling.plugins.volume_binding import NAME as VOLUME_BINDING
from volsched.scheduling.shadow.comparison import Outcome, compare
from volsched.scheduling.shadow.decision_order import DecisionOrder, without_pods
from volsched.scheduling.shadow.own_writes import unbound_claims, undo_binding_writes
from volsched.scheduling.shadow.prebind import PreBinding
from volsched.scheduling.shadow.savings import StorageAccounting
from volsched.scheduling.shadow.tally import PendingVerdict, ShadowTally

log = logging.getLogger("volsched.shadow")
# How often the verdicts on pending pods drop the pods that are gone or were bound
# without a comparison (seen bound before the caches synced, say).
PRUNE_SECONDS = 1.0
# How long a pod the other scheduler is binding volumes for counts on its node before
# the shadow takes its binding to have failed (kube-scheduler's bindTimeoutSeconds is
# 600; a binding seen later is still compared, as a pod bound without PreBind).
PREBIND_SECONDS = 600.0


class ShadowLoop:
    """Decides without binding: pending pods from the queue, bound pods as the watch
    shows them bound."""

    def __init__(
        self,
        cluster: ClusterCache,
        profiles: Profiles,
        queue: SchedulingQueue,
        tally: ShadowTally,
        metrics: Metrics,
        scheduler_names: Collection[str],
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.cluster = cluster
        self.profiles = profiles
        self.queue = queue
        self.tally = tally
        self.metrics = metrics
        self.scheduler_names = frozenset(scheduler_names)
        self.monotonic = monotonic
        self.heartbeat = monotonic()
        self.started = self.running = False
        self.stopping = False
        # Bindings are compared only once the caches are synced: before that, the nodes
        # and claims a decision reads may not all be there yet.
        self.comparing = False
        self._pruned_at = self.heartbeat
        # Per pending pod: when it was first seen, and which of its claims were unbound
        # then (the other scheduler's PreBind binds them before the pod).
        self._first_seen: dict[str, tuple[float, frozenset[str]]] = {}
        self.wall_clock: Callable[[], float] = time.time
        # Claim pods the other scheduler is binding volumes for: judged at its first
        # PreBind write and counted on their node until the binding arrives.
        self.prebinding = PreBinding()
        self._judged: set[str] = set()
        # Bindings arrive out of decision order: each is judged once the pods decided
        # before it are bound, without the pods decided after it.
        self.order = DecisionOrder(monotonic)
        self.storage = StorageAccounting(cluster)

    def decide(self, pod: Pod) -> Decision:
        """The pod's profile's decision over every node, nothing reserved: each node is
        filtered and, if it passes, scored on one scale (``percentageOfNodesToScore``
        would leave the other scheduler's node unjudged)."""
        every = {info.name for info in self.cluster.node_list()}
        return self.profiles.for_pod(pod).find_node(pod, only=every)

    async def run(self) -> None:
        self.running = self.started = True
        try:
            while not self.stopping:
                self.heartbeat = self.monotonic()
                if self.heartbeat - self._pruned_at >= PRUNE_SECONDS:
                    self.prune_pending()
                self.release_held()
                try:
                    entry = await asyncio.wait_for(self.queue.pop(), timeout=1.0)
                except TimeoutError:
                    continue
                try:
                    self.decide_pending(entry)
                except Exception as exc:
                    # One pod's failure is that pod's, never the loop's end.
                    log.error("shadow decision for %s failed: %s", entry.pod.meta.key, exc)
                    self.queue.requeue_error(entry.pod)
        finally:
            self.running = False

    def prune_pending(self) -> None:
        self._pruned_at = self.monotonic()
        for key in list(self.tally.pending):
            pod = self.cluster.pods.get(key)
            if pod is None or pod.node_name:
                self.tally.forget_pending(key)
        for key in list(self._first_seen):
            if (
                key not in self.tally.pending
                and key not in self.cluster.pending
                and key not in self.order.held
            ):
                del self._first_seen[key]
                self.order.forget(key)
        self.order.prune()
        for key in self.prebinding.watching():
            if key not in self._first_seen:
                self.prebinding.forget(key)
        # A binding that never came (PreBind failed): the pod is pending again.
        for key, _ in self.cluster.expire_assumed(self.monotonic()):
            self._judged.discard(key)

    def decide_pending(self, entry: QueuedPod) -> None:
        key = entry.pod.meta.key
        pod = self.cluster.pods.get(key)
        if (
            pod is None
            or pod.node_name
            or key in self.cluster.assumed_pods
            or pod.scheduler_name not in self.scheduler_names
        ):
            self.queue.done(key)
            self.tally.forget_pending(key)
            return
        self.note_pending(pod)
        decision = self.decide(pod)
        if decision.error is not None:
            result = "error"
            self.queue.requeue_error(pod)
        elif decision.node is None:
            result = "unschedulable"
            # Decided again when a cluster event could change the answer, as in the
            # scheduler proper.
            self.queue.requeue_unschedulable(pod, decision.failed_plugins)
        else:
            result = "placeable"
            self.queue.done(key, pod.meta.uid)
        self.tally.decided_pending(key, PendingVerdict(decision.node, decision.message or ""))
        if decision.node is None and VOLUME_BINDING in decision.failed_plugins:
            # Pending for want of a PV: would volsched's own placements have left one?
            served = self.storage.would_serve(pod)
            self.tally.storage.pending_for_volumes[pod.meta.key] = served
        self.metrics.shadow_pending_decisions.labels(result=result).inc()

    def note_pending(self, pod: Pod) -> None:
        """The first sight of a pending pod: when, its unbound claims and its place in
        the queue — taken as the watch shows it, before the other scheduler's PreBind
        can bind a claim however long the shadow takes to decide it."""
        key = pod.meta.key
        if key not in self._first_seen:
            claims = unbound_claims(self.cluster, pod.namespace, pod.claim_names())
            self._first_seen[key] = (self.wall_clock(), claims)
            self.prebinding.watch(key, claims)
            self.order.seen(self.cluster, pod)

    def object_changed(self, kind: str, key: str) -> None:
        """An object changed and the cache holds the change. A pod: held bindings may
        be judged now that it is bound. A PV or claim: if it is the other scheduler's
        PreBind write for a watched pod, judge the pod now, on the cluster it was decided
        on, and count it on its node as that scheduler does. Never raises: the ingest
        must go on."""
        if kind == "Pod":
            pod = self.cluster.pods.get(key)
            try:
                if (
                    pod is not None
                    and not pod.node_name
                    and pod.scheduler_name in self.scheduler_names
                    and key not in self.cluster.assumed_pods
                ):
                    self.note_pending(pod)
            except Exception as exc:
                log.error("shadow: noting pending pod %s failed: %s", key, exc)
        if kind in ("Pod", "PersistentVolumeClaim") and self.order.held:
            self.release_held()
        if not self.comparing or kind not in ("PersistentVolume", "PersistentVolumeClaim"):
            return
        try:
            written = self.prebinding.written(self.cluster, kind, key)
            if written is None:
                return
            pod_key, node = written.pod, written.node
            self.prebinding.forget(pod_key)
            pod = self.cluster.pods.get(pod_key)
            if pod is None or pod.node_name or pod_key in self.cluster.assumed_pods:
                return
            # Its PreBind write is its decision's moment: counted on its node from now
            # on, judged once the pods decided before it are in the cache.
            self.order.bound(pod_key)
            self._judged.add(pod_key)
            self.cluster.assume_pod(pod, node)
            self.cluster.finish_binding(pod_key, self.monotonic() + PREBIND_SECONDS)
            self.order.hold(pod, node, written.volumes)
            self.release_held()
        except Exception as exc:
            log.error("shadow PreBind check of %s %s failed: %s", kind, key, exc)

    def pod_bound(self, pending: Pod, bound: Pod) -> None:
        """The watch shows ``pending`` bound (``bound.node_name``); the cache does not
        hold the binding yet. Never raises: the ingest must go on."""
        if not self.comparing or pending.scheduler_name not in self.scheduler_names:
            return
        key = pending.meta.key
        if key in self._judged:
            # Judged when its volumes' binding began; the binding confirms it.
            self._judged.discard(key)
            return
        self.order.seen(self.cluster, pending)
        self.order.bound(key)
        self.prebinding.forget(key)
        # Judged once the cache holds the binding (``object_changed``) and the pods
        # decided before it are bound.
        self.order.hold(pending, bound.node_name)

    def release_held(self) -> None:
        """Judge the bindings whose turn in decision order has come."""
        for held in self.order.releasable(self._placeable, self._claims_known):
            try:
                self.judge(held.pod, held.node, held.volumes)
            except Exception as exc:
                log.error("shadow comparison for %s failed: %s", held.pod.meta.key, exc)

    def _claims_known(self, pod: Pod) -> bool:
        """The pod's claims are in the cache: a PV's PreBind write naming a claim can
        arrive before the claim's own first event."""
        return all(f"{pod.namespace}/{name}" in self.cluster.pvcs for name in pod.claim_names())

    def _placeable(self, key: str) -> bool:
        verdict = self.tally.pending.get(key)
        return verdict is None or verdict.node is not None

    def judge(
        self, pending: Pod, their_node: str, their_volumes: dict[str, str] | None = None
    ) -> None:
        """Compare volsched's decision for ``pending`` with ``their_node``, the other
        scheduler's own writes for the pod taken out, and record it."""
        profile = self.profiles.for_pod(pending).profile
        weights = {priority.policy_name: priority.weight for priority in profile.priorities}
        first_seen, claims = self._first_seen.pop(pending.meta.key, (0.0, frozenset()))
        theirs = self.storage.their_stranded(claims, their_volumes)
        undone = undo_binding_writes(self.cluster, claims, first_seen, their_volumes)
        key = pending.meta.key
        try:
            with without_pods(self.cluster, [key, *self.order.decided_after(key)]):
                decision = self.decide(pending)
        finally:
            undone.restore(self.cluster)
            self.order.forget(key)
        comparison = self.storage.account(
            compare(decision, their_node, self.cluster.nodes, weights),
            pending,
            decision,
            (claims, their_volumes, theirs),
        )
        self.tally.record(comparison)
        self.metrics.shadow_comparisons.labels(
            outcome=str(comparison.outcome),
            scheduler=comparison.scheduler_name,
            cause=str(comparison.cause),
        ).inc()
        if comparison.outcome is not Outcome.AGREED:
            log.debug(
                "%s: %s bound it to %s, volsched would choose %s (%s%s)",
                comparison.pod,
                comparison.scheduler_name,
                comparison.their_node,
                comparison.our_node or "no node",
                comparison.outcome,
                f": {'; '.join(comparison.reasons)}" if comparison.reasons else "",
            )


class ShadowDaemon(Daemon):
    """The daemon with a read-only root client and the shadow loop in place of the
    scheduling loop, replica placement and leader election."""

    def __init__(
        self,
        settings: Settings,
        client: KubeClient,
        store: Store,
        opened: OpenResult,
        options: DaemonOptions | None = None,
        metrics: Metrics | None = None,
    ) -> None:
        super().__init__(settings, client.shadowed(), store, opened, options, metrics)
        names = settings.shadow.scheduler_names
        # The pods queued are the shadowed schedulers', not volsched's own.
        self.ingest.scheduler_names = frozenset(names)
        self.tally = ShadowTally(names)
        self.shadow = ShadowLoop(
            self.cluster, self.profiles, self.queue, self.tally, self.metrics, names
        )
        self.ingest.on_pod_bound = self.shadow.pod_bound
        self.changes.listeners.append(self.shadow.object_changed)

    def health(self) -> HealthChecks:
        return health_checks(self.shadow, self.sync, self.store, self.metrics, self.ready)

    def http_routes(self) -> list[web.RouteDef]:
        # The extender's verbs stay (a shadow never leads, so /bind refuses to bind); the
        # decisions page shows the comparison too.
        decisions = decisions_routes(
            self.cluster, self.profiles, self.attempts, shadow_report=self.tally.report
        )
        return [*extender_routes(self.extender), *decisions, *shadow_routes(self.tally.report)]

    async def start_deciding(self) -> None:
        # Assumed state restored from the database is some scheduler's unconfirmed
        # decision: a shadow's cache holds only what the API server says.
        self.sync.drop_restored()
        self.shadow.comparing = True
        self._tasks.append(asyncio.create_task(self.shadow.run(), name="shadow loop"))

    async def stop(self) -> None:
        self.shadow.stopping = True
        await super().stop()
