"""Who is calling: kube-scheduler's delegated authentication and authorisation.

A bearer token is checked with a TokenReview, a client certificate by the TLS layer
against the configured CA (its CN is the user, its O entries the groups); the caller is
then authorised with a SubjectAccessReview on the request's non-resource path and verb,
as kube-scheduler and kube-controller-manager authorise ``/metrics``.  Answers are
cached for a few seconds so a busy kube-scheduler costs the API server one review per
token per interval, not one per pod.  ``/healthz``, ``/livez`` and ``/readyz`` stay
anonymous so probes need no credentials.
"""

from __future__ import annotations

import hashlib
import logging
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from volsched.cache.errors import ApiError
from volsched.daemon.kube.client import KubeClient

log = logging.getLogger("volsched.auth")

ANONYMOUS_PATHS = frozenset({"/healthz", "/livez", "/readyz"})

Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


@dataclass(frozen=True, slots=True)
class Caller:
    user: str
    uid: str
    groups: tuple[str, ...]
    extra: tuple[tuple[str, tuple[str, ...]], ...] = ()


class Reviewer:
    """TokenReview and SubjectAccessReview through the API boundary, cached briefly."""

    def __init__(
        self,
        client: KubeClient,
        ttl_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.client = client
        self.ttl = ttl_seconds
        self.clock = clock
        self._tokens: dict[str, tuple[float, Caller | None]] = {}
        self._decisions: dict[tuple[Caller, str, str], tuple[float, bool]] = {}

    def _fresh(self, entry: tuple[float, Any] | None) -> tuple[bool, Any]:
        if entry is None or self.clock() - entry[0] > self.ttl:
            return False, None
        return True, entry[1]

    async def authenticate(self, token: str) -> Caller | None:
        key = hashlib.sha256(token.encode()).hexdigest()
        hit, cached = self._fresh(self._tokens.get(key))
        if hit:
            return cached if isinstance(cached, Caller) else None
        review = await self.client.create(
            "TokenReview",
            {
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenReview",
                "spec": {"token": token},
            },
        )
        status = review.get("status") or {}
        caller: Caller | None = None
        if status.get("authenticated") is True:
            user = status.get("user") or {}
            extra = user.get("extra") or {}
            caller = Caller(
                user=str(user.get("username") or ""),
                uid=str(user.get("uid") or ""),
                groups=tuple(str(g) for g in user.get("groups") or ()),
                extra=tuple(sorted((str(k), tuple(map(str, v))) for k, v in extra.items())),
            )
        self._prune(self._tokens)
        self._tokens[key] = (self.clock(), caller)
        return caller

    async def authorise(self, caller: Caller, path: str, verb: str) -> bool:
        key = (caller, path, verb)
        hit, cached = self._fresh(self._decisions.get(key))
        if hit:
            return bool(cached)
        spec: dict[str, Any] = {
            "user": caller.user,
            "groups": list(caller.groups),
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
        if caller.uid:
            spec["uid"] = caller.uid
        if caller.extra:
            spec["extra"] = {k: list(v) for k, v in caller.extra}
        review = await self.client.create(
            "SubjectAccessReview",
            {
                "apiVersion": "authorization.k8s.io/v1",
                "kind": "SubjectAccessReview",
                "spec": spec,
            },
        )
        allowed = (review.get("status") or {}).get("allowed") is True
        self._prune(self._decisions)
        self._decisions[key] = (self.clock(), allowed)
        return allowed

    def _prune(self, table: dict[Any, tuple[float, Any]]) -> None:
        """Keep the caches bounded: a stream of random tokens must not grow memory."""
        if len(table) < 4096:
            return
        now = self.clock()
        for key in [k for k, (at, _) in table.items() if now - at > self.ttl]:
            del table[key]
        if len(table) >= 4096:
            table.clear()


def _certificate_caller(request: web.Request) -> Caller | None:
    """The user a verified client certificate names (the TLS layer checked the CA)."""
    transport = request.transport
    if transport is None:
        return None
    peer = transport.get_extra_info("peercert")
    if not peer:
        return None
    user = ""
    groups: list[str] = []
    for rdn in peer.get("subject", ()):
        for key, value in rdn:
            if key == "commonName":
                user = value
            elif key == "organizationName":
                groups.append(value)
    if not user:
        return None
    return Caller(user=user, uid="", groups=(*groups, "system:authenticated"))


def _deny(status: int, message: str) -> web.Response:
    return web.json_response({"Error": message}, status=status)


def auth_middleware(reviewer: Reviewer) -> Callable[[web.Request, Handler], Awaitable[Any]]:
    @web.middleware
    async def middleware(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.path in ANONYMOUS_PATHS:
            return await handler(request)
        header = request.headers.get("Authorization", "")
        try:
            caller: Caller | None
            if header:
                scheme, _, token = header.partition(" ")
                if scheme.lower() != "bearer" or not token.strip():
                    return _deny(401, "Unauthorized: the Authorization header must be Bearer")
                caller = await reviewer.authenticate(token.strip())
            else:
                caller = _certificate_caller(request)
            if caller is None:
                return _deny(401, "Unauthorized")
            verb = request.method.lower()
            if not await reviewer.authorise(caller, request.path, verb):
                return _deny(
                    403,
                    f'forbidden: User "{caller.user}" cannot {verb} path "{request.path}"',
                )
        except ApiError as exc:
            log.warning("cannot review %s %s: %s", request.method, request.path, exc)
            return _deny(503, "authentication or authorisation is unavailable; retry")
        return await handler(request)

    return middleware
