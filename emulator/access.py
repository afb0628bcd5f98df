"""TokenReview and SubjectAccessReview, answered from two small tables.

Components that delegate authentication and authorisation (kube-scheduler, and volsched)
POST these reviews; the emulator answers them as kube-apiserver does: a TokenReview's
``status`` holds ``authenticated`` and ``user`` (``username``, ``uid``, ``groups``) or
an ``error``; a SubjectAccessReview's ``status`` holds ``allowed`` and a ``reason`` (and
``denied`` when a rule said no).  Only non-resource attributes are matched; anything
else is not allowed.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from volsched.emulator.errors import ApiError, bad_request

AUTHENTICATION = "authentication.k8s.io/v1"
AUTHORIZATION = "authorization.k8s.io/v1"


@dataclass(frozen=True, slots=True)
class User:
    name: str
    groups: tuple[str, ...] = ()
    uid: str = ""


@dataclass(slots=True)
class AccessTable:
    """Known tokens and allowed (user or group, non-resource path, verb) rules.

    A rule's path may end in ``*`` (as RBAC's nonResourceURLs do); its verb may be ``*``.
    """

    tokens: dict[str, User] = field(default_factory=dict)
    rules: set[tuple[str, str, str]] = field(default_factory=set)
    reviews: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def allow(self, subject: str, path: str, verb: str) -> None:
        self.rules.add((subject, path, verb))

    def allowed(self, user: str, groups: list[str], path: str, verb: str) -> bool:
        subjects = {user, *groups}
        for subject, rule_path, rule_verb in self.rules:
            if subject not in subjects or rule_verb not in ("*", verb):
                continue
            if rule_path == path or (rule_path.endswith("*") and path.startswith(rule_path[:-1])):
                return True
        return False


async def _body(request: web.Request, kind: str) -> dict[str, Any]:
    try:
        body = await request.json()
    except ValueError:
        raise bad_request(f"the body of a {kind} must be JSON") from None
    if not isinstance(body, dict) or not isinstance(body.get("spec"), dict):
        raise bad_request(f"{kind}.spec is required")
    return body


def access_routes(table: AccessTable) -> list[web.RouteDef]:
    async def token_review(request: web.Request) -> web.Response:
        body = await _body(request, "TokenReview")
        token = body["spec"].get("token")
        if not isinstance(token, str) or not token:
            raise ApiError(422, "Invalid", "TokenReview.authentication.k8s.io is invalid")
        table.reviews.append(("TokenReview", body))
        user = table.tokens.get(token)
        status: dict[str, Any]
        if user is None:
            status = {"user": {}, "error": "[invalid bearer token]"}
        else:
            status = {
                "authenticated": True,
                "user": {
                    "username": user.name,
                    "uid": user.uid,
                    "groups": [*user.groups, "system:authenticated"],
                },
            }
        answer = {
            "kind": "TokenReview",
            "apiVersion": AUTHENTICATION,
            "metadata": {"creationTimestamp": None},
            "spec": body["spec"],
            "status": status,
        }
        return web.json_response(answer, status=201)

    async def access_review(request: web.Request) -> web.Response:
        body = await _body(request, "SubjectAccessReview")
        spec = body["spec"]
        table.reviews.append(("SubjectAccessReview", body))
        attributes = spec.get("nonResourceAttributes")
        user = str(spec.get("user") or "")
        groups = [str(g) for g in spec.get("groups") or []]
        allowed = False
        if isinstance(attributes, dict):
            allowed = table.allowed(
                user, groups, str(attributes.get("path") or ""), str(attributes.get("verb") or "")
            )
        status: dict[str, Any] = {"allowed": allowed}
        if allowed:
            status["reason"] = "allowed by the emulator's access table"
        answer = {
            "kind": "SubjectAccessReview",
            "apiVersion": AUTHORIZATION,
            "metadata": {"creationTimestamp": None},
            "spec": spec,
            "status": status,
        }
        return web.json_response(answer, status=201)

    return [
        web.post(f"/apis/{AUTHENTICATION}/tokenreviews", token_review),
        web.post(f"/apis/{AUTHORIZATION}/subjectaccessreviews", access_review),
    ]
