"""Reading a live cluster's lists within bounds, for ``snapshot``, ``simulate`` and
``explain``.

The API server on the other end is trusted for nothing: one that hands out a new
``continue`` token forever was once followed for 77,516 requests in two minutes, one
that repeated a token looped, a 1.2 GB page took 6.7 GB, a body sent a byte a second
never ended, and ``items: "x"`` ended in a traceback. Here:

- each request, from connecting to the last byte, is bounded by ``--request-timeout``;
- a page is read up to ``MAX_PAGE_BYTES`` and no further, and all pages together up to
  ``MAX_LIST_BYTES``; a kind is read in at most ``MAX_PAGES`` pages;
- a ``continue`` token seen before ends the listing (the server is going round in
  circles), as does one longer than ``MAX_TOKEN_CHARS``;
- a page's shape is checked before anything reads it: an object, ``items`` a list of
  objects, each ``metadata`` a mapping, ``continue`` a string.

Each problem is an ``ApiError`` with one line, which ``live`` shows with the server and
the kind it was listing.
"""

from __future__ import annotations

import asyncio
import hashlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from volsched.cache.errors import ApiError, Gone, NotFound
from volsched.cache.file_limits import shown_size
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.kube.decoding import decoded, strip_body
from volsched.daemon.kube.sending import send

Raw = dict[str, Any]
MIB = 1024 * 1024
# A page of 500 pods is a few MB; one past this is a server ignoring ``limit``.
MAX_PAGE_BYTES = 64 * MIB
# 150,000 pods (upstream's largest tested cluster) are about 1.2 GB of JSON.
MAX_LIST_BYTES = 4 * 1024 * MIB
# 500,000 objects of one kind at 500 a page: over three times upstream's largest
# tested cluster (150,000 pods).
MAX_PAGES = 1_000
# Real tokens are a few hundred characters of base64.
MAX_TOKEN_CHARS = 16 * 1024
DEFAULT_REQUEST_TIMEOUT_SECONDS = 30.0
CHUNK_BYTES = 256 * 1024


@dataclass
class ListLimits:
    """The bounds of one reading of a cluster, and what it has used of them."""

    request_timeout_seconds: float = DEFAULT_REQUEST_TIMEOUT_SECONDS
    max_page_bytes: int = MAX_PAGE_BYTES
    max_list_bytes: int = MAX_LIST_BYTES
    max_pages: int = MAX_PAGES
    read_bytes: int = field(default=0)


def _status_error(status: int, data: bytes) -> ApiError:
    """An error status as volsched's errors, its message cut to a line."""
    message = data[:4096].decode("utf-8", "replace").strip()
    try:
        body = decoded(data, "") if len(data) < 4096 else None
        if isinstance(body, dict) and isinstance(body.get("message"), str):
            message = body["message"]
    except ApiError:
        pass
    message = " ".join(message.split())[:300] or f"HTTP {status}"
    if status == 410:
        return Gone(status, message)
    if status == 404:
        return NotFound(status, message)
    return ApiError(status, message)


async def _body(response: aiohttp.ClientResponse, limits: ListLimits) -> bytes:
    page_limit = min(limits.max_page_bytes, limits.max_list_bytes - limits.read_bytes)
    declared = response.content_length
    if declared is not None and declared > page_limit:
        response.close()
        raise ApiError(0, f"a page of {shown_size(declared)}, more than {_allowed(limits)}")
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(CHUNK_BYTES):
        size += len(chunk)
        if size > page_limit:
            response.close()  # the rest is not read
            raise ApiError(0, f"a page of more than {_allowed(limits)}")
        chunks.append(chunk)
    limits.read_bytes += size
    return b"".join(chunks)


def _allowed(limits: ListLimits) -> str:
    return (
        f"the {shown_size(limits.max_page_bytes)} allowed per page "
        f"({shown_size(limits.max_list_bytes)} in all)"
    )


async def get_json(
    client: KubeClient, path: str, query: list[tuple[str, str]], limits: ListLimits
) -> Any:
    """One GET, decoded, within the request timeout and the size limits."""
    seconds = limits.request_timeout_seconds
    timeout = aiohttp.ClientTimeout(total=seconds)
    try:
        async with asyncio.timeout(seconds):
            response = await send(
                client.connection, "GET", path, query, None, "application/json", timeout
            )
            async with response:
                if not 200 <= response.status <= 299:
                    raise _status_error(response.status, await response.content.read(4096))
                data = await _body(response, limits)
    except TimeoutError:
        raise ApiError(0, f"no whole answer within {seconds:g}s (--request-timeout)") from None
    except aiohttp.ClientError as exc:
        raise ApiError(0, f"the answer broke off: {exc or type(exc).__name__}") from None
    return decoded(data, "the answer") if data else {}


def _checked_page(body: Any) -> tuple[list[Raw], str]:
    """The items and the continue token of a list, once its shape is what the API
    server sends."""
    if not isinstance(body, dict):
        raise ApiError(0, f"the answer is a {_type(body)}, not a list object")
    items = body.get("items")
    if items is None:
        items = []
    if not isinstance(items, list):
        raise ApiError(0, f"items is a {_type(items)}, not a list")
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise ApiError(0, f"items[{index}] is a {_type(item)}, not an object")
        if not isinstance(item.get("metadata") or {}, dict):
            raise ApiError(
                0, f"items[{index}].metadata is a {_type(item['metadata'])}, not a mapping"
            )
    metadata = body.get("metadata") or {}
    if not isinstance(metadata, dict):
        raise ApiError(0, f"metadata is a {_type(metadata)}, not a mapping")
    token = metadata.get("continue") or ""
    if not isinstance(token, str):
        raise ApiError(0, f"metadata.continue is a {_type(token)}, not a string")
    strip_body(body)
    return items, token


def _type(value: Any) -> str:
    return {dict: "mapping", list: "list", str: "string", bool: "boolean"}.get(
        type(value), type(value).__name__
    )


async def list_pages(
    client: KubeClient,
    path: str,
    page_size: int,
    field_selector: str | None,
    limits: ListLimits,
) -> AsyncIterator[list[Raw]]:
    """Each page's items, until the server gives no ``continue`` token."""
    seen: set[bytes] = set()
    token = ""
    for _ in range(limits.max_pages):
        query = [("limit", str(page_size))]
        if field_selector:
            query.append(("fieldSelector", field_selector))
        if token:
            query.append(("continue", token))
        items, token = _checked_page(await get_json(client, path, query, limits))
        yield items
        if not token:
            return
        if len(token) > MAX_TOKEN_CHARS:
            raise ApiError(0, f"a continue token of {len(token):,} characters")
        digest = hashlib.sha256(token.encode("utf-8", "replace")).digest()
        if digest in seen:
            raise ApiError(0, "the server sent a continue token it had sent before (a loop)")
        seen.add(digest)
    raise ApiError(
        0, f"still more pages after {limits.max_pages:,} of {page_size} objects (endless list?)"
    )


async def served(client: KubeClient, api_version: str, limits: ListLimits) -> frozenset[str]:
    """The resources (plurals) of a group version, from its discovery document; none
    when the group is not installed (404)."""
    try:
        body = await get_json(client, f"/apis/{api_version}", [], limits)
    except NotFound:
        return frozenset()
    found = body.get("resources") if isinstance(body, dict) else None
    entries = found if isinstance(found, list) else []
    return frozenset(str(e.get("name")) for e in entries if isinstance(e, dict))
