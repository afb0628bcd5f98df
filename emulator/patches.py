"""PATCH bodies: JSON merge patch (RFC 7386) and JSON patch (RFC 6902).

Strategic merge patch is applied as a plain merge patch: lists are replaced whole rather
than merged by their patch keys (a documented difference from kube-apiserver).
"""

from __future__ import annotations

import copy
from typing import Any

from volsched.emulator.errors import ApiError, bad_request

MERGE_TYPES = ("application/merge-patch+json", "application/strategic-merge-patch+json")
JSON_PATCH_TYPE = "application/json-patch+json"


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386: objects merge recursively, ``null`` deletes, anything else replaces."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def _pointer(path: str) -> list[str]:
    if path == "":
        return []
    if not path.startswith("/"):
        raise bad_request(
            f"the server rejected our request due to an error in our request: invalid path {path!r}"
        )
    return [p.replace("~1", "/").replace("~0", "~") for p in path[1:].split("/")]


def _parent(document: Any, tokens: list[str], path: str) -> Any:
    current = document
    for token in tokens[:-1]:
        if isinstance(current, dict) and token in current:
            current = current[token]
        elif isinstance(current, list) and token.isdigit() and int(token) < len(current):
            current = current[int(token)]
        else:
            raise _unprocessable(f"doc is missing path: {path!r}")
    return current


def _unprocessable(message: str) -> ApiError:
    return ApiError(422, "Invalid", message)


def _get(document: Any, path: str) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return document
    parent = _parent(document, tokens, path)
    key = tokens[-1]
    if isinstance(parent, dict) and key in parent:
        return parent[key]
    if isinstance(parent, list) and key.isdigit() and int(key) < len(parent):
        return parent[int(key)]
    raise _unprocessable(f"doc is missing path: {path!r}")


def _remove(document: Any, path: str) -> Any:
    tokens = _pointer(path)
    parent = _parent(document, tokens, path)
    key = tokens[-1]
    if isinstance(parent, dict) and key in parent:
        return parent.pop(key)
    if isinstance(parent, list) and key.isdigit() and int(key) < len(parent):
        return parent.pop(int(key))
    raise _unprocessable(f"doc is missing path: {path!r}")


def _add(document: Any, path: str, value: Any) -> Any:
    tokens = _pointer(path)
    if not tokens:
        return value
    parent = _parent(document, tokens, path)
    key = tokens[-1]
    if isinstance(parent, dict):
        parent[key] = value
    elif isinstance(parent, list) and key == "-":
        parent.append(value)
    elif isinstance(parent, list) and key.isdigit() and int(key) <= len(parent):
        parent.insert(int(key), value)
    else:
        raise _unprocessable(f"doc is missing path: {path!r}")
    return document


def json_patch(target: Any, operations: Any) -> Any:
    """RFC 6902: add, remove, replace, move, copy and test, applied in order."""
    if not isinstance(operations, list):
        raise bad_request("json patch must be a list of operations")
    document = copy.deepcopy(target)
    for operation in operations:
        if not isinstance(operation, dict):
            raise bad_request("json patch operation must be an object")
        op, path = operation.get("op"), str(operation.get("path", ""))
        if op == "add":
            document = _add(document, path, copy.deepcopy(operation.get("value")))
        elif op == "remove":
            _remove(document, path)
        elif op == "replace":
            _get(document, path)
            tokens = _pointer(path)
            if not tokens:
                document = copy.deepcopy(operation.get("value"))
            else:
                parent = _parent(document, tokens, path)
                index: Any = int(tokens[-1]) if isinstance(parent, list) else tokens[-1]
                parent[index] = copy.deepcopy(operation.get("value"))
        elif op in ("move", "copy"):
            source = str(operation.get("from", ""))
            value = (
                _remove(document, source) if op == "move" else copy.deepcopy(_get(document, source))
            )
            document = _add(document, path, value)
        elif op == "test":
            if _get(document, path) != operation.get("value"):
                raise _unprocessable(f"testing value {path} failed")
        else:
            raise bad_request(f"Unexpected kind: {op}")
    return document
