"""Longhorn's CustomResourceDefinitions, for an embedded cluster that plays a Longhorn
installation: ``longhorn.io`` Nodes, Volumes, Replicas and Settings, namespaced and served
at ``v1beta2`` as Longhorn's chart installs them.  Their schemas keep unknown fields, so
objects are stored as longhorn-manager writes them; validating them is volsched's job,
not the API server's.
"""

from __future__ import annotations

from volsched.emulator.raw import Raw

GROUP = "longhorn.io"
VERSION = "v1beta2"
NAMESPACE = "longhorn-system"

# kind → (plural, short name, has a status subresource)
_KINDS = {
    "Node": ("nodes", "lhn", True),
    "Volume": ("volumes", "lhv", True),
    "Replica": ("replicas", "lhr", True),
    "Setting": ("settings", "lhs", False),
}


def longhorn_crd(kind: str) -> Raw:
    plural, short, has_status = _KINDS[kind]
    version: Raw = {
        "name": VERSION,
        "served": True,
        "storage": True,
        "schema": {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        },
    }
    if has_status:
        version["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{GROUP}", "labels": {"app.kubernetes.io/name": "longhorn"}},
        "spec": {
            "group": GROUP,
            "scope": "Namespaced",
            "names": {
                "kind": kind,
                "listKind": f"{kind}List",
                "plural": plural,
                "singular": kind.lower(),
                "shortNames": [short],
            },
            "versions": [version],
        },
    }


def longhorn_crds() -> list[Raw]:
    return [longhorn_crd(kind) for kind in _KINDS]
