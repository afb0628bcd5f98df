"""Decoding what the API server sends: fast, bounded, and without what scheduling never
reads.

Bodies and watch lines are decoded with orjson, several times faster than the standard
library on Kubernetes objects, which is most of what a watch costs. Two differences
from Python's decoder do not matter for what an API server sends: an integer past 64
bits becomes a float (the server's own integers are 64-bit), and a lone UTF-16
surrogate is refused (Go never writes one).

``metadata.managedFields`` is dropped from every object as it is decoded, as
kube-scheduler's informers drop it: it records which writer set which field, it is
often the largest part of a pod, and nothing in volsched reads it. Without it an object
is smaller to parse, keep and store. Writing an object back without it is safe: the
API server keeps an object's managedFields when an update omits them.

An undecodable body (not JSON, a number that overflows, nesting past the decoder's
depth limit) is one ``ApiError`` naming what it came from, which the watches retry.
"""

from __future__ import annotations

from typing import Any

import orjson

from volsched.cache.errors import ApiError

Raw = dict[str, Any]


def decoded(data: bytes | str, what: str) -> Any:
    """A response body or watch line decoded; an ``ApiError`` when it cannot be."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        message = str(exc)
        if "depth limit" in message:
            problem = "the response is nested too deeply to read"
        elif "infinity" in message or "number" in message:
            problem = "the response is not JSON that can be read: a number too long"
        else:
            problem = f"the response is not JSON that can be read: {exc.msg}"
        raise ApiError(0, f"{what}: {problem}") from None


def strip_object(obj: Any) -> Any:
    """``obj`` without ``metadata.managedFields`` (changed in place; also returned)."""
    if isinstance(obj, dict):
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            meta.pop("managedFields", None)
    return obj


def strip_body(body: Any) -> Any:
    """A response body without managedFields: an object's, or each item's of a list."""
    if isinstance(body, dict):
        items = body.get("items")
        if isinstance(items, list):
            for item in items:
                strip_object(item)
        else:
            strip_object(body)
    return body


def encoded(body: Any) -> bytes:
    """A request body as JSON bytes."""
    return orjson.dumps(body)
