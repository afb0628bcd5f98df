"""The binding cycle: make the API server agree with a decision, or undo it.

BindPodVolumes then the pod binding, after kube-scheduler, with a journal around it:

1. write the intent (pod, node, PV prebinds, claim annotations, replicas) to the journal;
2. PUT each chosen PV with its claimRef and ``pv.kubernetes.io/bound-by-controller``,
   using the resourceVersion it was chosen at, so a concurrent change is a 409;
3. PUT each claim to provision with ``volume.kubernetes.io/selected-node``;
4. create the Replica objects of replicated volumes provisioned for the pod;
5. wait until every claim is fully bound (PV controller) — failing early if the pod is
   deleted, a claimRef is reset, or the selected-node annotation is removed or changed;
6. POST the pod's ``binding`` subresource; clear the intent.

Any failure reverts the assume layer, undoes the API writes that would otherwise leave
a PV prebound to a pod that was not placed, records FailedScheduling and requeues the
pod with backoff. The pod's assumption forgotten frees what it held on the node, so the
queue hears of it as of an assigned pod deleted.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode, Tracer

from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import ApiError, Conflict, NotFound, StoreError
from volsched.cache.objects.replicated import API_VERSION as REPLICA_API_VERSION
from volsched.cache.objects.storage import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
)
from volsched.daemon.binding.bound import check_bound, watched_keys
from volsched.daemon.binding.intent import (
    ANN_BINDING_INTENT,
    BindingFailed,
    Intent,
    Journal,
    UndoResult,
    forget_assumed,
    intent_annotation,
    intent_for,
    journal_unwritable,
)
from volsched.daemon.binding.reporting import Reporter
from volsched.daemon.binding.undo import Undoer
from volsched.daemon.binding.undo_retry import UndoRetries
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.kube.resources import resource
from volsched.daemon.queue.queueing import SchedulingQueue
from volsched.daemon.telemetry.tracing import api_write, recording
from volsched.daemon.watch.ingest import Ingest
from volsched.daemon.watch.waiting import ChangeNotifier
from volsched.scheduling.framework.profiles import Profiles
from volsched.scheduling.framework.runner import Decision

log = logging.getLogger("volsched.binding")


def chosen_body(ingest: Ingest, kind: str, key: str, version: object) -> dict[str, Any]:
    """The body of the revision the decision was made on, to write back whole.

    It is the cache's accepted copy; if that has moved past the decision's revision
    the decision is stale and the write would be refused (409), so it is not sent:
    content and resourceVersion always come from one revision.
    """
    raw = ingest.raw_object(kind, key)
    if raw is None:
        raise BindingFailed(f'{kind.lower()} "{key.rpartition("/")[2]}" not found')
    meta = raw.setdefault("metadata", {})
    if str(meta.get("resourceVersion")) != str(version):
        raise Conflict(
            409,
            f'Operation cannot be fulfilled on {resource(kind).plural} "{meta.get("name")}": '
            "the object has been modified; please apply your changes to the latest "
            "version and try again",
        )
    return raw


async def replace_or_refresh(
    client: KubeClient, ingest: Ingest, kind: str, raw: dict[str, Any]
) -> dict[str, Any]:
    """PUT at the decision's resourceVersion; on a 409 take the server's current copy into
    the cache (the watch may lag, or the cache may be stale), so the retry decides on
    fresh data, then fail this cycle."""
    try:
        return await client.replace(kind, raw)
    except Conflict:
        meta = raw.get("metadata") or {}
        current = await client.get(kind, meta.get("name", ""), meta.get("namespace"))
        current.setdefault("kind", kind)
        ingest.upsert(kind, current)
        raise


def give_back(
    scheduler: Profiles, cluster: ClusterCache, queue: SchedulingQueue, decision: Decision
) -> None:
    """Unreserve a decision (idempotent). If that forgot the pod's assumption, the node
    has room again: the pods waiting for it are told at once, not at the flush."""
    key = decision.pod.meta.key
    assumed_on = cluster.assumed_pods.get(key)
    scheduler.unreserve(decision)
    if assumed_on and key not in cluster.assumed_pods:
        queue.assumed_pod_forgotten(decision.pod, assumed_on)


@dataclass(slots=True)
class BindingSettings:
    bind_timeout_seconds: float = 600.0
    # Without a change notifier, how often the wait re-reads the cache; with one, the
    # longest a wait sleeps between checks even if no change is announced.
    poll_seconds: float = 0.05
    recheck_seconds: float = 1.0
    # API writes of binding cycles in flight at once (the daemon's ``parallelism``): the
    # back-pressure on the API server. Binding cycles waiting for storage hold none.
    concurrent_writes: int = 16
    # kube-scheduler forgets an assumed pod this long after its binding if the informer
    # never shows it bound.
    assumed_pod_ttl_seconds: float = 30.0


class Binder:
    def __init__(
        self,
        client: KubeClient,
        cluster: ClusterCache,
        ingest: Ingest,
        scheduler: Profiles,
        queue: SchedulingQueue,
        reporter: Reporter,
        journal: Journal,
        settings: BindingSettings,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        clock: Callable[[], float] = time.monotonic,
        tracer: Tracer | None = None,
        notifier: ChangeNotifier | None = None,
    ) -> None:
        self.client = client
        self.notifier = notifier
        self._writes = asyncio.Semaphore(settings.concurrent_writes)
        self.cluster = cluster
        self.ingest = ingest
        self.scheduler = scheduler
        self.queue = queue
        self.reporter = reporter
        self.journal = journal
        self.settings = settings
        self.sleep = sleep
        self.clock = clock
        self.tracer: Tracer = tracer or trace.NoOpTracer()
        self.undoer = Undoer(client, cluster, ingest)
        self.undo_retries = UndoRetries(self.undo, self.undoer.pod_is_bound, journal, sleep)
        self.leave_to_recovery = False
        # An extender's bind verb (pod key, uid, node): True when it bound the pod.
        self.extender_bind: Callable[[str, str, str], Awaitable[bool]] | None = None

    async def bind(self, decision: Decision) -> bool:
        """Run the whole binding cycle; True when the pod ended up bound (the caller, the
        scheduler that chose the node, records the ``Scheduled`` event)."""
        if not recording(self.tracer):
            return await self._bind(decision)
        with self.tracer.start_as_current_span("binding_cycle") as span:
            span.set_attribute("volsched.pod", decision.pod.meta.key)
            span.set_attribute("volsched.node", decision.node or "")
            bound = await self._bind(decision)
            span.set_attribute("volsched.result", "bound" if bound else "failed")
            if not bound:
                span.set_status(Status(StatusCode.ERROR))
            return bound

    async def _bind(self, decision: Decision) -> bool:
        intent = intent_for(decision)
        pod = decision.pod
        # Only volume writes can outlive a crash half done; a pod whose volumes need no
        # write is bound by one atomic POST, and needs no (fsync'd) journal entry.
        try:
            entry = (
                await self.journal.journal_open(intent.pod, intent.node, intent.as_json())
                if intent.writes_volumes
                else None
            )
        except StoreError as exc:
            # No intent on disk (a full disk, usually), so no API write either: give the
            # decision back and let the pod try again after its backoff. The store logs
            # the failure once; this is not a crash.
            log.info("binding %s to %s not started: %s", intent.pod, intent.node, exc)
            give_back(self.scheduler, self.cluster, self.queue, decision)
            await self.reporter.failed(pod, journal_unwritable(exc), "SchedulerError")
            self.queue.requeue_error(pod)
            return False
        namespace, name = intent.pod.split("/", 1)
        # Layer 2 on disk: what this cycle assumed, until the journal entry closes.
        self.journal.put_assumed(
            "Pod",
            intent.pod,
            {
                "metadata": {"name": name, "namespace": namespace, "uid": intent.pod_uid},
                "spec": {"nodeName": intent.node},
            },
        )
        done: dict[str, list[str]] = {"prebinds": [], "provisions": [], "replicas": []}
        try:
            await self._prebind(intent, done)
            await self._annotate(intent, done)
            await self._create_replicas(intent, done)
            if intent.prebinds or intent.provisions:
                await self._wait_bound(intent)
            await self._bind_pod(intent)
        except asyncio.CancelledError:
            # Leadership lost, shutdown, or a caller's deadline: give the decision back
            # and undo the writes, without being cut short again.
            give_back(self.scheduler, self.cluster, self.queue, decision)
            await asyncio.shield(self._give_up(entry, intent, done))
            raise
        except Exception as exc:  # BindingFailed, ApiError, StoreError, or a bug
            message = str(exc) or type(exc).__name__
            if not isinstance(exc, BindingFailed | ApiError):
                log.exception("binding %s to %s crashed", intent.pod, intent.node)
            else:
                log.info("binding %s to %s failed: %s", intent.pod, intent.node, message)
            give_back(self.scheduler, self.cluster, self.queue, decision)
            await self._give_up(entry, intent, done)
            await self.reporter.failed(pod, message, "SchedulerError")
            self.queue.requeue_error(pod)
            return False
        await self._close(entry, intent)
        self.scheduler.post_bind(decision)
        self.cluster.finish_binding(
            pod.meta.key, self.clock() + self.settings.assumed_pod_ttl_seconds
        )
        self.queue.done(pod.meta.key, pod.meta.uid)
        return True

    async def _give_up(
        self, entry: int | None, intent: Intent, done: Mapping[str, list[str]]
    ) -> None:
        """Undo the cycle's writes; close its journal entry only once that fully worked
        (what could not be undone now is tried again in the background). At shutdown
        nothing is undone: the open intent is recovery's, at the next start or on the
        next leader."""
        if self.leave_to_recovery:
            return
        undone = await self.undo(intent, done)
        if undone.failed:
            self.undo_retries.start(entry, intent, done, undone.failed)
            return
        try:
            await self._close(entry, intent)
        except StoreError as exc:
            log.warning("binding %s: journal not closed: %s", intent.pod, exc)

    async def _close(self, entry: int | None, intent: Intent) -> None:
        if entry is not None:
            await self.journal.journal_close(entry)
        forget_assumed(self.journal, intent)

    # -- steps -----------------------------------------------------------------------

    async def _prebind(self, intent: Intent, done: dict[str, list[str]]) -> None:
        for prebind in intent.prebinds:
            if not prebind.get("write", True):
                continue
            raw = chosen_body(
                self.ingest, "PersistentVolume", prebind["pv"], prebind["pvResourceVersion"]
            )
            meta = raw["metadata"]
            annotations = meta.setdefault("annotations", {})
            if not prebind.get("preexisting"):
                annotations[ANN_BOUND_BY_CONTROLLER] = "yes"
                # Written with the prebind itself, so any replica can finish or release
                # it after a failover, even with an empty journal.
                annotations[ANN_BINDING_INTENT] = intent_annotation(intent)
            namespace, name = prebind["claim"].split("/", 1)
            claim = self.cluster.pvcs.get_api(prebind["claim"])
            raw.setdefault("spec", {})["claimRef"] = {
                "kind": "PersistentVolumeClaim",
                "apiVersion": "v1",
                "namespace": namespace,
                "name": name,
                "uid": prebind["claimUID"],
                "resourceVersion": str(claim.meta.resource_version) if claim else "",
            }
            self.journal.put_assumed("PersistentVolume", prebind["pv"], raw)
            # Counted as done before the write: a lost reply may hide an applied write.
            done["prebinds"].append(prebind["pv"])
            async with self._writes:
                with api_write(self.tracer, "PUT", "PersistentVolume", prebind["pv"]):
                    updated = await replace_or_refresh(
                        self.client, self.ingest, "PersistentVolume", raw
                    )
            updated.setdefault("kind", "PersistentVolume")
            self.ingest.upsert("PersistentVolume", updated)

    async def _annotate(self, intent: Intent, done: dict[str, list[str]]) -> None:
        for provision in intent.provisions:
            raw = chosen_body(
                self.ingest,
                "PersistentVolumeClaim",
                provision["claim"],
                provision["claimResourceVersion"],
            )
            meta = raw["metadata"]
            annotations = meta.setdefault("annotations", {})
            annotations[ANN_SELECTED_NODE] = intent.node
            annotations[ANN_BINDING_INTENT] = intent_annotation(intent)
            self.journal.put_assumed("PersistentVolumeClaim", provision["claim"], raw)
            done["provisions"].append(provision["claim"])
            async with self._writes:
                with api_write(self.tracer, "PUT", "PersistentVolumeClaim", provision["claim"]):
                    updated = await replace_or_refresh(
                        self.client, self.ingest, "PersistentVolumeClaim", raw
                    )
            updated.setdefault("kind", "PersistentVolumeClaim")
            self.ingest.upsert("PersistentVolumeClaim", updated)

    async def _create_replicas(self, intent: Intent, done: dict[str, list[str]]) -> None:
        for replica in intent.replicas:
            body = {
                "apiVersion": REPLICA_API_VERSION,
                "kind": "Replica",
                "metadata": {"name": replica["name"]},
                "spec": {
                    "volumeName": replica["volume"],
                    "nodeID": replica["node"],
                    "diskID": replica["disk"],
                    "primary": replica["primary"],
                },
            }
            done["replicas"].append(replica["name"])
            async with self._writes:
                with api_write(self.tracer, "POST", "Replica", replica["name"]):
                    created = await self.client.create("Replica", body)
            created.setdefault("kind", "Replica")
            self.ingest.upsert("Replica", created)

    async def _wait_bound(self, intent: Intent) -> None:
        """Upstream's wait for the PV controller, woken by the watches: each change to
        one of the pod's claims or PVs (or the pod) re-checks; nothing polls."""
        deadline = self.clock() + self.settings.bind_timeout_seconds
        while not check_bound(self.cluster, intent):
            remaining = deadline - self.clock()
            if remaining <= 0:
                raise BindingFailed(
                    f"binding volumes: timed out waiting for the condition ({intent.pod})"
                )
            if self.notifier is None:
                await self.sleep(min(self.settings.poll_seconds, remaining))
            else:
                wait = min(self.settings.recheck_seconds, remaining)
                await self.notifier.wait(watched_keys(self.cluster, intent), wait)

    async def _bind_pod(self, intent: Intent) -> None:
        if self.extender_bind and await self.extender_bind(intent.pod, intent.pod_uid, intent.node):
            return
        namespace, name = intent.pod.split("/", 1)
        try:
            async with self._writes:
                with api_write(self.tracer, "POST", "Binding", intent.pod):
                    await self.client.bind_pod(namespace, name, intent.pod_uid, intent.node)
        except Conflict:
            # Already assigned: fine if it is where we put it (a retry after a lost reply).
            current = await self.client.get("Pod", name, namespace)
            if (current.get("spec") or {}).get("nodeName") != intent.node:
                raise
        except NotFound:
            raise BindingFailed(f"pod {intent.pod} no longer exists") from None

    async def undo(self, intent: Intent, done: Mapping[str, list[str]] | None = None) -> UndoResult:
        """Take back the API writes of ``intent`` (those in ``done``, when given)."""
        return await self.undoer.undo(intent, done)
