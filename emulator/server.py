"""``ApiServer``: the emulator's lifecycle — an aiohttp app on a loopback port, the store,
the controllers — and the helpers tests use to seed and inspect it.

Two modes. The zero-cost one (the default, what most tests use) serves plain HTTP and
stores objects as they were sent plus the defaults behaviour depends on. The realistic
one (``realistic=True``, what the benchmarks use) costs a client what a real API server
costs: HTTPS with a CA of its own (the kubeconfig it writes carries it), and objects as
kube-apiserver returns them — every defaulted field, ``managedFields`` (see ``realism``).

One catch-all route hands every request to ``handlers``; a middleware holds delayed
requests, answers injected failures, fires tripwires around writes, turns any exception into a Status (never an
HTML page or a traceback), and records each request in ``faults.request_log``.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import json
import logging
import random
import secrets
import time
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from types import TracebackType

from aiohttp import web

from volsched.emulator.access import AccessTable, access_routes, service_account_user
from volsched.emulator.bookmark_timing import CADENCES, ApiserverBookmarks
from volsched.emulator.certificates import ServingCertificates, make_serving_certificates
from volsched.emulator.controller_manager import ControllerManager
from volsched.emulator.controllers import ControllerSettings
from volsched.emulator.core_controllers import default_service_account
from volsched.emulator.defaults import DEFAULT_SERVICE_ACCOUNT
from volsched.emulator.errors import MODIFIED, ApiError, reason_for
from volsched.emulator.faults import (
    WRITE_METHODS,
    Faults,
    InjectedFailure,
    RequestRecord,
    Tripwire,
    WriteRequest,
)
from volsched.emulator.handlers import ON_OPEN, Handlers, error_response, parse_target
from volsched.emulator.kubeconfig import write_kubeconfig
from volsched.emulator.raw import Raw, clone, mapping, name_of
from volsched.emulator.realism import FIELD_MANAGER, Realism, manager_from
from volsched.emulator.registry import Registry, serve
from volsched.emulator.resources import ResourceTable
from volsched.emulator.store import Store

log = logging.getLogger(__name__)

SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")
# Connections the kernel holds for the server before it accepts them. kube-apiserver's
# listener (Go's net.Listen) asks for the system's maximum (somaxconn, 4096 by default);
# aiohttp's default of 128 drops the SYNs of a burst past it, and each dropped one is
# retried by the client a whole second later.
LISTEN_BACKLOG = 4096

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


class ApiServer:
    """A Kubernetes API server on 127.0.0.1, with the controllers volsched relies on.

    Objects, history and controllers live as long as the instance; ``start``/``stop``
    only open and close the HTTP side (and start and cancel the controllers).
    """

    def __init__(
        self,
        controllers: ControllerSettings | None = None,
        *,
        bookmark_interval_seconds: float = 1.0,
        history_limit: int = 2000,
        watch_timeout_seconds: float | None = None,
        bookmark_cadence: str | None = None,
        bookmark_seed: int | None = None,
        realistic: bool = False,
    ) -> None:
        # A realistic server bookmarks as kube-apiserver does unless told otherwise.
        if bookmark_cadence is None:
            bookmark_cadence = "apiserver" if realistic else "interval"
        if bookmark_cadence not in CADENCES:
            raise ValueError(
                f"bookmark_cadence: {bookmark_cadence!r} is none of {', '.join(CADENCES)}"
            )
        self.settings = controllers or ControllerSettings()
        self.realistic = realistic
        self.store = Store(history_limit)
        self.resources = ResourceTable()
        self.registry = Registry(self.store, self.resources, Realism() if realistic else None)
        self.registry.protect_storage = self.settings.storage_protection
        # The CA and serving certificate of the realistic mode's HTTPS (made at start).
        self.certificates: ServingCertificates | None = None
        self.faults = Faults(self.store)
        # Who may do what through delegated authentication/authorisation (see access).
        self.access = AccessTable()
        self.bookmark_interval_seconds = bookmark_interval_seconds
        # "interval": a bookmark every bookmark_interval_seconds (fast, for tests);
        # "apiserver": when kube-apiserver's watch cache sends them (bookmark_timing).
        self.bookmark_cadence: str = bookmark_cadence
        self._bookmark_rng = random.Random(bookmark_seed)
        self.watch_timeout_seconds = watch_timeout_seconds
        self.url = ""
        self._runner: web.AppRunner | None = None
        self._controllers: ControllerManager | None = None
        for name in SYSTEM_NAMESPACES:
            self.ensure_namespace(name)

    # Lifecycle.

    async def start(self, host: str = "127.0.0.1", port: int = 0) -> str:
        """Serve on ``host:port`` (0: any free port); returns the base URL."""
        if self._runner is not None:
            raise RuntimeError("the emulator is already started")
        apiserver_bookmarks = None
        if self.bookmark_cadence == "apiserver":
            # The cachers, and their bookmark timers, start with the server.
            loop_time = asyncio.get_running_loop().time()
            apiserver_bookmarks = ApiserverBookmarks(loop_time, self._bookmark_rng)
        handlers = Handlers(
            self.registry,
            self.faults,
            self.bookmark_interval_seconds,
            self.watch_timeout_seconds,
            apiserver_bookmarks,
        )
        app = web.Application(middlewares=[self._middleware], client_max_size=32 * 1024**2)
        app.router.add_routes(access_routes(self.access, self.registry.objects))
        app.router.add_route("*", "/{tail:.*}", handlers.handle)
        runner = web.AppRunner(
            app, handler_cancellation=True, shutdown_timeout=1.0, access_log=None
        )
        await runner.setup()
        ssl_context = None
        if self.realistic:
            if self.certificates is None:
                self.certificates = make_serving_certificates(host)
            ssl_context = self.certificates.server_context()
        site = web.TCPSite(runner, host, port, ssl_context=ssl_context, backlog=LISTEN_BACKLOG)
        try:
            await site.start()
        except BaseException:
            await runner.cleanup()
            raise
        self._runner = runner
        bound_host, bound_port = runner.addresses[0][:2]
        scheme = "https" if ssl_context is not None else "http"
        self.url = f"{scheme}://{bound_host}:{bound_port}"
        self._controllers = ControllerManager(self.registry, self.settings)
        self._controllers.start()
        return self.url

    async def stop(self) -> None:
        """Cancel the controllers, end every watch, and close the port."""
        if self._controllers is not None:
            await self._controllers.stop()
            self._controllers = None
        for subscription in self.store.subscriptions():
            subscription.end()
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        self.url = ""

    async def __aenter__(self) -> ApiServer:
        if self._runner is None:
            await self.start()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        await self.stop()

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1]) if self.url else 0

    @property
    def certificate_authority(self) -> bytes | None:
        """The PEM of the CA a client must trust (None over plain HTTP)."""
        return self.certificates.authority_pem if self.certificates is not None else None

    def write_kubeconfig(self, path: str | Path, namespace: str = "default") -> Path:
        """A kubeconfig for this server: its URL and, over HTTPS, its CA."""
        if not self.url:
            raise RuntimeError("the emulator is not started")
        return write_kubeconfig(path, self.url, namespace, self.certificate_authority)

    # Seeding and inspecting.

    def ensure_namespace(self, name: str) -> Raw:
        """The namespace, made when missing, with its ``default`` ServiceAccount as a
        cluster that has been running has it (whether or not the ServiceAccount
        controller runs: a namespace made here is part of the cluster's starting state)."""
        namespaces = self.registry.core("namespaces")
        existing = self.registry.stored(namespaces, "", name)
        if existing is not None:
            return clone(existing)
        body = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
        created = clone(self.registry.create(namespaces, "", body))
        accounts = self.registry.core("serviceaccounts")
        self.registry.create(accounts, name, default_service_account(name), from_client=False)
        return created

    def load(self, objects: Iterable[Raw]) -> list[Raw]:
        """Store objects of any served kind as given (status, uid and times kept).

        CRDs and namespaces go first so the rest can refer to them; a namespaced object's
        namespace is created when missing.  Returns the stored objects.
        """
        # YAML turns unquoted timestamps into datetimes: store JSON, as a server would.
        items = [
            json.loads(json.dumps(o, default=_json_value)) for o in objects if isinstance(o, dict)
        ]
        order = {"CustomResourceDefinition": 0, "Namespace": 1}
        items.sort(key=lambda o: order.get(str(o.get("kind")), 2))
        stored = []
        for obj in items:
            resource = self.resources.by_kind(str(obj.get("kind", "")), obj.get("apiVersion"))
            if resource is None:
                raise ApiError(
                    404,
                    "NotFound",
                    f'no matches for kind "{obj.get("kind")}" in version "{obj.get("apiVersion")}"',
                )
            namespace = ""
            if resource.namespaced:
                namespace = str(mapping(obj, "metadata").get("namespace") or "default")
                self.ensure_namespace(namespace)
            if resource.key == ("", "serviceaccounts"):
                # A namespace's default account is already there (see ensure_namespace).
                seeded = self.registry.stored(resource, namespace, name_of(obj))
                if seeded is not None and name_of(obj) == DEFAULT_SERVICE_ACCOUNT:
                    stored.append(clone(serve(resource, seeded)))
                    continue
            created = self.registry.create(resource, namespace, obj, from_client=False)
            stored.append(clone(serve(resource, created)))
        return stored

    def service_account_token(self, namespace: str, name: str) -> str:
        """A token for the ServiceAccount, as the kubelet mounts one into a pod running as
        it (``/var/run/secrets/kubernetes.io/serviceaccount/token``); TokenReviews then
        authenticate it as ``system:serviceaccount:<namespace>:<name>``."""
        account = self.registry.stored(self.registry.core("serviceaccounts"), namespace, name)
        if account is None:
            raise ApiError(404, "NotFound", f'serviceaccounts "{name}" not found')
        token = f"sa-{secrets.token_urlsafe(24)}"
        uid = str(mapping(account, "metadata").get("uid") or "")
        self.access.tokens[token] = service_account_user(namespace, name, uid)
        return token

    def get(
        self, kind: str, name: str, namespace: str = "", api_version: str | None = None
    ) -> Raw | None:
        """A copy of the stored object, or None (``kind`` as in manifests: "Pod")."""
        resource = self.resources.by_kind(kind, api_version)
        if resource is None:
            return None
        found = self.registry.stored(resource, namespace, name)
        return clone(serve(resource, found)) if found is not None else None

    def list(
        self, kind: str, namespace: str | None = None, api_version: str | None = None
    ) -> list[Raw]:
        resource = self.resources.by_kind(kind, api_version)
        if resource is None:
            return []
        return [clone(serve(resource, o)) for o in self.store.list_objects(resource.key, namespace)]

    # HTTP plumbing.

    def _injected(self, failure: InjectedFailure, request: web.Request) -> ApiError:
        message = failure.message
        target = None
        with contextlib.suppress(ApiError):
            target = parse_target(self.registry, [s for s in request.path.split("/") if s])
        if not message:
            what = (
                f'{target.resource.group_resource} "{target.name}"'
                if target and target.name
                else "the request"
            )
            if failure.status == 409:
                message = f"Operation cannot be fulfilled on {what}: {MODIFIED}"
            elif failure.status == 404:
                message = f"{what} not found"
            else:
                message = f"injected failure ({failure.status}) for {what}"
        return ApiError(failure.status, reason_for(failure.status), message)

    @web.middleware
    async def _middleware(self, request: web.Request, handler: Handler) -> web.StreamResponse:
        logged = False
        received = time.monotonic()

        def record(status: int) -> None:
            nonlocal logged
            if not logged:
                logged = True
                self.faults.record(
                    RequestRecord(
                        request.method, request.path, status, request.query_string, received
                    )
                )

        request[ON_OPEN] = record
        FIELD_MANAGER.set(
            manager_from(request.query.get("fieldManager"), request.headers.get("User-Agent"))
        )
        tripwire: Tripwire | None = None
        write = WriteRequest(request.method, request.path, None)
        try:
            delay = self.faults.take_delay(request.method, request.path_qs)
            if delay > 0:
                await asyncio.sleep(delay)
            failure = self.faults.take_failure(request.method, request.path_qs)
            if failure is not None:
                raise self._injected(failure, request)
            if request.method in WRITE_METHODS and self.faults.tripwires_armed():
                # The body is read once here; aiohttp keeps it for the handler.
                write = WriteRequest(request.method, request.path, await _json_body(request))
                tripwire = self.faults.take_tripwire(write)
                if tripwire is not None and not tripwire.after:
                    record(503)
                    await tripwire.action(write, None)
                    raise ApiError(503, "ServiceUnavailable", "the write was dropped by a tripwire")
            response = await handler(request)
        except ApiError as error:
            response = error_response(error)
        except web.HTTPException as exc:
            response = error_response(ApiError(exc.status, reason_for(exc.status), exc.reason))
        except (asyncio.CancelledError, ConnectionResetError):
            raise
        except Exception as exc:
            log.exception("emulator: %s %s failed", request.method, request.path)
            response = error_response(
                ApiError(500, "InternalError", f"Internal error occurred: {exc}")
            )
        record(response.status)
        if tripwire is not None and tripwire.after:
            await tripwire.action(write, response.status)
        return response


async def _json_body(request: web.Request) -> object:
    try:
        return json.loads(await request.read())
    except ValueError:
        return None


def _json_value(value: object) -> str:
    if isinstance(value, datetime.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=datetime.UTC)
        return value.astimezone(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    if isinstance(value, datetime.date):
        return value.isoformat()
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")
