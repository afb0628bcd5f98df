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
depth limit) is one ``ApiError`` naming what it came from. A list page or a watch line
is decoded object by object instead when one object spoils it (see ``salvaging``): the
bad object becomes an ``Undecodable`` naming it and what is wrong, and the rest is read,
so one object the decoder refuses never stops its kind.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import orjson

from volsched.cache.errors import ApiError
from volsched.daemon.kube.salvaging import PRUNE_DEPTH, Salvaged, named_in, salvaged, split_items

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


@dataclass(frozen=True, slots=True)
class Undecodable:
    """An object of a list or a watch that could not be decoded, named as far as it can
    be; ``kept``: it was read without its parts nested past ``PRUNE_DEPTH``."""

    kind: str
    namespace: str
    name: str
    resource_version: str
    problem: str
    event_type: str = ""  # "" for a list item
    kept: bool = False

    def described(self) -> str:
        """``Pod default/web-1 at resourceVersion 12``, with what is known of it."""
        who = f"{self.namespace}/{self.name}" if self.namespace else self.name
        at = f" at resourceVersion {self.resource_version}" if self.resource_version else ""
        return f"{self.kind} {who or '(name unreadable)'}{at}"


Skipped = Callable[[Undecodable], None]


def _named(kind: str, obj: object, found: Mapping[str, str], **rest: Any) -> Undecodable:
    """The notice for an object: named from its decoded metadata, or else from what a
    scan of its text ``found``."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if isinstance(meta, dict):
        found = {key: value for key, value in meta.items() if isinstance(value, str)}
    return Undecodable(
        kind,
        _printable(found.get("namespace", "")),
        _printable(found.get("name", "")),
        _printable(found.get("resourceVersion", "")),
        **rest,
    )


def _printable(text: str, limit: int = 253) -> str:
    """A name fit for a log line: no lone surrogate (a log handler cannot encode it),
    no longer than a Kubernetes name may be."""
    text = text.encode("utf-8", "replace").decode("utf-8")
    return text if len(text) <= limit else text[:limit] + "…"


def _undecodable_object(
    kind: str, data: bytes, salvage: Salvaged, obj: object, prune_deep: bool, event_type: str = ""
) -> tuple[bool, Undecodable]:
    """Whether the salvaged object may be used, and the notice naming it."""
    found = named_in(data) if salvage.value is None else {}
    if not salvage.problem and prune_deep:
        problem = f"{salvage.pruned} part(s) nested deeper than {PRUNE_DEPTH} levels left out"
        return True, _named(kind, obj, found, problem=problem, event_type=event_type, kept=True)
    problem = salvage.problem or f"nested deeper than {PRUNE_DEPTH} levels"
    return False, _named(kind, obj, found, problem=problem, event_type=event_type)


def decoded_event(line: bytes, kind: str, prune_deep: bool) -> tuple[Any, Undecodable | None]:
    """A watch line decoded, and the notice of an object that could not be (the event
    is then None unless the object was ``kept``). A line cut short (no newline: the
    stream broke) is an ``ApiError``, as is a line that is not JSON at all and names no
    event type."""
    try:
        return orjson.loads(line), None
    except orjson.JSONDecodeError:
        if not line.endswith(b"\n"):
            decoded(line, f"watch {kind}")
    salvage = salvaged(line)
    event = salvage.value
    if isinstance(event, dict):
        event_type = str(event.get("type") or "")
        usable, notice = _undecodable_object(
            kind, line, salvage, event.get("object"), prune_deep, event_type
        )
        return (event if usable else None), notice
    found = named_in(line)
    if "type" not in found:
        decoded(line, f"watch {kind}")
    _, notice = _undecodable_object(kind, line, salvage, None, False, found["type"])
    return None, notice


def decoded_list(data: bytes, what: str, kind: str, prune_deep: bool, skipped: Skipped) -> Raw:
    """A list body decoded; when one item spoils it, the others, each bad one told to
    ``skipped`` (and a ``kept`` one also returned)."""
    try:
        body = orjson.loads(data)
    except orjson.JSONDecodeError:
        body = _decoded_items(data, what, kind, prune_deep, skipped)
    if not isinstance(body, dict):
        raise ApiError(0, f"{what}: unexpected response body")
    items = body.get("items")
    if isinstance(items, list) and not all(isinstance(item, dict) for item in items):
        for item in items:
            if not isinstance(item, dict):
                skipped(Undecodable(kind, "", "", "", f"an item that is {shown_type(item)}"))
        body["items"] = [item for item in items if isinstance(item, dict)]
    return body


def shown_type(value: object) -> str:
    return "null" if value is None else f"a {type(value).__name__}, not an object"


def _decoded_items(data: bytes, what: str, kind: str, prune_deep: bool, skipped: Skipped) -> Any:
    split = split_items(data)
    if split is None:
        return decoded(data, what)  # raises: orjson refused it
    head, texts = split
    body = decoded(head, what)
    if not isinstance(body, dict):
        return body
    items: list[Any] = []
    for text in texts:
        try:
            items.append(orjson.loads(text))
            continue
        except orjson.JSONDecodeError:
            salvage = salvaged(text)
        usable, notice = _undecodable_object(kind, text, salvage, salvage.value, prune_deep)
        skipped(notice)
        if usable:
            items.append(salvage.value)
    body["items"] = items
    return body
