"""``GET /shadow/report``: shadow mode's comparison with the other scheduler, as JSON.

Served by the daemon's one HTTP server, so it sits behind the same authentication and
authorisation as ``/metrics`` (a caller needs ``get`` on the non-resource URL
``/shadow/report``). The body is ``ShadowTally.report()``; ``volsched shadow-report``
prints it as a table.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from aiohttp import web

REPORT_PATH = "/shadow/report"


def shadow_routes(report: Callable[[], dict[str, Any]]) -> list[web.RouteDef]:
    async def handle(request: web.Request) -> web.Response:
        return web.json_response(report())

    return [web.get(REPORT_PATH, handle)]
