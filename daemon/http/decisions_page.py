"""``/decisions``: a read-only HTML page of the daemon's decisions, for people.

- ``/decisions``: the pending pods with the message the daemon last reported for each
  (the FailedScheduling text), and where the replicas of replicated volumes live, zone
  by zone, node by node, disk by disk;
- in shadow mode, how volsched's decisions compare with the other scheduler's: the
  agreement, the causes of the differences, what storage awareness would have saved,
  and the latest differences with the plugins that make each;
- ``/decisions?pod=NAMESPACE/NAME``: for one pod, the per-node filter and score table of
  ``volsched explain``, decided now against the live cache.

Pages are rendered on the server from Jinja2 templates shipped in the package, with
autoescaping on: object names are user input and are always shown as text. No
JavaScript, and a Content-Security-Policy that would refuse any. The routes sit behind
the same authentication and authorisation as ``/metrics`` (``http.auth``): a caller
needs ``get`` on the non-resource URL ``/decisions`` — one path for both pages (the pod
is a query parameter), so one RBAC rule without a wildcard grants them.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any

from aiohttp import web

from volsched.cache.cluster import ClusterCache
from volsched.daemon.binding.attempts import LastAttempts
from volsched.daemon.http.decisions_view import (
    DecisionsSource,
    PageLimits,
    pending_view,
    pod_explanation,
    replica_view,
)
from volsched.scheduling.framework.profiles import Profiles

if TYPE_CHECKING:
    from jinja2 import Environment

PAGE_PATH = "/decisions"
# Styles are inline in the page (no build step, nothing else to fetch); scripts, frames,
# forms and every other resource are refused.
HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Cache-Control": "no-store",
    "Referrer-Policy": "no-referrer",
}


def size_text(size: int) -> str:
    """Bytes in the binary unit a Kubernetes user writes (``50Gi``)."""
    value = float(size)
    for unit in ("", "Ki", "Mi", "Gi", "Ti"):
        if value < 1024 or unit == "Ti":
            return f"{value:.0f}{unit}" if value == int(value) else f"{value:.1f}{unit}"
        value /= 1024
    return str(size)  # unreachable: the loop returns at "Ti"


def age_text(seconds: float) -> str:
    seconds = max(seconds, 0.0)
    if seconds < 120:
        return f"{seconds:.0f}s"
    if seconds < 7200:
        return f"{seconds / 60:.0f}m"
    return f"{seconds / 3600:.0f}h"


def template_environment() -> Environment:
    # jinja2 is loaded with the first page asked for, not at every daemon's start.
    from jinja2 import Environment, PackageLoader, StrictUndefined

    environment = Environment(
        loader=PackageLoader("volsched.daemon.http", "templates"),
        # Every value is escaped, whatever the template's file name.
        autoescape=True,
        undefined=StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    environment.filters["size"] = size_text
    environment.filters["age"] = age_text
    environment.filters["gib"] = lambda size: f"{size / 2**30:.1f} GiB"
    return environment


class DecisionsPage:
    def __init__(self, source: DecisionsSource, clock: Callable[[], float] = time.time) -> None:
        self.source = source
        self.clock = clock

    @cached_property
    def templates(self) -> Environment:
        return template_environment()

    def _render(self, template: str, status: int = 200, **context: Any) -> web.Response:
        body = self.templates.get_template(template).render(
            page_path=PAGE_PATH, now=self.clock(), **context
        )
        return web.Response(
            text=body, status=status, content_type="text/html", charset="utf-8", headers=HEADERS
        )

    async def index(self, request: web.Request) -> web.Response:
        wanted = request.query.get("pod")
        if wanted is not None:
            return self._pod(wanted)
        shadow = self.source.shadow_report
        return self._render(
            "decisions/index.html",
            pending=pending_view(self.source),
            replicas=replica_view(self.source),
            shadow=shadow() if shadow is not None else None,
            limits=self.source.limits,
        )

    def _pod(self, wanted: str) -> web.Response:
        namespace, slash, name = wanted.partition("/")
        if not slash or not namespace or not name or "/" in name:
            return self._render(
                "decisions/not_found.html",
                status=400,
                problem=f"pod={wanted}: give the pod as NAMESPACE/NAME",
            )
        pod = self.source.cluster.pods.get(wanted)
        if pod is None:
            return self._render(
                "decisions/not_found.html",
                status=404,
                problem=f"Pod {wanted} is not in the scheduler's cache: it does not exist, "
                "was deleted, or has not been seen yet.",
            )
        return self._render(
            "decisions/pod.html", view=pod_explanation(self.source, pod), limits=self.source.limits
        )


def decisions_routes(
    cluster: ClusterCache,
    profiles: Profiles,
    attempts: LastAttempts,
    limits: PageLimits | None = None,
    shadow_report: Callable[[], dict[str, Any]] | None = None,
) -> list[web.RouteDef]:
    source = DecisionsSource(cluster, profiles, attempts, limits or PageLimits(), shadow_report)
    page = DecisionsPage(source)
    return [web.get(PAGE_PATH, page.index)]
