"""``volsched webhook``: the mutating admission webhook that routes pods to volsched.

The API server sends an ``admission.k8s.io/v1`` AdmissionReview for each pod being
created (``POST /mutate-pods``); the answer always allows the pod, with a JSONPatch that
sets ``spec.schedulerName`` when ``volsched.scheduling.routing`` says the pod's storage is
volsched's. The webhook fails open twice over: its MutatingWebhookConfiguration says
``failurePolicy: Ignore`` with a short timeout, and a request it cannot read is allowed
unchanged with a warning the client sees (``kubectl`` prints it), never refused.

The claims, PVs and StorageClasses it consults come from its own list+watch, so an
answer usually takes microseconds; until those caches have synced, ``/readyz`` fails and
the Service sends the API server nowhere (it then ignores the webhook, as configured).
A claim the caches do not know yet — created just before its pod, its watch event not
here yet — is read from the API server before deciding, within a deadline well inside
the API server's own timeout for the call (``admission_lookup``); a pod left to its
scheduler because that read failed or ran out of time is logged with its name. A claim
name no claim can have is never read: the pod is left unchanged, with a warning that
says why. Names from a request reach a log line or a warning cut to a bounded length
(``names.shown``): the pod is not validated yet when a mutating webhook sees it. TLS
comes from files and is reloaded when they change.
"""

from __future__ import annotations

import asyncio
import base64
import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import ConfigError
from volsched.cache.objects.core import DEFAULT_SCHEDULER
from volsched.cache.objects.names import shown
from volsched.daemon.config.loading import parse_duration
from volsched.daemon.config.settings import WebhookSettings
from volsched.daemon.http.admission_lookup import look_up
from volsched.daemon.http.reading import BodyError, read_json
from volsched.daemon.http.server import bound_port, serve
from volsched.daemon.http.tls_files import ReloadingTLS
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.watch.ingest import Ingest
from volsched.daemon.watch.watching import KindWatcher, WatchSettings
from volsched.scheduling.routing import (
    Routing,
    RoutingRules,
    decide_routing,
    pod_shape_problem,
    unknown_objects,
)

log = logging.getLogger(__name__)

API_VERSION = "admission.k8s.io/v1"
WATCHED_KINDS = ("PersistentVolumeClaim", "PersistentVolume", "StorageClass")
MAX_BODY_BYTES = 3 * 1024 * 1024  # the API server's own request limit for a pod
# How long an admission may spend reading what the caches do not know yet (the
# ``webhook.lookupTimeoutSeconds`` setting). The API server gives the webhook its
# timeoutSeconds (deploy/: 3 s; kube-apiserver's default: 10 s) and names it in the
# request's ``timeout`` parameter; the read never takes more than half of that, so the
# answer still arrives in time.
LOOKUP_TIMEOUT_SECONDS = WebhookSettings().lookup_timeout_seconds
# How much of a name a warning shows: the API server may cut a warning past 256
# characters, and ``kubectl`` prints it on one line.
WARNED_NAME_CHARACTERS = 63
# How long a client may take to send its body.
BODY_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True, slots=True)
class Review:
    """The answer to one AdmissionReview."""

    uid: str
    patch: list[dict[str, Any]] | None = None
    warning: str | None = None

    def body(self) -> dict[str, Any]:
        response: dict[str, Any] = {"uid": self.uid, "allowed": True}
        if self.patch:
            encoded = json.dumps(self.patch, separators=(",", ":")).encode()
            response["patchType"] = "JSONPatch"
            response["patch"] = base64.b64encode(encoded).decode()
        if self.warning:
            response["warnings"] = [self.warning]
        return {"apiVersion": API_VERSION, "kind": "AdmissionReview", "response": response}


@dataclass(frozen=True, slots=True)
class Admission:
    """A pod being created, as an AdmissionReview brings it."""

    uid: str
    pod: Mapping[str, Any]
    namespace: str

    @property
    def pod_name(self) -> str:
        """namespace/name, for a log line; a pod created with ``generateName`` has only
        that prefix yet. Cut to a bounded length: nothing has validated it yet."""
        metadata = self.pod.get("metadata") or {}
        name = metadata.get("name") or metadata.get("generateName", "")
        return shown(f"{self.namespace}/{name}")


def read_review(body: Any) -> Admission | Review:
    """The pod to decide for, or the answer when there is none (a malformed request,
    an operation other than CREATE)."""
    request = body.get("request") if isinstance(body, Mapping) else None
    if not isinstance(request, Mapping):
        return Review(
            "", warning="volsched routing: not an AdmissionReview request; pod left unchanged"
        )
    uid = request.get("uid")
    if not isinstance(uid, str) or not uid:
        return Review(
            "", warning="volsched routing: not an AdmissionReview request; pod left unchanged"
        )
    if body.get("apiVersion") != API_VERSION or body.get("kind") != "AdmissionReview":
        return Review(
            uid,
            warning=f"volsched routing: expected {API_VERSION} AdmissionReview; pod left unchanged",
        )
    kind = request.get("kind") or {}
    pod = request.get("object")
    if not isinstance(kind, Mapping) or kind.get("kind") != "Pod" or not isinstance(pod, Mapping):
        return Review(uid, warning="volsched routing: the request holds no Pod; left unchanged")
    if request.get("operation", "CREATE") != "CREATE":
        return Review(uid)
    problem = pod_shape_problem(pod, "request.object")
    if problem is None and not isinstance(request.get("namespace") or "", str):
        problem = "request.namespace is not a string"
    if problem is not None:
        return Review(uid, warning=f"volsched routing: {problem}; pod left unchanged")
    namespace = (
        request.get("namespace") or (pod.get("metadata") or {}).get("namespace") or "default"
    )
    return Admission(uid, pod, str(namespace))


def answer(
    admission: Admission, decision: Routing, rules: RoutingRules, warning: str | None = None
) -> Review:
    if not decision.route:
        return Review(admission.uid, warning=warning)
    spec = admission.pod.get("spec") or {}
    operation = "replace" if "schedulerName" in spec else "add"
    patch = [{"op": operation, "path": "/spec/schedulerName", "value": rules.scheduler_name}]
    log.info("routing pod %s to %s: %s", admission.pod_name, rules.scheduler_name, decision.reason)
    return Review(admission.uid, patch=patch)


def lookup_deadline(timeout_parameter: str | None, configured_seconds: float) -> float:
    """The configured deadline, or half the API server's ``timeout`` for this call (a Go
    duration such as ``3s``) when that is shorter."""
    if not timeout_parameter:
        return configured_seconds
    try:
        api_timeout = parse_duration(timeout_parameter, "timeout")
    except ConfigError:
        return configured_seconds
    return min(configured_seconds, api_timeout / 2)


async def _mutate(request: web.Request) -> web.Response:
    webhook = request.app[WEBHOOK]
    try:
        body = await read_json(request, MAX_BODY_BYTES, BODY_TIMEOUT_SECONDS)
    except BodyError as exc:
        answer = Review("", warning=f"volsched routing: {exc}; pod left unchanged")
        return web.json_response(answer.body())
    deadline = lookup_deadline(request.query.get("timeout"), webhook.lookup_timeout_seconds)
    try:
        reviewed = await webhook.review(body, deadline)
    except Exception as exc:
        # Fail open with an answer the API server takes, never a 500 and a traceback.
        log.error("admission review failed: %s: %s", type(exc).__name__, shown(str(exc)))
        request_uid = body.get("request", {}).get("uid") if isinstance(body, dict) else None
        reviewed = Review(
            request_uid if isinstance(request_uid, str) else "",
            warning="volsched routing: the webhook failed; pod left unchanged",
        )
    return web.json_response(reviewed.body())


async def _healthz(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def _readyz(request: web.Request) -> web.Response:
    webhook = request.app[WEBHOOK]
    waiting = [w.kind for w in webhook.watchers if not w.state.synced]
    if waiting:
        return web.Response(status=503, text=f"caches not synced: {', '.join(waiting)}\n")
    return web.Response(text="ok")


class RoutingWebhook:
    """The webhook server: its caches, its watches, its HTTPS listener."""

    def __init__(
        self,
        client: KubeClient,
        rules: RoutingRules,
        tls: ReloadingTLS | None,
        watch: WatchSettings | None = None,
        lookup_timeout_seconds: float = LOOKUP_TIMEOUT_SECONDS,
    ) -> None:
        self.client = client
        self.rules = rules
        self.tls = tls
        self.lookup_timeout_seconds = lookup_timeout_seconds
        self.cluster = ClusterCache()
        self.ingest = Ingest(self.cluster, None, rules.scheduler_name)
        self.watchers = [
            KindWatcher(kind, client, self.ingest, None, watch or WatchSettings())
            for kind in WATCHED_KINDS
        ]
        self.reviewed = 0
        self.routed = 0
        # Admissions that needed a read from the API server, and those whose read failed.
        self.looked_up = 0
        self.lookups_failed = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._runner: web.AppRunner | None = None

    async def review(self, body: Any, lookup_deadline_seconds: float) -> Review:
        """Decide one AdmissionReview, reading first what the caches do not know yet."""
        self.reviewed += 1
        admission = read_review(body)
        if isinstance(admission, Review):
            return admission
        pod, namespace = admission.pod, admission.namespace
        decision = decide_routing(pod, namespace, self.cluster, self.rules)
        warning = None
        if not decision.route and unknown_objects(pod, namespace, self.cluster, self.rules):
            decision, warning = await self._decide_after_lookup(admission, lookup_deadline_seconds)
        self.routed += decision.route
        return answer(admission, decision, self.rules, warning)

    async def _decide_after_lookup(
        self, admission: Admission, deadline_seconds: float
    ) -> tuple[Routing, str | None]:
        """The decision once what the caches lack was read, and a warning for the client
        when the pod names an object no object can be (it would wait for it forever)."""
        pod, namespace = admission.pod, admission.namespace
        self.looked_up += 1
        lookup = await look_up(
            self.client,
            self.ingest,
            lambda: unknown_objects(pod, namespace, self.cluster, self.rules),
            deadline_seconds,
        )
        decision = decide_routing(pod, namespace, self.cluster, self.rules)
        if lookup.read:
            log.debug(
                "pod %s: read %s from the API server (not in the cache yet)",
                admission.pod_name,
                ", ".join(str(ref) for ref in lookup.read),
            )
        if lookup.failure:
            self.lookups_failed += 1
        if decision.route:
            return decision, None
        warning = None
        if lookup.invalid:
            ref, problem = lookup.invalid[0]
            warning = (
                f"volsched routing: no {ref.kind} can be named "
                f"'{shown(ref.name, WARNED_NAME_CHARACTERS)}' ({problem}); pod left unchanged"
            )
            log.info(
                "pod %s not routed to %s: %s",
                admission.pod_name,
                self.rules.scheduler_name,
                "; ".join(f"{ref.kind} '{shown(ref.name)}' {why}" for ref, why in lookup.invalid),
            )
        if lookup.failure:
            # Only a default-scheduler pod's volumes decide (another scheduler's is left
            # alone before any read).
            log.warning(
                "pod %s not routed to %s and left to %s: %s",
                admission.pod_name,
                self.rules.scheduler_name,
                DEFAULT_SCHEDULER,
                lookup.failure,
            )
        elif lookup.absent:
            log.info(
                "pod %s not routed to %s: %s not found",
                admission.pod_name,
                self.rules.scheduler_name,
                ", ".join(str(ref) for ref in lookup.absent),
            )
        return decision, warning

    def app(self) -> web.Application:
        app = web.Application(client_max_size=MAX_BODY_BYTES)
        app[WEBHOOK] = self
        app.router.add_post("/mutate-pods", _mutate)
        app.router.add_get("/healthz", _healthz)
        app.router.add_get("/readyz", _readyz)
        return app

    async def start(self, address: str) -> int:
        """Start the watches and the listener; the port it listens on."""
        for watcher in self.watchers:
            self._tasks.append(asyncio.create_task(watcher.run(), name=f"watch {watcher.kind}"))
        if self.tls is not None:
            self._tasks.append(asyncio.create_task(self.tls.watch(), name="tls reload"))
        runner = await serve(
            self.app(),
            address,
            ssl_context=self.tls.context if self.tls is not None else None,
            setting="webhook.address",
        )
        self._runner = runner
        return bound_port(runner)

    async def stop(self) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None


WEBHOOK = web.AppKey("webhook", RoutingWebhook)
