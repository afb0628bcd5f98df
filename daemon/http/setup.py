"""The daemon's HTTP listener as configured: HTTPS with delegated authentication and
authorisation, or plain HTTP on loopback when authentication is switched off."""

from __future__ import annotations

from aiohttp import web

from volsched.cache.errors import ConfigError
from volsched.daemon.config.overrides import is_loopback
from volsched.daemon.config.settings import HttpSettings
from volsched.daemon.http.auth import Reviewer, auth_middleware
from volsched.daemon.http.listening import ConnectionLimits
from volsched.daemon.http.server import HealthChecks, health_app, serve
from volsched.daemon.http.tls import serving_context
from volsched.daemon.kube.client import KubeClient


async def serve_daemon_http(
    settings: HttpSettings,
    client: KubeClient,
    checks: HealthChecks,
    routes: list[web.RouteDef],
) -> web.AppRunner:
    auth = settings.authentication
    limits = ConnectionLimits(
        settings.max_connections, settings.idle_timeout_seconds, settings.header_timeout_seconds
    )
    if not auth.enabled:
        if not is_loopback(settings.address):
            # Settings built in code skip the file checks; this one must hold anyway.
            raise ConfigError(
                f"http.authentication.enabled: may be false only on a loopback address, "
                f"not {settings.address}"
            )
        app = health_app(checks, routes)
        return await serve(app, settings.address, limits=limits)
    reviewer = Reviewer(client, auth.cache_ttl_seconds)
    app = health_app(checks, routes, middlewares=[auth_middleware(reviewer)])
    return await serve(
        app,
        settings.address,
        ssl_context=serving_context(auth, settings.address),
        limits=limits,
    )
