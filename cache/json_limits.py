"""Bounded JSON decoding: hostile documents become one clear error, not a traceback.

Python's decoder recurses once per nesting level (a few thousand ``[`` raise
RecursionError) and refuses integers of more than 4300 digits with a ValueError whose
text is a paragraph; both are checked before or while decoding so the caller reports
one line naming the problem.
"""

from __future__ import annotations

import json
import re
from typing import Any

MAX_DEPTH = 64
MAX_NUMBER_CHARS = 64

_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NUMBER = re.compile(rb"-?\d[\d.eE+-]{%d,}" % MAX_NUMBER_CHARS)


class JsonLimitError(ValueError):
    """The document is valid JSON in form but beyond what volsched accepts."""


def nesting_depth(raw: bytes) -> int:
    """The deepest ``[``/``{`` nesting outside strings."""
    if raw.count(b"[") + raw.count(b"{") <= MAX_DEPTH:
        return raw.count(b"[") + raw.count(b"{")
    stripped = _STRING.sub(b'""', raw)
    depth = deepest = 0
    for byte in stripped:
        if byte in (0x5B, 0x7B):
            depth += 1
            deepest = max(deepest, depth)
        elif byte in (0x5D, 0x7D):
            depth -= 1
    return deepest


def loads_bounded(raw: bytes | str, max_depth: int = MAX_DEPTH) -> Any:
    """``json.loads`` with a nesting limit and a number-length limit."""
    if isinstance(raw, str):
        text, data = raw, raw.encode("utf-8", "surrogatepass")
    else:
        # JSON is UTF-8 (RFC 8259); the decoder's guess at UTF-16/32 fails with a
        # UnicodeDecodeError on hostile bytes.
        try:
            text, data = raw.decode("utf-8"), raw
        except UnicodeDecodeError as exc:
            raise JsonLimitError(f"not UTF-8 text (byte {exc.start})") from None
    if nesting_depth(data) > max_depth:
        raise JsonLimitError(f"nested deeper than {max_depth} levels")
    if _NUMBER.search(_STRING.sub(b'""', data)):
        raise JsonLimitError(f"a number longer than {MAX_NUMBER_CHARS} characters")
    try:
        return json.loads(text)
    except RecursionError:
        raise JsonLimitError(f"nested deeper than {max_depth} levels") from None


def check_depth(value: Any, where: str, max_depth: int = MAX_DEPTH) -> None:
    """Raise when decoded data (from YAML, say) nests deeper than ``max_depth``."""
    stack: list[tuple[Any, int]] = [(value, 0)]
    while stack:
        item, depth = stack.pop()
        if depth > max_depth:
            raise JsonLimitError(f"{where}: nested deeper than {max_depth} levels")
        if isinstance(item, dict):
            stack.extend((v, depth + 1) for v in item.values())
        elif isinstance(item, list):
            stack.extend((v, depth + 1) for v in item)
