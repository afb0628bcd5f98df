"""Delegated authentication and authorisation: a ServiceAccount's token authenticates as
that account, and a SubjectAccessReview on a non-resource URL is allowed as RBAC's
ClusterRoles and ClusterRoleBindings say."""

from __future__ import annotations

from typing import Any

import pytest

from tests.emulator.support import Api
from volsched.emulator import ApiError, ApiServer

Raw = dict[str, Any]
RBAC = "rbac.authorization.k8s.io/v1"
TOKEN_REVIEWS = "/apis/authentication.k8s.io/v1/tokenreviews"
ACCESS_REVIEWS = "/apis/authorization.k8s.io/v1/subjectaccessreviews"


def metrics_reader(*subjects: Raw) -> list[Raw]:
    return [
        {
            "apiVersion": RBAC,
            "kind": "ClusterRole",
            "metadata": {"name": "system:metrics-reader"},
            "rules": [{"nonResourceURLs": ["/metrics", "/debug/*"], "verbs": ["get"]}],
        },
        {
            "apiVersion": RBAC,
            "kind": "ClusterRoleBinding",
            "metadata": {"name": "metrics-reader"},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "ClusterRole",
                "name": "system:metrics-reader",
            },
            "subjects": list(subjects),
        },
    ]


def account(name: str, namespace: str = "monitoring") -> Raw:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": name, "namespace": namespace},
    }


async def user_of(api: Api, token: str) -> Raw:
    status, review = await api.post(TOKEN_REVIEWS, {"spec": {"token": token}})
    assert status == 201
    return dict(review["status"])


async def allowed(api: Api, user: Raw, path: str, verb: str = "get") -> bool:
    body = {
        "spec": {
            "user": user["username"],
            "groups": user["groups"],
            "nonResourceAttributes": {"path": path, "verb": verb},
        }
    }
    status, review = await api.post(ACCESS_REVIEWS, body)
    assert status == 201
    return bool(review["status"]["allowed"])


async def test_a_service_account_token_authenticates_as_the_account(
    api: Api, server: ApiServer
) -> None:
    (stored,) = server.load([account("prometheus")])
    token = server.service_account_token("monitoring", "prometheus")
    status = await user_of(api, token)
    assert status["authenticated"] is True
    assert status["user"] == {
        "username": "system:serviceaccount:monitoring:prometheus",
        "uid": stored["metadata"]["uid"],
        "groups": [
            "system:serviceaccounts",
            "system:serviceaccounts:monitoring",
            "system:authenticated",
        ],
    }
    with pytest.raises(ApiError, match='serviceaccounts "nobody" not found'):
        server.service_account_token("monitoring", "nobody")


@pytest.mark.parametrize(
    ("subject", "granted"),
    [
        ({"kind": "ServiceAccount", "name": "prometheus", "namespace": "monitoring"}, True),
        ({"kind": "ServiceAccount", "name": "prometheus", "namespace": "elsewhere"}, False),
        ({"kind": "Group", "name": "system:serviceaccounts:monitoring"}, True),
        ({"kind": "User", "name": "system:serviceaccount:monitoring:prometheus"}, True),
        ({"kind": "User", "name": "someone-else"}, False),
    ],
)
async def test_cluster_role_bindings_grant_non_resource_urls(
    api: Api, server: ApiServer, subject: Raw, granted: bool
) -> None:
    server.load([account("prometheus"), *metrics_reader(subject)])
    user = (await user_of(api, server.service_account_token("monitoring", "prometheus")))["user"]
    assert await allowed(api, user, "/metrics") is granted
    assert await allowed(api, user, "/debug/pprof") is granted
    # Only what the rule names: another path, another verb.
    assert await allowed(api, user, "/metricsz") is False
    assert await allowed(api, user, "/metrics", "post") is False
