"""Where each kind lives in the API: its group version, plural and scope — the kinds
volsched reads (from the cache's registry) and the few it only writes or asks about."""

from __future__ import annotations

from dataclasses import dataclass

from volsched.cache.objects.registry import KINDS


@dataclass(frozen=True, slots=True)
class Resource:
    api_version: str
    plural: str
    namespaced: bool

    def path(self, namespace: str | None = None, name: str | None = None, sub: str = "") -> str:
        base = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{namespace}"
        base += f"/{self.plural}"
        if name:
            base += f"/{name}"
        if sub:
            base += f"/{sub}"
        return base


EXTRA_RESOURCES = {
    # Events are written through events.k8s.io/v1, as kube-scheduler writes them.
    "Event": Resource("events.k8s.io/v1", "events", True),
    "Lease": Resource("coordination.k8s.io/v1", "leases", True),
    "ServiceAccount": Resource("v1", "serviceaccounts", True),
    "TokenReview": Resource("authentication.k8s.io/v1", "tokenreviews", False),
    "SubjectAccessReview": Resource("authorization.k8s.io/v1", "subjectaccessreviews", False),
    "CustomResourceDefinition": Resource(
        "apiextensions.k8s.io/v1", "customresourcedefinitions", False
    ),
}


def resource(kind: str) -> Resource:
    if kind in EXTRA_RESOURCES:
        return EXTRA_RESOURCES[kind]
    info = KINDS[kind]
    return Resource(info.api_version, info.plural, info.namespaced)
