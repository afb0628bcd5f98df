"""Metadata-only lists read for what a warm start's proof compares: each object's key and
resourceVersion, and the list's resourceVersion.

A ``PartialObjectMetadataList`` from kube-apiserver still carries every object's
``managedFields``, labels and annotations, about three quarters of its bytes. Decoding it
into dicts builds all of them only to drop them (0.4 s for 40,000 persistent volumes);
msgspec decodes into the few typed fields below and skips the rest without building
anything, twenty times faster. A body that is not such a list is an ``ApiError`` naming
the request, as any other unreadable answer; but one item that cannot be decoded at all
(a lone surrogate in a label, nesting past the decoder's limit) is left out and the
others read, as the relist and the watch leave it out of the cache (see ``decoding``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

import msgspec

from volsched.cache.errors import ApiError
from volsched.daemon.kube.salvaging import split_items

PARTIAL_METADATA = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


class _ObjectMeta(msgspec.Struct, rename="camel"):
    name: str = ""
    namespace: str = ""
    resource_version: str = ""


class _Item(msgspec.Struct):
    metadata: _ObjectMeta = msgspec.field(default_factory=_ObjectMeta)


class _ListMeta(msgspec.Struct, rename="camel"):
    resource_version: str = ""
    continue_: str = msgspec.field(default="", name="continue")


class _MetadataList(msgspec.Struct):
    items: list[_Item] | None = None
    metadata: _ListMeta = msgspec.field(default_factory=_ListMeta)


_DECODER = msgspec.json.Decoder(_MetadataList)
_ITEM_DECODER = msgspec.json.Decoder(_Item)


@dataclass(frozen=True, slots=True)
class VersionsPage:
    """One page: each object's resourceVersion by cache key (``namespace/name`` for a
    namespaced kind), the list's resourceVersion, and the token of the next page."""

    versions: dict[str, str]
    resource_version: str
    continue_token: str


def versions_page(data: bytes, namespaced: bool, what: str) -> VersionsPage:
    """``data``, a metadata list's body, read as a ``VersionsPage``; ``ApiError(0)`` when
    it is not one."""
    try:
        body = _DECODER.decode(data)
    except msgspec.ValidationError as exc:
        # A field of the wrong type, with its path.
        raise ApiError(0, f"{what}: not a metadata list that can be read: {exc}") from None
    except (msgspec.DecodeError, RecursionError) as exc:
        # msgspec raises RecursionError past its depth limit, even in a part it skips.
        body = _each_item(data, what, exc)
    items = body.items or ()
    if namespaced:
        versions = {
            f"{i.metadata.namespace or 'default'}/{i.metadata.name}": i.metadata.resource_version
            for i in items
        }
    else:
        versions = {i.metadata.name: i.metadata.resource_version for i in items}
    return VersionsPage(versions, body.metadata.resource_version, body.metadata.continue_)


def _each_item(data: bytes, what: str, refused: Exception) -> _MetadataList:
    """The list read item by item, leaving out each one that cannot be decoded at all;
    an ``ApiError`` when it is not a list of items, or an item has a field of the wrong
    type."""
    split = split_items(data)
    problem = refused
    if split is not None:
        head, texts = split
        items: list[_Item] = []
        try:
            body = _DECODER.decode(head)
            for text in texts:
                try:
                    items.append(_ITEM_DECODER.decode(text))
                except msgspec.ValidationError:
                    raise
                except (msgspec.DecodeError, RecursionError):
                    continue  # this item only: the relist and the watch skip it too
            body.items = items
            return body
        except (msgspec.DecodeError, RecursionError) as exc:
            problem = exc
    raise ApiError(0, f"{what}: not a metadata list that can be read: {problem}")


class BodyReader(Protocol):
    """Reads a GET's raw body (``KubeClient.read``)."""

    async def read(self, path: str, *, query: list[tuple[str, str]], accept: str) -> bytes: ...


async def version_pages(
    client: BodyReader, path: str, namespaced: bool, page_size: int
) -> AsyncIterator[VersionsPage]:
    """The whole metadata list at ``path`` in pages of ``page_size``."""
    token = ""
    while True:
        query = [("limit", str(page_size))]
        if token:
            query.append(("continue", token))
        page = versions_page(
            await client.read(path, query=query, accept=PARTIAL_METADATA), namespaced, path
        )
        yield page
        token = page.continue_token
        if not token:
            return
