"""What the API server sends is decoded at the client boundary: a body or a watch line
that Python's decoder cannot read is an ``ApiError`` (which the watches retry), never a
ValueError or RecursionError that ends a watch."""

from __future__ import annotations

import pytest

from volsched.cache.errors import ApiError
from volsched.daemon.kube.decoding import decoded as _decoded


@pytest.mark.parametrize(
    ("data", "problem"),
    [
        (b'{"type": "ADDED", "object": {', "not JSON that can be read"),
        (b'{"n": 1' + b"0" * 5000 + b"}", "a number too long"),
        (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
        (b"\xff\xfe", "not JSON that can be read"),
    ],
)
def test_an_unreadable_response_is_an_api_error(data: bytes, problem: str) -> None:
    with pytest.raises(ApiError) as caught:
        _decoded(data, "watch Pod")
    assert problem in str(caught.value) and "watch Pod" in str(caught.value)


def test_a_readable_response_is_decoded() -> None:
    assert _decoded(b'{"type": "ADDED", "object": {"kind": "Pod"}}', "watch Pod") == {
        "type": "ADDED",
        "object": {"kind": "Pod"},
    }
