"""Reading what the fast decoder refuses, one object at a time.

orjson refuses a whole document for one bad value: a number past a double, a lone
UTF-16 surrogate, nesting past 1,024 levels. kube-apiserver serves such objects — a
custom resource that preserves unknown fields accepts nesting far deeper than that — and
a list page or a watch line refused whole would stop a kind for one object. So, only
when orjson refused something:

- a list body is cut into its items (``split_items``), each decoded on its own, so only
  the bad item is lost;
- parts nested deeper than ``PRUNE_DEPTH`` are cut out (``pruned``): nothing volsched
  reads lies that deep (a pod with managed fields is about 20 levels), and a custom
  resource without them is still usable;
- what is left is read by Python's decoder with hooks on every number, so that the
  problem can be said exactly and the object named (``salvaged``) even when it cannot
  be used.

The scans are linear, over one regular expression without nested repetition; they run
in Python, at a few MB a second, which is fine for the rare document that needs them.
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from typing import Any

import orjson

# Parts nested deeper than this are cut out of a document the fast decoder refused: far
# below orjson's limits (1,024 to decode, 255 to encode again for the store) and the
# store's own (256), far above any field volsched reads.
PRUNE_DEPTH = 100
# As long as a number written by an API server can be (a 64-bit integer, a double).
MAX_NUMBER_CHARS = 64

# A string (escapes included), a bracket, a comma or a colon: the tokens that decide
# where a JSON value begins and ends. Possessive, so no backtracking on long strings.
_TOKEN = re.compile(rb'"[^"\\]*+(?:\\.[^"\\]*+)*+"|[\[\]{},:]', re.DOTALL)
_OPEN = frozenset({b"[", b"{"})
_CLOSE = frozenset({b"]", b"}"})
_META_FIELD = re.compile(rb'"(name|namespace|resourceVersion)"\s*:\s*"([^"\\]{0,253})"')
_EVENT_TYPE = re.compile(rb'"type"\s*:\s*"(ADDED|MODIFIED|DELETED|BOOKMARK|ERROR)"')


@dataclass(frozen=True, slots=True)
class Salvaged:
    """What a refused document still gave: its value (None when it is not JSON at all),
    what is wrong with it ("" when nothing is once deep parts are cut), and how many
    deep parts were cut out."""

    value: Any
    problem: str
    pruned: int


def pruned(data: bytes, max_depth: int = PRUNE_DEPTH) -> tuple[bytes, int]:
    """``data`` with every array or object that opens deeper than ``max_depth`` replaced
    by ``null``, and how many were."""
    depth = 0
    cut_from = -1
    kept: list[bytes] = []
    last = 0
    count = 0
    for match in _TOKEN.finditer(data):
        token = match.group()
        if token in _OPEN:
            depth += 1
            if depth == max_depth + 1 and cut_from < 0:
                cut_from = match.start()
        elif token in _CLOSE:
            if depth == max_depth + 1 and cut_from >= 0:
                kept += (data[last:cut_from], b"null")
                last = match.end()
                cut_from = -1
                count += 1
            depth -= 1
    if not count:
        return data, 0
    kept.append(data[last:])
    return b"".join(kept), count


def split_items(data: bytes) -> tuple[bytes, list[bytes]] | None:
    """A list body cut into its ``items`` (each one's text) and the rest of the body with
    an empty ``items``; None when no top-level ``items`` array is found."""
    depth = 0
    previous: tuple[bytes, bytes] = (b"", b"")
    opened = closed = element = -1
    items: list[bytes] = []
    for match in _TOKEN.finditer(data):
        token = match.group()
        if token in _OPEN:
            if depth == 1 and opened < 0 and token == b"[" and previous == (b'"items"', b":"):
                opened, element = match.start(), match.end()
            elif depth == 1:
                previous = (previous[1], token)
            depth += 1
        elif token in _CLOSE:
            depth -= 1
            if depth == 1 and opened >= 0 and closed < 0:
                closed = match.end()
                if data[element : match.start()].strip():
                    items.append(data[element : match.start()].strip())
        elif token == b"," and depth == 2 and opened >= 0 and closed < 0:
            items.append(data[element : match.start()].strip())
            element = match.end()
        elif depth == 1:
            previous = (previous[1], token)
    if opened < 0 or closed < 0:
        return None
    return data[:opened] + b"[]" + data[closed:], items


def salvaged(data: bytes) -> Salvaged:
    """``data``, which orjson refused, read as far as it can be."""
    text, count = pruned(data)
    if count:
        try:
            return Salvaged(orjson.loads(text), "", count)
        except orjson.JSONDecodeError:
            pass
    problems: list[str] = []

    def read_int(digits: str) -> int:
        if len(digits) > MAX_NUMBER_CHARS:
            problems.append(f"a number of {len(digits):,} digits")
            return 0
        return int(digits)

    def read_float(written: str) -> float:
        number = float(written) if len(written) <= MAX_NUMBER_CHARS else math.inf
        if not math.isfinite(number):
            shown = written if len(written) <= 20 else written[:20] + "…"
            problems.append(f"a number out of range ({shown})")
            return 0.0
        return number

    def read_constant(written: str) -> None:
        problems.append(f"{written}, which is not a JSON number")

    try:
        value = json.loads(
            text, parse_int=read_int, parse_float=read_float, parse_constant=read_constant
        )
    except UnicodeDecodeError as exc:
        return Salvaged(None, f"not UTF-8 text (byte {exc.start})", count)
    except (ValueError, RecursionError) as exc:
        problem = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
        return Salvaged(None, f"not JSON: {problem}", count)
    if not problems:
        try:
            orjson.dumps(value)
        except orjson.JSONEncodeError:
            problems.append("a lone UTF-16 surrogate in a string")
    return Salvaged(value, problems[0] if problems else "not JSON that can be read", count)


def named_in(data: bytes) -> dict[str, str]:
    """What a scan of text that is not JSON finds of its object's metadata: the first
    ``name``, ``namespace`` and ``resourceVersion`` after ``"metadata"`` (in the order
    the API server writes an object's metadata, its own come first), and a watch
    event's ``type``."""
    found: dict[str, str] = {}
    event = _EVENT_TYPE.search(data)
    if event is not None:
        found["type"] = event.group(1).decode()
    start = data.find(b'"metadata"')
    if start < 0:
        return found
    for match in _META_FIELD.finditer(data, start):
        field = match.group(1).decode()
        found.setdefault(field, match.group(2).decode("utf-8", "replace"))
        if len(found) == 3 + ("type" in found):
            break
    return found
