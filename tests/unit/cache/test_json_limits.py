"""Bounded JSON decoding: what is refused and what still decodes."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from volsched.cache.json_limits import MAX_DEPTH, JsonLimitError, check_depth, loads_bounded


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
