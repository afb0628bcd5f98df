"""The daemon's HTTP face: health, readiness, metrics (aiohttp).

- ``/healthz`` and ``/livez``: the process is alive and its scheduling loop is not stuck
  (its heartbeat is recent);
- ``/readyz``: caches are usable (warm from the database or synced from the API server)
  and the database is open and can be written — while writes fail (a full disk) the
  ``database`` check fails with the reason; ``?verbose`` lists each named check, like
  the API server;
- ``/metrics``: Prometheus text format.
"""

from __future__ import annotations

import asyncio
import logging
import resource
import socket
import ssl
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from aiohttp import web
from aiohttp.web_runner import BaseSite
from prometheus_client import CONTENT_TYPE_LATEST

from volsched.cache.errors import ConfigError
from volsched.daemon.http.listening import BoundedListener, ConnectionLimits, listening_sockets

log = logging.getLogger("volsched.http")

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(slots=True)
class Check:
    name: str
    probe: Callable[[], str | None]  # None when healthy, else why not


@dataclass(slots=True)
class HealthChecks:
    live: list[Check]
    ready: list[Check]
    metrics: Callable[[], bytes]


HEALTH = web.AppKey("health", HealthChecks)


def _report(checks: list[Check], verbose: bool) -> web.Response:
    lines = []
    failed = False
    for check in checks:
        problem = check.probe()
        if problem is None:
            lines.append(f"[+]{check.name} ok")
        else:
            failed = True
            lines.append(f"[-]{check.name} failed: {problem}")
    status = 503 if failed else 200
    if verbose or failed:
        body = "\n".join(lines) + ("\nhealthz check failed\n" if failed else "\nok\n")
    else:
        body = "ok"
    return web.Response(text=body, status=status, content_type="text/plain")


async def _live(request: web.Request) -> web.Response:
    checks = request.app[HEALTH]
    return _report(checks.live, "verbose" in request.query)


async def _ready(request: web.Request) -> web.Response:
    checks = request.app[HEALTH]
    return _report(checks.live + checks.ready, "verbose" in request.query)


async def _metrics(request: web.Request) -> web.Response:
    body = request.app[HEALTH].metrics()
    response = web.Response(body=body)
    response.content_type = CONTENT_TYPE_LATEST.split(";")[0]
    response.charset = "utf-8"
    return response


@web.middleware
async def _one_line_errors(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Whatever goes wrong in a handler is one log line and a JSON 500, not a traceback
    per request: a flood of bad requests must not flood the log."""
    try:
        return await handler(request)
    except web.HTTPException:
        raise
    except (asyncio.CancelledError, ConnectionResetError):
        raise
    except Exception as exc:
        log.error("%s %s failed: %s: %s", request.method, request.path, type(exc).__name__, exc)
        return web.json_response({"Error": "internal error"}, status=500)


def health_app(
    checks: HealthChecks,
    routes: list[web.RouteDef] | None = None,
    client_max_size: int = 16 * 1024 * 1024,
    middlewares: Sequence[Any] = (),
) -> web.Application:
    app = web.Application(
        client_max_size=client_max_size, middlewares=[_one_line_errors, *middlewares]
    )
    app[HEALTH] = checks
    app.router.add_get("/healthz", _live)
    app.router.add_get("/livez", _live)
    app.router.add_get("/readyz", _ready)
    app.router.add_get("/metrics", _metrics)
    if routes:
        app.router.add_routes(routes)
    return app


class OneLineLogger(logging.LoggerAdapter):  # type: ignore[type-arg]
    """aiohttp's connection-level logger, one line per malformed request: the protocol
    layer logs a full traceback for every bad request line or header, which lets a
    flood of junk flood the log."""

    def process(self, msg: Any, kwargs: Any) -> tuple[Any, Any]:
        problem = kwargs.pop("exc_info", None)
        kwargs.pop("stack_info", None)
        if isinstance(problem, BaseException):
            first = (str(problem).splitlines() or [""])[0][:200]
            msg = f"{msg}: {type(problem).__name__}: {first}"
        return msg, kwargs


# Connections the kernel holds for the listener to accept. A full queue drops the next
# SYN, and the client (the kubelet's probe) tries again only a second later; a deep one
# lets a burst of connections wait their turn instead (the kernel caps it at somaxconn).
BACKLOG = 1024


class BoundedSite(BaseSite):
    """A TCP site whose connections are counted and bounded from their accept
    (``listening.BoundedListener``)."""

    def __init__(
        self,
        runner: web.AppRunner,
        host: str,
        port: int,
        limits: ConnectionLimits,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        super().__init__(runner, ssl_context=ssl_context, backlog=BACKLOG)
        self._host = host
        self._port = port
        self._limits = limits
        self.listener: BoundedListener | None = None

    @property
    def name(self) -> str:
        scheme = "https" if self._ssl_context else "http"
        return f"{scheme}://{self._host}:{self._port}"

    async def start(self) -> None:
        await super().start()
        server = self._runner.server
        assert server is not None
        sockets = await listening_sockets(self._host, self._port, self._backlog)
        self.listener = BoundedListener(sockets, server, self._ssl_context, self._limits)
        self._server = self.listener
        await self.listener.start_serving()

    async def stop(self) -> None:
        if self.listener is not None:
            self.listener.close()
            await self.listener.wait_closed()
        await super().stop()


def descriptor_bound(limits: ConnectionLimits) -> ConnectionLimits:
    """The limits, with ``max_connections`` lowered to what the process's descriptor
    limit leaves room for (a quarter of it, at least 64, kept for everything else)."""
    soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY:
        return limits
    room = soft - max(64, soft // 4)
    if limits.max_connections <= room:
        return limits
    log.warning(
        "http.maxConnections is %d but the process may open %d descriptors: "
        "serving at most %d connections",
        limits.max_connections,
        soft,
        max(room, 1),
    )
    return replace(limits, max_connections=max(room, 1))


async def serve(
    app: web.Application,
    address: str,
    ssl_context: ssl.SSLContext | None = None,
    limits: ConnectionLimits | None = None,
    setting: str = "http.address",
) -> web.AppRunner:
    """Start serving on ``host:port``; the caller owns the runner (and its cleanup).

    A host that does not resolve or a port already taken is a ``ConfigError`` naming
    the setting and the address, so the command says so in one line.
    """
    host, _, port = address.rpartition(":")
    limits = descriptor_bound(limits or ConnectionLimits())
    runner = web.AppRunner(
        app,
        handle_signals=False,
        access_log=None,
        shutdown_timeout=5.0,
        keepalive_timeout=limits.idle_timeout_seconds,
        # Bodies are inflated where they are read, with their size bounded (http.reading).
        auto_decompress=False,
        # A body refused unread (too large, unauthenticated) is not read on for seconds
        # after the answer: the connection closes once the answer is sent.
        lingering_time=0,
        logger=OneLineLogger(logging.getLogger("volsched.http.protocol"), {}),
    )
    await runner.setup()
    site = BoundedSite(runner, host.strip("[]") or "127.0.0.1", int(port), limits, ssl_context)
    try:
        await site.start()
    except (OSError, socket.gaierror) as exc:
        await runner.cleanup()
        problem = exc.strerror or str(exc)
        raise ConfigError(f"{setting}: cannot listen on {address}: {problem}") from None
    return runner


def bound_port(runner: web.AppRunner) -> int:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    raise RuntimeError("the HTTP server is not listening")
