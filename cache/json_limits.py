"""Bounded JSON decoding: hostile documents become one clear error, not a traceback and
not gigabytes.

Python's decoder recurses once per nesting level (a few thousand ``[`` raise
RecursionError), refuses integers of more than 4300 digits with a ValueError whose text
is a paragraph, and builds one object of 30 to 200 bytes per value: 16 MB of ``[]``
become 400 MB of lists. So before decoding, a linear pre-scan at C speed (byte
replacement, one regular expression without nested repetition, counts) finds the
nesting depth, the longest number and an upper bound of what decoding will allocate;
a document past a limit is refused with one line naming the limit, and nothing is
decoded. The pre-scan holds at most three copies of the document at a time.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

MAX_DEPTH = 64
MAX_NUMBER_CHARS = 64
MIB = 1024 * 1024
# What decoding a document may cost, counting the document itself and its text.
MAX_DECODED_BYTES = 64 * MIB

# Upper bounds of what json.loads allocates, measured on 64-bit CPython 3.11: a value
# or key (its object, its slot in the container, the memo of a key), and what a dict or
# a list adds beyond its values. String contents are counted by their length.
VALUE_BYTES = 80
OBJECT_BYTES = 120
ARRAY_BYTES = 72
# Headroom for what the measurements above do not see (allocator rounding, the decoder's
# scratch space).
SLACK_BYTES = 1 * MIB

# A string once escapes are gone: possessive, so no backtracking and no state per byte.
_STRING = re.compile(rb'"[^"]*+"')
_NUMBER = re.compile(rb"-?\d[\d.eE+-]{%d,}" % MAX_NUMBER_CHARS)
_NUMBER_TAIL = re.compile(rb"[\w.+-]*")
_BRACKETS = re.compile(rb"[\[{]+|[\]}]+")
_FOUR_BYTE_LEAD = re.compile(rb"[\xf0-\xf4]")
_AS_PARENTHESES = bytes.maketrans(b"[{]}", b"(())")
_NOT_BRACKETS = bytes(set(range(256)) - set(b"[]{}"))
# The pre-scan empties strings a piece at a time: ``re.sub`` keeps one object per match
# until it joins them, about 50 bytes per string of the piece.
PIECE_BYTES = 64 * 1024


class JsonLimitError(ValueError):
    """The document is valid JSON in form but beyond what volsched accepts."""


@dataclass(frozen=True, slots=True)
class Shape:
    """What the pre-scan found: counts outside strings, bytes inside them."""

    size: int
    string_bytes: int
    objects: int
    arrays: int
    values: int  # keys and values
    char_bytes: int  # bytes per character of the decoded text: 1, 2 or 4

    @property
    def decoded_bytes(self) -> int:
        """An upper bound of the memory decoding takes, the document included."""
        text = self.size * self.char_bytes
        strings = self.string_bytes * self.char_bytes
        containers = self.objects * OBJECT_BYTES + self.arrays * ARRAY_BYTES
        return self.size + text + strings + containers + self.values * VALUE_BYTES + SLACK_BYTES


def _unescaped(data: bytes) -> bytes:
    """The document without escape pairs, so every quote left opens or closes a string."""
    if b"\\" not in data:
        return data
    # Escapes pair left to right, so dropping ``\\`` first and then ``\"`` leaves
    # exactly the quotes that open and close strings.
    return data.replace(b"\\\\", b"").replace(b'\\"', b"")


def _bare_pieces(data: bytes) -> Iterator[bytes]:
    """The unescaped document in pieces with every string emptied (``"..."`` → ``""``),
    each cut outside a string and outside a number."""
    start = 0
    while start < len(data):
        end = min(start + PIECE_BYTES, len(data))
        if data.count(b'"', start, end) % 2:
            close = data.find(b'"', end)
            end = len(data) if close < 0 else close + 1
        else:
            tail = _NUMBER_TAIL.match(data, end)
            end = tail.end() if tail is not None else end
        yield _STRING.sub(b'""', data[start:end])
        start = end


def scan(data: bytes) -> Shape:
    """The shape of a UTF-8 document: what decoding it will cost."""
    unescaped = _unescaped(data)
    if data.isascii():
        char_bytes = 1
    elif _FOUR_BYTE_LEAD.search(data):
        char_bytes = 4
    else:
        char_bytes = 2
    objects = arrays = values = bare = 0
    for piece in _bare_pieces(unescaped):
        objects += piece.count(b"{")
        arrays += piece.count(b"[")
        # Every key and every value follows one of ``{ [ , :``, or is the whole document.
        values += piece.count(b"{") + piece.count(b"[") + piece.count(b",") + piece.count(b":")
        values -= piece.count(b"{}") + piece.count(b"[]")
        bare += len(piece)
    values += 1
    return Shape(len(data), len(data) - bare, objects, arrays, values, char_bytes)


def _rise(piece: bytes, limit: int) -> int:
    """An upper bound of how far nesting rises within a piece above where it starts
    (exact for a balanced piece), at C speed: each round drops the innermost pairs,
    so the rounds count the levels; opens left unmatched add theirs."""
    brackets = piece.translate(_AS_PARENTHESES, _NOT_BRACKETS)
    rounds = 0
    while rounds <= limit:
        shorter = brackets.replace(b"()", b"")
        if len(shorter) == len(brackets):
            break
        brackets = shorter
        rounds += 1
    return rounds + brackets.count(b"(")


def _depth_and_number(data: bytes, max_depth: int) -> tuple[int, bool]:
    """The deepest ``[``/``{`` nesting outside strings, counted exactly once past
    ``max_depth``, and whether a number is longer than ``MAX_NUMBER_CHARS``."""
    depth = deepest = 0
    long_number = False
    for piece in _bare_pieces(_unescaped(data)):
        long_number = long_number or _NUMBER.search(piece) is not None
        rise = _rise(piece, max_depth - depth)
        if depth + rise <= max_depth:
            deepest = max(deepest, depth + rise)
            depth += piece.count(b"[") + piece.count(b"{") - piece.count(b"]") - piece.count(b"}")
            continue
        for run in _BRACKETS.finditer(piece):
            width = run.end() - run.start()
            if piece[run.start()] in b"[{":
                depth += width
                deepest = max(deepest, depth)
            else:
                depth -= width
        if deepest > max_depth:
            break
    return deepest, long_number


def loads_bounded(
    raw: bytes | str, max_depth: int = MAX_DEPTH, max_decoded_bytes: int = MAX_DECODED_BYTES
) -> Any:
    """``json.loads`` with limits on nesting, number length and decoding cost."""
    data = raw.encode("utf-8", "surrogatepass") if isinstance(raw, str) else raw
    shape = scan(data)
    if shape.decoded_bytes > max_decoded_bytes:
        raise JsonLimitError(
            f"{shape.values:,} values in {shape.size:,} bytes would take about "
            f"{shape.decoded_bytes // MIB:,} MiB to decode, more than the "
            f"{max_decoded_bytes // MIB:,} MiB allowed"
        )
    depth, long_number = _depth_and_number(data, max_depth)
    if depth > max_depth:
        raise JsonLimitError(f"nested deeper than {max_depth} levels")
    if long_number:
        raise JsonLimitError(f"a number longer than {MAX_NUMBER_CHARS} characters")
    if isinstance(raw, str):
        text = raw
    else:
        # JSON is UTF-8 (RFC 8259); the decoder's guess at UTF-16/32 fails with a
        # UnicodeDecodeError on hostile bytes.
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonLimitError(f"not UTF-8 text (byte {exc.start})") from None
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
