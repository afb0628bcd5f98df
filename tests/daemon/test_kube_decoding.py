"""What the API server sends is decoded at the client boundary: a body that cannot be
decoded is an ``ApiError``, never a ValueError or RecursionError that ends a watch; a
watch line or a list item that cannot be decoded is one ``Undecodable`` naming its
object, and the rest is read; and managedFields, which nothing reads, is dropped."""

from __future__ import annotations

import orjson
import pytest

from volsched.cache.errors import ApiError
from volsched.daemon.kube.decoding import Undecodable, decoded_list, strip_body
from volsched.daemon.kube.decoding import decoded as _decoded
from volsched.daemon.kube.reading import watch_event
from volsched.daemon.kube.salvaging import named_in, pruned, split_items


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
    assert watch_event(line, "Pod") == [{"type": "ADDED", "object": {"metadata": {"name": "p"}}}]


def test_list_items_and_single_objects_come_without_managed_fields() -> None:
    listed = {"items": [{"metadata": {"name": "a", "managedFields": MANAGED}}], "metadata": {}}
    assert strip_body(listed) == {"items": [{"metadata": {"name": "a"}}], "metadata": {}}
    single = {"metadata": {"name": "a", "managedFields": MANAGED}, "spec": {}}
    assert strip_body(single) == {"metadata": {"name": "a"}, "spec": {}}


META = b'"metadata":{"name":"bad","namespace":"ns","resourceVersion":"17"}'
BAD_OBJECTS = [
    (b"{" + META + b',"n":1' + b"0" * 5000 + b"}", "a number of 5,001 digits"),
    (b"{" + META + b',"n":"\\ud800"}', "a lone UTF-16 surrogate in a string"),
    (b"{" + META + b',"n":' + b"[" * 1500 + b"]" * 1500 + b"}", "nested deeper than 100 levels"),
    (b"{" + META + b',"n":NaN}', "NaN, which is not a JSON number"),
    (b"{" + META + b',"n":1e400}', "a number out of range (1e400)"),
    (b"{" + META + b',"n":}', "not JSON: Expecting value"),
]


@pytest.mark.parametrize(("obj", "problem"), BAD_OBJECTS)
def test_a_watch_line_whose_object_does_not_decode_is_named_not_raised(
    obj: bytes, problem: str
) -> None:
    line = b'{"type":"MODIFIED","object":' + obj + b"}\n"
    assert watch_event(line, "Pod") == [
        Undecodable("Pod", "ns", "bad", "17", problem, event_type="MODIFIED")
    ]


@pytest.mark.parametrize(("obj", "problem"), BAD_OBJECTS)
def test_a_list_item_that_does_not_decode_is_left_out_and_the_rest_read(
    obj: bytes, problem: str
) -> None:
    body = b'{"metadata":{"resourceVersion":"9"},"items":[{"metadata":{"name":"a"}},%s,{}]}' % obj
    skipped: list[Undecodable] = []
    listed = decoded_list(body, "GET /api/v1/pods", "Pod", False, skipped.append)
    assert listed == {
        "metadata": {"resourceVersion": "9"},
        "items": [{"metadata": {"name": "a"}}, {}],
    }
    assert skipped == [Undecodable("Pod", "ns", "bad", "17", problem)]


def test_a_deep_custom_resource_is_kept_without_its_deepest_parts() -> None:
    deep = b"[" * 1500 + b"]" * 1500
    line = b'{"type":"ADDED","object":{' + META + b',"value":"3","x":' + deep + b"}}\n"
    notice, event = watch_event(line, "LonghornSetting", prune_deep=True)
    assert isinstance(notice, Undecodable) and notice.kept and notice.name == "bad"
    assert isinstance(event, dict) and event["object"]["value"] == "3"
    assert isinstance(event["object"]["x"], list)  # the first 100 levels are kept


def test_a_line_cut_short_or_not_json_at_all_is_an_api_error() -> None:
    with pytest.raises(ApiError, match="watch Pod"):
        watch_event(b'{"type":"ADDED","object":{"metadata":{"name":"p"', "Pod")
    with pytest.raises(ApiError, match="watch Pod"):
        watch_event(b"<html>proxy error</html>\n", "Pod")


def test_what_a_scan_finds_in_text_that_is_not_json() -> None:
    text = b'{"type":"DELETED","object":{' + META + b',"spec":{"name":"other"'
    assert named_in(text) == {
        "type": "DELETED",
        "name": "bad",
        "namespace": "ns",
        "resourceVersion": "17",
    }
    assert pruned(b'{"a":[[[1]]],"b":"[[["}', 2) == (b'{"a":[null],"b":"[[["}', 1)
    assert split_items(b'{"items":[1, {"a":[2,3]} ,"]"],"x":{}}') == (
        b'{"items":[],"x":{}}',
        [b"1", b'{"a":[2,3]}', b'"]"'],
    )
