"""Every row the store reads back is decoded here, and checked before anyone uses it.

A store file can be damaged in ways SQLite does not notice (``PRAGMA quick_check`` says
ok): a disk that returned the wrong sector, a hand edit, a restored backup of something
else. SQLite's columns take any type, so each value is checked for the type volsched
wrote, and each body for what volsched could have written:

- **object and assumed rows**: text kind and key, a body that is JSON text of an object
  nested at most ``MAX_ROW_DEPTH`` levels (a body of 5,000 nested arrays made Python's
  decoder raise RecursionError, which nothing expected);
- **journal rows**: an integer id, text pod, node and state, numeric times and an intent
  that is a JSON object;
- **resume points**: text kind and resourceVersion; **meta**: text key and value;
- **alembic_version**: exactly one row naming one revision (two rows made alembic refuse
  to migrate with an error of its own);
- **snapshot parts** (see ``snapshot.py``): after unpickling, each view is an instance of
  its kind's view class under its own key, and every number it holds is finite (a NaN
  in a node's allocatable failed every pod's scoring, and each clean stop wrote it back).

Each problem is a ``BadRow`` whose message names the table, the row and what is wrong.
What the store does about it is its callers' choice (``loading``, ``journal``,
``checking``): a bad object, assumed or resume row means the file is moved aside and
rebuilt; a bad journal row is skipped; a bad snapshot means the rows are read instead.
"""

from __future__ import annotations

import cmath
import dataclasses
import json
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

from volsched.cache.json_limits import JsonLimitError, check_depth
from volsched.cache.objects.meta import ObjectMeta
from volsched.cache.objects.registry import view_class

# Far deeper than any Kubernetes object's schema (a pod with managed fields is about 20
# levels), and shallow enough that no walk over a body (a JSON dump, a deep copy) can
# exhaust Python's recursion limit.
MAX_ROW_DEPTH = 256


class BadRow(ValueError):
    """A stored row cannot be used; the message names the table, the row and why."""


def _shown(value: object, limit: int = 40) -> str:
    text = value if isinstance(value, str) else repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def _text(table: str, row: str, column: str, value: object) -> str:
    if not isinstance(value, str):
        raise BadRow(f"{table} row {row}: {column} is {type(value).__name__}, not text")
    return value


def json_object(where: str, body: object) -> dict[str, Any]:
    """``body`` (JSON text volsched wrote) decoded; it must be an object."""
    if isinstance(body, bytes):
        try:
            body = body.decode("utf-8")
        except UnicodeDecodeError:
            raise BadRow(f"{where}: not UTF-8 text") from None
    if not isinstance(body, str):
        raise BadRow(f"{where}: a {type(body).__name__}, not JSON text")
    try:
        decoded = json.loads(body)
    except RecursionError:
        raise BadRow(f"{where}: nested deeper than {MAX_ROW_DEPTH} levels") from None
    except json.JSONDecodeError as error:
        raise BadRow(f"{where}: cannot be decoded: {error.msg} (at {error.pos})") from None
    except ValueError:  # an integer of more than 4,300 digits
        raise BadRow(f"{where}: cannot be decoded: a number too long to read") from None
    if not isinstance(decoded, dict):
        raise BadRow(f"{where}: not a JSON object")
    # Counting brackets is cheap; the walk runs only for the rare body with many.
    if body.count("[") + body.count("{") > MAX_ROW_DEPTH:
        try:
            check_depth(decoded, where, MAX_ROW_DEPTH)
        except JsonLimitError as error:
            raise BadRow(str(error)) from None
    return decoded


def object_row(table: str, kind: object, key: object, body: object) -> tuple[str, str, Any]:
    """A row of ``objects`` or ``assumed``: (kind, key, decoded body)."""
    row = f"{_shown(kind)} {_shown(key)}"
    kind = _text(table, row, "kind", kind)
    key = _text(table, row, "key", key)
    return kind, key, json_object(f"{table} row {row}", body)


def object_rows(
    table: str, stored: Iterable[Sequence[Any]]
) -> Iterator[tuple[str, str, dict[str, Any]]]:
    """``object_row`` over a whole table, as a warm start reads it: the checks of
    ``object_row`` inlined for the rows that pass them (all of them, in a file that is
    not damaged), and ``object_row`` itself, to say why, for one that does not."""
    loads = json.loads
    for row in stored:
        kind, key, body = row
        if type(kind) is str and type(key) is str and type(body) is str:
            try:
                decoded = loads(body)
            except (RecursionError, ValueError):
                decoded = None
            if type(decoded) is dict and body.count("[") + body.count("{") <= MAX_ROW_DEPTH:
                yield kind, key, decoded
                continue
        yield object_row(table, kind, key, body)


def resume_row(kind: object, version: object) -> tuple[str, str]:
    row = _shown(kind)
    return _text("resume_points", row, "kind", kind), _text(
        "resume_points", row, "resource_version", version
    )


def meta_row(key: object, value: object) -> tuple[str, str]:
    row = _shown(key)
    return _text("meta", row, "key", key), _text("meta", row, "value", value)


JournalRow = tuple[int, str, str, dict[str, Any], str, float, float]


def journal_row(values: Sequence[Any]) -> JournalRow:
    """A row of ``journal`` (id, pod, node, intent, state, created_at, updated_at)."""
    entry_id, pod, node, intent, state, created_at, updated_at = values
    if isinstance(entry_id, bool) or not isinstance(entry_id, int):
        raise BadRow(f"journal row {_shown(entry_id)}: the id is not an integer")
    row = str(entry_id)
    times = []
    for column, value in (("created_at", created_at), ("updated_at", updated_at)):
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise BadRow(f"journal row {row}: {column} is {type(value).__name__}, not a time")
        times.append(float(value))
    return (
        entry_id,
        _text("journal", row, "pod", pod),
        _text("journal", row, "node", node),
        json_object(f"journal row {row}: the intent", intent),
        _text("journal", row, "state", state),
        times[0],
        times[1],
    )


def stamp(versions: Sequence[object]) -> str:
    """The one revision ``alembic_version`` holds."""
    if len(versions) != 1:
        raise BadRow(f"alembic_version holds {len(versions)} rows; a store file has exactly one")
    (version,) = versions
    if not isinstance(version, str) or not version:
        raise BadRow(f"alembic_version holds {_shown(version)}, not a revision")
    return version


# How deep the finiteness check walks a view: past the deepest number a view holds (a
# pod's containers' requests), bounded so that a tampered view cannot make it recurse.
VIEW_DEPTH = 8
_PLAIN = (str, int, bool, type(None), bytes)


def _non_finite(value: object, path: str, depth: int) -> str | None:
    """Where in ``value`` a NaN or an infinity is (a dotted path), or None."""
    if isinstance(value, _PLAIN):
        return None
    if isinstance(value, float | complex):
        return None if cmath.isfinite(value) else path or "(value)"
    if depth == 0:
        return None
    children: Iterable[tuple[str, object]]
    if isinstance(value, dict):
        children = ((f"{path}[{_shown(k, 30)!r}]", v) for k, v in value.items())
    elif isinstance(value, tuple | list | set | frozenset):
        children = ((f"{path}[{index}]", v) for index, v in enumerate(value))
    elif dataclasses.is_dataclass(value):
        children = (
            (f"{path}.{field.name}" if path else field.name, getattr(value, field.name, None))
            for field in dataclasses.fields(value)
        )
    else:
        return None
    for where, child in children:
        found = _non_finite(child, where, depth - 1)
        if found is not None:
            return found
    return None


# A pickled float is ``G`` and its 8 bytes, big-endian: a NaN or an infinity has every
# exponent bit set. Finding none in a part's bytes spares walking its views (2 s for
# 50,000 of them); a match (or a false one, in other bytes) has them walked.
_PICKLED_NON_FINITE = re.compile(rb"G[\x7f\xff][\xf0-\xff]")


def may_hold_non_finite(body: bytes) -> bool:
    """Whether a pickled snapshot part may hold a NaN or an infinity."""
    return _PICKLED_NON_FINITE.search(body) is not None


def snapshot_part(views: object, raw: object, check_numbers: bool = True) -> None:
    """A snapshot part as unpickled: views by kind and key, each an instance of its kind's
    view class named by its own key, every number in it finite (walked only with
    ``check_numbers``), and raw JSON texts by kind and key. The unpickler
    only lets view classes be named, but a tampered part can still put any of them, or a
    plain ``int``, where a Pod should be."""
    if not isinstance(views, dict) or not isinstance(raw, dict):
        raise BadRow("it is not in this version's format")
    for kind, by_key in views.items():
        expected = view_class(kind) if isinstance(kind, str) else None
        if expected is None or not isinstance(by_key, dict):
            raise BadRow(f"it holds views of {_shown(kind)}, not of a kind volsched reads")
        for key, view in by_key.items():
            if type(view) is not expected:
                raise BadRow(
                    f"its {kind} {_shown(key)} is a {type(view).__name__}, "
                    f"not a {expected.__name__}"
                )
            meta = getattr(view, "meta", None)
            if not isinstance(meta, ObjectMeta) or meta.key != key:
                raise BadRow(f"its {kind} {_shown(key)} is stored under another key")
            where = _non_finite(view, "", VIEW_DEPTH) if check_numbers else None
            if where is not None:
                raise BadRow(
                    f"its {kind} {_shown(key)} holds a number that is not finite at {where}"
                )
    for kind, texts in raw.items():
        if not isinstance(texts, dict) or not all(
            isinstance(key, str) and isinstance(text, str) for key, text in texts.items()
        ):
            raise BadRow(f"its raw texts of {_shown(kind)} are not text")
