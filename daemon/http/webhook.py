"""``volsched webhook``: the mutating admission webhook that routes pods to volsched.

The API server sends an ``admission.k8s.io/v1`` AdmissionReview for each pod being
created (``POST /mutate-pods``); the answer always allows the pod, with a JSONPatch that
sets ``spec.schedulerName`` when ``volsched.scheduling.routing`` says the pod's storage is
volsched's. The webhook fails open twice over: its MutatingWebhookConfiguration says
``failurePolicy: Ignore`` with a short timeout, and a request it cannot read is allowed
unchanged with a warning the client sees (``kubectl`` prints it), never refused.

The claims, PVs and StorageClasses it consults come from its own list+watch (no API call
per admission), so an answer takes microseconds; until those caches have synced,
``/readyz`` fails and the Service sends the API server nowhere (it then ignores the
webhook, as configured). TLS comes from files and is reloaded when they change.
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
from volsched.daemon.http.reading import BodyError, read_json
from volsched.daemon.http.server import bound_port, serve
from volsched.daemon.http.tls_files import ReloadingTLS
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.watch.ingest import Ingest
from volsched.daemon.watch.watching import KindWatcher, WatchSettings
from volsched.scheduling.routing import RoutingRules, decide_routing, pod_shape_problem

log = logging.getLogger(__name__)

API_VERSION = "admission.k8s.io/v1"
WATCHED_KINDS = ("PersistentVolumeClaim", "PersistentVolume", "StorageClass")
MAX_BODY_BYTES = 3 * 1024 * 1024  # the API server's own request limit for a pod
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


def review(body: Any, cluster: ClusterCache, rules: RoutingRules) -> Review:
    """Decide one AdmissionReview request body (already decoded JSON)."""
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
    metadata = pod.get("metadata") or {}
    namespace = request.get("namespace") or metadata.get("namespace") or "default"
    decision = decide_routing(pod, namespace, cluster, rules)
    if not decision.route:
        return Review(uid)
    spec = pod.get("spec") or {}
    operation = "replace" if "schedulerName" in spec else "add"
    patch = [{"op": operation, "path": "/spec/schedulerName", "value": rules.scheduler_name}]
    name = metadata.get("name") or metadata.get("generateName", "")
    log.info("routing pod %s/%s to %s: %s", namespace, name, rules.scheduler_name, decision.reason)
    return Review(uid, patch=patch)


async def _mutate(request: web.Request) -> web.Response:
    webhook = request.app[WEBHOOK]
    try:
        body = await read_json(request, MAX_BODY_BYTES, BODY_TIMEOUT_SECONDS)
    except BodyError as exc:
        answer = Review("", warning=f"volsched routing: {exc}; pod left unchanged")
        return web.json_response(answer.body())
    try:
        answer = review(body, webhook.cluster, webhook.rules)
    except Exception as exc:
        # Fail open with an answer the API server takes, never a 500 and a traceback.
        log.error("admission review failed: %s: %s", type(exc).__name__, exc)
        request_uid = body.get("request", {}).get("uid") if isinstance(body, dict) else None
        answer = Review(
            request_uid if isinstance(request_uid, str) else "",
            warning="volsched routing: the webhook failed; pod left unchanged",
        )
    webhook.reviewed += 1
    webhook.routed += bool(answer.patch)
    return web.json_response(answer.body())


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
    ) -> None:
        self.client = client
        self.rules = rules
        self.tls = tls
        self.cluster = ClusterCache()
        self.ingest = Ingest(self.cluster, None, rules.scheduler_name)
        self.watchers = [
            KindWatcher(kind, client, self.ingest, None, watch or WatchSettings())
            for kind in WATCHED_KINDS
        ]
        self.reviewed = 0
        self.routed = 0
        self._tasks: list[asyncio.Task[None]] = []
        self._runner: web.AppRunner | None = None

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
