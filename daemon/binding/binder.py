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
pod with backoff.
"""

from __future__ import annotations

import asyncio
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from opentelemetry import trace
from opentelemetry.trace import Status, StatusCode, Tracer

from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import ApiError, Conflict, NotFound, StoreError, StoreFull
from volsched.cache.objects.storage import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
)
from volsched.daemon.binding.reporting import Reporter
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.queue.queueing import SchedulingQueue
from volsched.daemon.telemetry.tracing import api_write
from volsched.daemon.watch.ingest import Ingest
from volsched.daemon.watch.waiting import ChangeNotifier
from volsched.scheduling.framework.profiles import Profiles
from volsched.scheduling.framework.runner import Decision
from volsched.scheduling.plugins.volume_binding import assumed_volumes
from volsched.scheduling.storage_placement import ReplicaPlan

log = logging.getLogger("volsched.binding")

REPLICA_API_VERSION = "volsched.io/v1alpha1"


class Journal(Protocol):
    async def journal_open(self, pod: str, node: str, intent: Mapping[str, Any]) -> int: ...
    async def journal_update(
        self, entry_id: int, *, state: str | None = None, intent: Mapping[str, Any] | None = None
    ) -> None: ...
    async def journal_close(self, entry_id: int) -> None: ...
    async def journal_pending(self) -> list[Any]: ...
    def put_assumed(self, kind: str, key: str, raw: Mapping[str, Any]) -> None: ...
    def delete_assumed(self, kind: str, key: str) -> None: ...


@dataclass(slots=True)
class UndoResult:
    """PVs whose claimRef was cleared, PVs kept because their claim got bound, and the
    objects that could not be undone now (an API error: recovery will try again)."""

    released: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


class BindingFailed(Exception):
    """The binding cycle cannot complete; the message is what the user sees."""


def journal_unwritable(error: StoreError) -> str:
    """What the user sees when a binding's intent cannot be recorded: nothing was
    written, and the pod is retried."""
    state = "is full" if isinstance(error, StoreFull) else "cannot be written"
    return (
        f"binding volumes: the scheduler's database {state}; no volume is bound until the "
        f"binding can be recorded ({error})"
    )


@dataclass(slots=True)
class Intent:
    """What a binding cycle is about to write; stored in the journal before any write."""

    pod: str
    pod_uid: str
    node: str
    prebinds: list[dict[str, Any]] = field(default_factory=list)
    provisions: list[dict[str, Any]] = field(default_factory=list)
    replicas: list[dict[str, Any]] = field(default_factory=list)

    @property
    def writes_volumes(self) -> bool:
        return bool(
            any(p.get("write", True) for p in self.prebinds) or self.provisions or self.replicas
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "podUID": self.pod_uid,
            "node": self.node,
            "prebinds": self.prebinds,
            "provisions": self.provisions,
            "replicas": self.replicas,
        }


def forget_assumed(journal: Journal, intent: Intent) -> None:
    """Drop the intent's layer-2 records from the store (the cycle is over)."""
    journal.delete_assumed("Pod", intent.pod)
    for prebind in intent.prebinds:
        journal.delete_assumed("PersistentVolume", prebind["pv"])
    for provision in intent.provisions:
        journal.delete_assumed("PersistentVolumeClaim", provision["claim"])


# On a PV we prebind and a claim we ask to provision: which pod, on which node, the
# write was for (JSON: pod, podUID, node).
ANN_BINDING_INTENT = "volsched.io/binding-intent"


def intent_annotation(intent: Intent) -> str:
    return json.dumps(
        {"pod": intent.pod, "podUID": intent.pod_uid, "node": intent.node},
        separators=(",", ":"),
    )


def intent_for(decision: Decision) -> Intent:
    assert decision.node is not None
    pod = decision.pod
    intent = Intent(pod.meta.key, pod.meta.uid, decision.node)
    assumed = assumed_volumes(decision.state)
    if assumed is None:
        return intent
    for binding in assumed.bindings:
        claim = binding.claim
        intent.prebinds.append(
            {
                "pv": binding.pv.meta.name,
                "pvResourceVersion": binding.pv.meta.resource_version,
                "claim": claim.key,
                "claimUID": claim.meta.uid,
                # Nothing to write when the PV already names the claim with its uid.
                "write": binding.dirty,
                # Reserved for this claim by its author: never released on failure.
                "preexisting": binding.preexisting,
            }
        )
    for claim in assumed.provisions:
        intent.provisions.append(
            {"claim": claim.key, "claimResourceVersion": claim.meta.resource_version}
        )
        plan = assumed.plans.get(claim.key)
        if isinstance(plan, ReplicaPlan):
            volume = plan.placement.volume
            for index, placement in enumerate(plan.placement.placed):
                intent.replicas.append(
                    {
                        "name": f"{volume}-r-{secrets.token_hex(4)}",
                        "volume": volume,
                        "node": placement.node,
                        "disk": placement.disk,
                        "primary": placement.node == decision.node
                        or (
                            index == 0
                            and all(p.node != decision.node for p in plan.placement.placed)
                        ),
                    }
                )
    return intent


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

    async def bind(self, decision: Decision) -> bool:
        """Run the whole binding cycle; True when the pod ended up bound."""
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
            self.scheduler.unreserve(decision)
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
            self.scheduler.unreserve(decision)
            await asyncio.shield(self._give_up(entry, intent, done))
            raise
        except Exception as exc:  # BindingFailed, ApiError, StoreError, or a bug
            message = str(exc) or type(exc).__name__
            if not isinstance(exc, BindingFailed | ApiError):
                log.exception("binding %s to %s crashed", intent.pod, intent.node)
            else:
                log.info("binding %s to %s failed: %s", intent.pod, intent.node, message)
            self.scheduler.unreserve(decision)
            await self._give_up(entry, intent, done)
            await self.reporter.failed(pod, message, "SchedulerError")
            self.queue.requeue_error(pod)
            return False
        await self._close(entry, intent)
        self.scheduler.post_bind(decision)
        self.cluster.finish_binding(
            pod.meta.key, self.clock() + self.settings.assumed_pod_ttl_seconds
        )
        self.queue.done(pod.meta.key)
        await self.reporter.scheduled(pod, intent.node)
        return True

    async def _give_up(
        self, entry: int | None, intent: Intent, done: Mapping[str, list[str]]
    ) -> None:
        """Undo the cycle's writes; close its journal entry only if that fully worked,
        so recovery retries whatever could not be undone now."""
        undone = await self.undo(intent, done)
        if undone.failed:
            log.warning(
                "binding %s: could not undo %s now; left for recovery",
                intent.pod,
                ", ".join(undone.failed),
            )
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
            raw = self.ingest.raw_object("PersistentVolume", prebind["pv"])
            if raw is None:
                raise BindingFailed(f'persistentvolume "{prebind["pv"]}" not found')
            meta = raw.setdefault("metadata", {})
            # Write at the version the decision was made on: anything newer is a 409.
            meta["resourceVersion"] = str(prebind["pvResourceVersion"])
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
                    updated = await self._replace_or_refresh("PersistentVolume", raw)
            updated.setdefault("kind", "PersistentVolume")
            self.ingest.upsert("PersistentVolume", updated)

    async def _annotate(self, intent: Intent, done: dict[str, list[str]]) -> None:
        for provision in intent.provisions:
            raw = self.ingest.raw_object("PersistentVolumeClaim", provision["claim"])
            if raw is None:
                raise BindingFailed(f'persistentvolumeclaim "{provision["claim"]}" not found')
            meta = raw.setdefault("metadata", {})
            meta["resourceVersion"] = str(provision["claimResourceVersion"])
            annotations = meta.setdefault("annotations", {})
            annotations[ANN_SELECTED_NODE] = intent.node
            annotations[ANN_BINDING_INTENT] = intent_annotation(intent)
            self.journal.put_assumed("PersistentVolumeClaim", provision["claim"], raw)
            done["provisions"].append(provision["claim"])
            async with self._writes:
                with api_write(self.tracer, "PUT", "PersistentVolumeClaim", provision["claim"]):
                    updated = await self._replace_or_refresh("PersistentVolumeClaim", raw)
            updated.setdefault("kind", "PersistentVolumeClaim")
            self.ingest.upsert("PersistentVolumeClaim", updated)

    async def _replace_or_refresh(self, kind: str, raw: dict[str, Any]) -> dict[str, Any]:
        """PUT at the decision's resourceVersion; on a 409 take the server's current copy
        into the cache (the watch may lag, or the cache may be stale), so the retry
        decides on fresh data, then fail this cycle."""
        try:
            return await self.client.replace(kind, raw)
        except Conflict:
            meta = raw.get("metadata") or {}
            current = await self.client.get(kind, meta.get("name", ""), meta.get("namespace"))
            current.setdefault("kind", kind)
            self.ingest.upsert(kind, current)
            raise

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

    def _check_bound(self, intent: Intent) -> bool:
        """Upstream's checkBindings: True when every claim is fully bound on a PV the node
        can reach; raises when binding can no longer work."""
        cluster = self.cluster
        pod = cluster.pods.get(intent.pod)
        if pod is None or pod.meta.uid != intent.pod_uid or pod.meta.deletion_timestamp:
            raise BindingFailed(f"pod {intent.pod} was deleted while its volumes were binding")
        node = cluster.nodes.get(intent.node)
        if node is None:
            raise BindingFailed(f"node {intent.node} was deleted while volumes were binding")
        complete = True
        for prebind in intent.prebinds:
            pv = cluster.pvs.get_api(prebind["pv"])
            ref = pv.claim_ref if pv is not None else None
            if pv is None or ref is None or f"{ref.namespace}/{ref.name}" != prebind["claim"]:
                raise BindingFailed(f'ClaimRef got reset for pv "{prebind["pv"]}"')
            if not ref.uid:
                complete = False  # the PV controller has not taken it up yet
                continue
            claim = cluster.pvcs.get_api(prebind["claim"])
            if claim is None or not claim.fully_bound:
                complete = False
        for provision in intent.provisions:
            claim = cluster.pvcs.get_api(provision["claim"])
            if claim is None:
                raise BindingFailed(f'persistentvolumeclaim "{provision["claim"]}" was deleted')
            if claim.meta.annotations.get(ANN_SELECTED_NODE) != intent.node:
                # A provisioner that fails removes the annotation to ask for a new node.
                raise BindingFailed(f'provisioning failed for PVC "{claim.name}"')
            if claim.volume_name:
                pv = cluster.pvs.get_api(claim.volume_name)
                if pv is None:
                    complete = False  # not seen yet; a deleted PV unbinds the claim
                    continue
                affinity = pv.node_affinity
                if affinity is not None and not affinity.matches(
                    node.node.meta.labels, intent.node
                ):
                    raise BindingFailed(
                        f'pv "{pv.meta.name}" node affinity doesn\'t match node "{intent.node}"'
                    )
            if not claim.fully_bound:
                complete = False
        return complete

    async def _wait_bound(self, intent: Intent) -> None:
        """Upstream's wait for the PV controller, woken by the watches: each change to
        one of the pod's claims or PVs (or the pod) re-checks; nothing polls."""
        deadline = self.clock() + self.settings.bind_timeout_seconds
        while not self._check_bound(intent):
            remaining = deadline - self.clock()
            if remaining <= 0:
                raise BindingFailed(
                    f"binding volumes: timed out waiting for the condition ({intent.pod})"
                )
            if self.notifier is None:
                await self.sleep(min(self.settings.poll_seconds, remaining))
            else:
                wait = min(self.settings.recheck_seconds, remaining)
                await self.notifier.wait(self._watched_keys(intent), wait)

    def _watched_keys(self, intent: Intent) -> list[tuple[str, str]]:
        """The objects whose change can complete (or break) this binding: the pod, its
        claims, the PVs prebound to them and those the provisioner gave them so far."""
        keys = [("Pod", intent.pod), ("Node", intent.node)]
        for prebind in intent.prebinds:
            keys += [
                ("PersistentVolumeClaim", prebind["claim"]),
                ("PersistentVolume", prebind["pv"]),
            ]
        for provision in intent.provisions:
            keys.append(("PersistentVolumeClaim", provision["claim"]))
            claim = self.cluster.pvcs.get_api(provision["claim"])
            if claim is not None and claim.volume_name:
                keys.append(("PersistentVolume", claim.volume_name))
        return keys

    async def _bind_pod(self, intent: Intent) -> None:
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

    # -- undo ------------------------------------------------------------------------

    async def undo(self, intent: Intent, done: Mapping[str, list[str]] | None = None) -> UndoResult:
        """Take back API writes that would outlive the failed binding.

        A PV stays with its claim only if the PV controller already bound them (rolling
        forward is what the user wants); otherwise its claimRef is cleared. A claim we
        annotated loses the selected-node annotation (if it was provisioned meanwhile, it
        keeps its volume). Replicas created for a volume that was never provisioned are
        deleted.
        """
        prebinds = (
            intent.prebinds
            if done is None
            else [p for p in intent.prebinds if p["pv"] in done["prebinds"]]
        )
        result = UndoResult()
        for prebind in prebinds:
            if prebind.get("preexisting") or not prebind.get("write", True):
                result.kept.append(prebind["pv"])
                continue
            try:
                released = await self._release_pv(prebind["pv"], prebind["claim"])
            except ApiError as exc:
                log.warning("could not release PV %s: %s", prebind["pv"], exc)
                result.failed.append(f"PersistentVolume {prebind['pv']}")
                continue
            (result.released if released else result.kept).append(prebind["pv"])
        provisions = (
            intent.provisions
            if done is None
            else [p for p in intent.provisions if p["claim"] in done["provisions"]]
        )
        for provision in provisions:
            try:
                await self._release_claim(provision["claim"], intent.node)
            except ApiError as exc:
                log.warning("could not release claim %s: %s", provision["claim"], exc)
                result.failed.append(f"PersistentVolumeClaim {provision['claim']}")
        replicas = (
            intent.replicas
            if done is None
            else [r for r in intent.replicas if r["name"] in done["replicas"]]
        )
        for replica in replicas:
            if self.cluster.pvs.get_api(replica["volume"]) is None:
                try:
                    await self.client.delete("Replica", replica["name"])
                except NotFound:
                    pass
                except ApiError as exc:
                    log.warning("could not delete replica %s: %s", replica["name"], exc)
                    result.failed.append(f"Replica {replica['name']}")
                    continue
                self.ingest.delete_key("Replica", replica["name"])
        return result

    async def _release_pv(self, pv_name: str, claim_key: str) -> bool:
        """Clear a claimRef we wrote unless the claim got bound to the PV; True if cleared."""
        for _attempt in range(3):
            try:
                raw = await self.client.get("PersistentVolume", pv_name)
            except NotFound:
                return False
            ref = (raw.get("spec") or {}).get("claimRef") or {}
            if f"{ref.get('namespace')}/{ref.get('name')}" != claim_key:
                return False
            claim = self.cluster.pvcs.get_api(claim_key)
            if claim is not None and claim.volume_name == pv_name and claim.fully_bound:
                return False
            try:
                claim_raw = await self.client.get(
                    "PersistentVolumeClaim", *reversed(claim_key.split("/", 1))
                )
                annotations = (claim_raw.get("metadata") or {}).get("annotations") or {}
                if (claim_raw.get("spec") or {}).get("volumeName") == pv_name and (
                    ANN_BIND_COMPLETED in annotations
                ):
                    return False
            except NotFound:
                pass
            raw["spec"].pop("claimRef", None)
            released_annotations = (raw.get("metadata") or {}).get("annotations", {})
            released_annotations.pop(ANN_BOUND_BY_CONTROLLER, None)
            released_annotations.pop(ANN_BINDING_INTENT, None)
            try:
                updated = await self.client.replace("PersistentVolume", raw)
            except Conflict:
                continue
            except ApiError as exc:
                log.warning("could not release PV %s: %s", pv_name, exc)
                return False
            updated.setdefault("kind", "PersistentVolume")
            self.ingest.upsert("PersistentVolume", updated)
            return True
        return False

    async def _release_claim(self, claim_key: str, node: str) -> None:
        """Remove the selected-node annotation (and the intent) we wrote for ``node``.

        A claim with no volume yet tells its provisioner to stop. A claim the provisioner
        already served keeps its volume, but loses the annotations too: a volume that
        other nodes can reach (no node affinity) lets the pod be placed elsewhere, and
        the claim must not go on naming a node its pod is not on."""
        namespace, name = claim_key.split("/", 1)
        try:
            raw = await self.client.get("PersistentVolumeClaim", name, namespace)
        except NotFound:
            return
        annotations = (raw.get("metadata") or {}).get("annotations") or {}
        if annotations.get(ANN_SELECTED_NODE) != node:
            return
        try:
            updated = await self.client.patch(
                "PersistentVolumeClaim",
                name,
                {"metadata": {"annotations": {ANN_SELECTED_NODE: None, ANN_BINDING_INTENT: None}}},
                namespace=namespace,
            )
        except ApiError as exc:
            log.warning("could not release claim %s: %s", claim_key, exc)
            return
        updated.setdefault("kind", "PersistentVolumeClaim")
        self.ingest.upsert("PersistentVolumeClaim", updated)
