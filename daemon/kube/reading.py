"""Reading the API server's answers: a status as volsched's errors, a watch line as its
events, a list page as its items (see ``decoding`` for what cannot be decoded)."""

from __future__ import annotations

import json
from typing import Any

from volsched.cache.errors import ApiError, Conflict, Gone, NotFound
from volsched.daemon.kube.decoding import (
    Skipped,
    Undecodable,
    decoded,
    decoded_event,
    decoded_list,
    strip_body,
    strip_object,
)
from volsched.daemon.kube.resources import resource

Raw = dict[str, Any]


def watch_event(line: bytes, kind: str, prune_deep: bool = False) -> list[Raw | Undecodable]:
    """One line of a watch stream: its event, the object without managedFields, and
    before it the notice of an object that could not be decoded (alone when the object
    is lost). An ERROR event (a 410 above all) is raised as the status it carries."""
    event, notice = decoded_event(line, kind, prune_deep)
    if notice is not None and notice.event_type == "ERROR":
        raise ApiError(0, f"watch {kind}: an ERROR event that cannot be read: {notice.problem}")
    if event is None and notice is not None:
        return [notice]
    if not isinstance(event, dict):
        raise ApiError(0, f"watch {kind}: an event that is not a JSON object")
    strip_object(event.get("object"))
    if event.get("type") == "ERROR":
        status = event.get("object")
        status = status if isinstance(status, dict) else {}
        code = status.get("code")
        if isinstance(code, bool) or not isinstance(code, int):
            code = 500
        raise error_of(code, json.dumps(status))
    return [event] if notice is None else [notice, event]


def error_of(status: int, body: bytes | str) -> ApiError:
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else body
    message = text.strip()
    try:
        decoded = json.loads(text)
        if isinstance(decoded, dict) and decoded.get("message"):
            message = str(decoded["message"])
    except ValueError:
        pass
    message = message[:500] or f"HTTP {status}"
    if status == 409:
        return Conflict(status, message)
    if status == 404:
        return NotFound(status, message)
    if status == 410:
        return Gone(status, message)
    return ApiError(status, message)


def whole_items(body: Raw, kind: str) -> list[Raw]:
    """A list's items with kind and apiVersion put back (list items omit them), so
    stored objects are whole."""
    items = body.get("items") or []
    for item in items:
        item.setdefault("kind", kind)
        item.setdefault("apiVersion", resource(kind).api_version)
    return items


def page(data: bytes, what: str, kind: str, skipped: Skipped | None, prune_deep: bool) -> Raw:
    """A list page decoded, without managedFields. With ``skipped``, an item that cannot
    be decoded is told to it and left out, and the rest of the page is read; with
    ``prune_deep`` too, one readable but for parts nested too deep is kept without them."""
    if skipped is not None:
        return strip_body(decoded_list(data, what, kind, prune_deep, skipped))  # type: ignore[no-any-return]
    body = strip_body(decoded(data, what))
    if not isinstance(body, dict):
        raise ApiError(200, f"{what}: unexpected response body")
    return body


def list_version(body: Raw) -> str:
    return str((body.get("metadata") or {}).get("resourceVersion") or "")
