"""TokenReview and SubjectAccessReview, answered from two small tables and from RBAC.

Components that delegate authentication and authorisation (kube-scheduler, and volsched)
POST these reviews; the emulator answers them as kube-apiserver does: a TokenReview's
``status`` holds ``authenticated`` and ``user`` (``username``, ``uid``, ``groups``) or
an ``error``; a SubjectAccessReview's ``status`` holds ``allowed`` and a ``reason`` (and
``denied`` when a rule said no).  Only non-resource attributes are matched; anything
else is not allowed.  A request is allowed by the access table's rules, or as RBAC's
authorizer allows it: a ClusterRoleBinding to a ClusterRole whose ``nonResourceURLs``
and ``verbs`` cover it (only ClusterRoles can grant non-resource URLs).

Tokens are the table's, plus those ``ApiServer.service_account_token`` hands out: what
the kubelet mounts into a pod that runs as a ServiceAccount.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

from volsched.emulator.errors import ApiError, bad_request
from volsched.emulator.raw import Raw, mapping, name_of

AUTHENTICATION = "authentication.k8s.io/v1"
AUTHORIZATION = "authorization.k8s.io/v1"
RBAC = "rbac.authorization.k8s.io"

Lookup = Callable[[str, str], list[Raw]]  # (group, plural) -> stored objects


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


def service_account_user(namespace: str, name: str, uid: str = "") -> User:
    """Who a ServiceAccount's token authenticates as (upstream's serviceaccount package)."""
    return User(
        f"system:serviceaccount:{namespace}:{name}",
        ("system:serviceaccounts", f"system:serviceaccounts:{namespace}"),
        uid,
    )


def _url_matches(rule_path: str, path: str) -> bool:
    """RBAC's ``NonResourceURLMatches``: exact, ``*``, or a prefix ending in ``*``."""
    if rule_path in ("*", path):
        return True
    return rule_path.endswith("*") and path.startswith(rule_path.rstrip("*"))


def _binds(subject: Any, user: str, groups: Iterable[str]) -> bool:
    if not isinstance(subject, dict):
        return False
    kind, name = subject.get("kind"), str(subject.get("name") or "")
    if kind == "User":
        return name == user
    if kind == "Group":
        return name in groups
    if kind == "ServiceAccount":
        namespace = str(subject.get("namespace") or "")
        return service_account_user(namespace, name).name == user
    return False


def rbac_allows(lookup: Lookup, user: str, groups: list[str], path: str, verb: str) -> bool:
    """Whether a ClusterRoleBinding of the user (or one of its groups) grants ``verb`` on
    the non-resource ``path``."""
    roles = {name_of(role): role for role in lookup(RBAC, "clusterroles")}
    for binding in lookup(RBAC, "clusterrolebindings"):
        role_ref = mapping(binding, "roleRef")
        if role_ref.get("kind") != "ClusterRole" or not any(
            _binds(s, user, groups) for s in binding.get("subjects") or []
        ):
            continue
        role = roles.get(str(role_ref.get("name") or ""))
        for rule in (role or {}).get("rules") or []:
            if not isinstance(rule, dict):
                continue
            verbs = rule.get("verbs") or []
            if "*" not in verbs and verb not in verbs:
                continue
            if any(_url_matches(str(url), path) for url in rule.get("nonResourceURLs") or []):
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


def access_routes(table: AccessTable, lookup: Lookup) -> list[web.RouteDef]:
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
        reason = ""
        if isinstance(attributes, dict):
            path, verb = str(attributes.get("path") or ""), str(attributes.get("verb") or "")
            if table.allowed(user, groups, path, verb):
                reason = "allowed by the emulator's access table"
            elif rbac_allows(lookup, user, groups, path, verb):
                reason = "RBAC: allowed by a ClusterRoleBinding"
        status: dict[str, Any] = {"allowed": bool(reason)}
        if reason:
            status["reason"] = reason
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
