"""Where each kind lives in the API: its group version, plural and scope — the kinds
volsched reads (from the cache's registry) and the few it only writes or asks about.

Every path to an object is built here, each name and namespace checked and escaped as
one path segment (``names``) on the way."""

from __future__ import annotations

from dataclasses import dataclass

from volsched.cache.objects.names import path_segment
from volsched.cache.objects.registry import KINDS


@dataclass(frozen=True, slots=True)
class Resource:
    kind: str
    api_version: str
    plural: str
    namespaced: bool

    def path(self, namespace: str | None = None, name: str | None = None, sub: str = "") -> str:
        """The collection (no ``name``) or the object; ``InvalidName`` for a name or
        namespace no object can have."""
        base = "/api/v1" if self.api_version == "v1" else f"/apis/{self.api_version}"
        if self.namespaced and namespace:
            base += f"/namespaces/{path_segment('Namespace', namespace)}"
        base += f"/{self.plural}"
        if name:
            base += f"/{path_segment(self.kind, name)}"
        if sub:
            base += f"/{sub}"
        return base


EXTRA_RESOURCES = {
    # Events are written through events.k8s.io/v1, as kube-scheduler writes them.
    "Event": Resource("Event", "events.k8s.io/v1", "events", True),
    "Lease": Resource("Lease", "coordination.k8s.io/v1", "leases", True),
    "ServiceAccount": Resource("ServiceAccount", "v1", "serviceaccounts", True),
    "TokenReview": Resource("TokenReview", "authentication.k8s.io/v1", "tokenreviews", False),
    "SubjectAccessReview": Resource(
        "SubjectAccessReview", "authorization.k8s.io/v1", "subjectaccessreviews", False
    ),
    "CustomResourceDefinition": Resource(
        "CustomResourceDefinition", "apiextensions.k8s.io/v1", "customresourcedefinitions", False
    ),
}


def resource(kind: str) -> Resource:
    if kind in EXTRA_RESOURCES:
        return EXTRA_RESOURCES[kind]
    info = KINDS[kind]
    return Resource(kind, info.api_version, info.plural, info.namespaced)
