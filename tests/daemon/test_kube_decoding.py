"""What the API server sends is decoded at the client boundary: a body or a watch line
that cannot be decoded is an ``ApiError`` (which the watches retry), never a ValueError
or RecursionError that ends a watch; and managedFields, which nothing reads, is dropped."""

from __future__ import annotations

import orjson
import pytest

from volsched.cache.errors import ApiError
from volsched.daemon.kube.client import _watch_event
from volsched.daemon.kube.decoding import decoded as _decoded
from volsched.daemon.kube.decoding import strip_body


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


MANAGED = [{"manager": "kubelet", "operation": "Update", "fieldsV1": {"f:status": {}}}]


def test_a_watch_event_s_object_comes_without_managed_fields() -> None:
    line = orjson.dumps(
        {"type": "ADDED", "object": {"metadata": {"name": "p", "managedFields": MANAGED}}}
    )
    assert _watch_event(line, "Pod") == {"type": "ADDED", "object": {"metadata": {"name": "p"}}}


def test_list_items_and_single_objects_come_without_managed_fields() -> None:
    listed = {"items": [{"metadata": {"name": "a", "managedFields": MANAGED}}], "metadata": {}}
    assert strip_body(listed) == {"items": [{"metadata": {"name": "a"}}], "metadata": {}}
    single = {"metadata": {"name": "a", "managedFields": MANAGED}, "spec": {}}
    assert strip_body(single) == {"metadata": {"name": "a"}, "spec": {}}
