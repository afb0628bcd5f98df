"""Lists answered as ``PartialObjectMetadataList`` — each item's ``metadata`` only.

A client that needs only names and resourceVersions (a garbage collector, a cache
checking what it holds against the server) asks with
``Accept: application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1`` and
kube-apiserver answers with the list's metadata and, per item, ``kind:
PartialObjectMetadata``, ``apiVersion: meta.k8s.io/v1`` and the object's whole
``metadata``: a fraction of the bytes of a full list.
"""

from __future__ import annotations

from volsched.emulator.raw import Raw

META_GROUP_VERSION = "meta.k8s.io/v1"


def wants_partial_metadata(accept: str) -> bool:
    """Whether an Accept header asks for a PartialObjectMetadataList (of meta.k8s.io/v1)."""
    for media_range in accept.split(","):
        fields = [part.strip() for part in media_range.split(";")]
        if fields[0] not in ("application/json", "*/*"):
            continue
        parameters = dict(part.partition("=")[::2] for part in fields[1:])
        if (
            parameters.get("as") == "PartialObjectMetadataList"
            and parameters.get("g") == "meta.k8s.io"
            and parameters.get("v") == "v1"
        ):
            return True
    return False


def partial_metadata_list(list_metadata: Raw, items: list[Raw]) -> Raw:
    return {
        "kind": "PartialObjectMetadataList",
        "apiVersion": META_GROUP_VERSION,
        "metadata": list_metadata,
        "items": [
            {
                "kind": "PartialObjectMetadata",
                "apiVersion": META_GROUP_VERSION,
                "metadata": item.get("metadata") or {},
            }
            for item in items
        ],
    }
