"""The daemon's HTTP face: health, readiness, metrics (aiohttp).

- ``/healthz`` and ``/livez``: the process is alive and its scheduling loop is not stuck
  (its heartbeat is recent);
- ``/readyz``: caches are usable (warm from the database or synced from the API server)
  and the database is open; ``?verbose`` lists each named check, like the API server;
- ``/metrics``: Prometheus text format.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from aiohttp import web
from prometheus_client import CONTENT_TYPE_LATEST


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


def health_app(
    checks: HealthChecks,
    routes: list[web.RouteDef] | None = None,
    client_max_size: int = 16 * 1024 * 1024,
) -> web.Application:
    app = web.Application(client_max_size=client_max_size)
    app[HEALTH] = checks
    app.router.add_get("/healthz", _live)
    app.router.add_get("/livez", _live)
    app.router.add_get("/readyz", _ready)
    app.router.add_get("/metrics", _metrics)
    if routes:
        app.router.add_routes(routes)
    return app


async def serve(app: web.Application, address: str) -> web.AppRunner:
    """Start serving on ``host:port``; the caller owns the runner (and its cleanup)."""
    host, _, port = address.rpartition(":")
    runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=5.0)
    await runner.setup()
    site = web.TCPSite(runner, host.strip("[]") or "127.0.0.1", int(port))
    await site.start()
    return runner


def bound_port(runner: web.AppRunner) -> int:
    for address in runner.addresses:
        if isinstance(address, tuple) and len(address) >= 2:
            return int(address[1])
    raise RuntimeError("the HTTP server is not listening")
