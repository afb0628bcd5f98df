"""Bounded JSON decoding: what is refused and what still decodes."""

from __future__ import annotations

import json
import re
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from volsched.cache.json_limits import (
    MAX_DEPTH,
    JsonLimitError,
    check_depth,
    loads_bounded,
)


@pytest.mark.parametrize(
    ("raw", "problem"),
    [
        (b"[" * (MAX_DEPTH + 1) + b"]" * (MAX_DEPTH + 1), "nested deeper than 64"),
        (b'{"a": ' * 100_000, "nested deeper than 64"),
        (b"[1" + b"0" * 100 + b"]", "a number longer than 64"),
        (b"1e" + b"9" * 80, "a number longer than 64"),
        (b"0\x000\x80", "not UTF-8 text (byte 3)"),
        (b'"\xff"', "not UTF-8 text (byte 1)"),
    ],
)
def test_refused(raw: bytes, problem: str) -> None:
    with pytest.raises(JsonLimitError, match=problem.replace("(", r"\(").replace(")", r"\)")):
        loads_bounded(raw)


@pytest.mark.parametrize(
    ("raw", "value"),
    [
        (b"[" * MAX_DEPTH + b"]" * MAX_DEPTH, json.loads("[" * MAX_DEPTH + "]" * MAX_DEPTH)),
        (b'{"a": "[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[["}', None),
        (b'{"a\\"[[[[": "\\\\", "b": "\\"' + b"[" * 100 + b'\\""}', None),
        (b'["' + b"\\u0041" * 100_000 + b'"]', None),
        (b'"' + b"1" * 1000 + b'"', "1" * 1000),
        ('{"\u00e9": 1}'.encode(), {"\u00e9": 1}),
    ],
)
def test_accepted(raw: bytes, value: Any) -> None:
    expected = json.loads(raw) if value is None else value
    assert loads_bounded(raw) == expected


json_documents = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(10**20), 10**20), st.text(max_size=10)),
    lambda children: st.one_of(
        st.lists(children, max_size=3), st.dictionaries(st.text(max_size=5), children, max_size=3)
    ),
    max_leaves=20,
)


@given(json_documents)
def test_ordinary_documents_decode_as_json_does(document: Any) -> None:
    raw = json.dumps(document).encode()
    assert loads_bounded(raw) == json.loads(raw)
    check_depth(document, "doc")


MIB = 1024 * 1024
BODY = 16 * MIB


def body_of(item: bytes) -> bytes:
    return b"[" + b",".join([item] * (BODY // (len(item) + 1))) + b"]"


# Each is 16 MB; as Python objects they took 0.4 to 2 GB, or 2 GB in the scan before.
HOSTILE: dict[str, Callable[[], bytes]] = {
    "empty objects": lambda: body_of(b"{}"),
    "empty arrays": lambda: body_of(b"[]"),
    "floats": lambda: body_of(b"1.5"),
    "unique keys": lambda: b"{" + b",".join(b'"%07d":1' % i for i in range(BODY // 12)) + b"}",
    "one string": lambda: b'["' + b"a" * (BODY - 4) + b'"]',
    "escapes": lambda: b'["' + b"\\n" * (BODY // 2 - 2) + b'"]',
    "one string, one emoji": lambda: b'["\xf0\x9f\x98\x80' + b"a" * (BODY - 8) + b'"]',
    "deep": lambda: b"[" * (BODY // 2) + b"]" * (BODY // 2),
}


@pytest.mark.parametrize("name", list(HOSTILE))
def test_a_16_mb_document_costs_under_100_mb(name: str) -> None:
    raw = HOSTILE[name]()
    tracemalloc.start()
    try:
        loads_bounded(raw)
    except JsonLimitError as exc:
        assert "\n" not in str(exc)
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    assert peak < 100 * MIB, f"{name}: {peak // MIB} MiB"


def test_a_document_too_costly_to_decode_is_refused_naming_the_cost() -> None:
    with pytest.raises(JsonLimitError) as caught:
        loads_bounded(body_of(b"{}"))
    # About 5.6 million: the count is an upper bound, exact but for pieces cut in a `{}`.
    assert re.fullmatch(
        r"5,59\d,\d{3} values in 16,777,216 bytes would take about 1,\d{3} MiB to decode, "
        r"more than the 64 MiB allowed",
        str(caught.value),
    )
