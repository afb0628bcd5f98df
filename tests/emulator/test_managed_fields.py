"""fieldsV1 as kube-apiserver writes it: ``f:`` per field, ``k:`` per element of a list
merged by key, ``.`` for a map or element owned whole; an update adds what it changed."""

from __future__ import annotations

from typing import Any

import pytest

from volsched.emulator.managed_fields import changed_fields, fields_of, record

CONTAINER = {"name": "main", "image": "nginx"}


@pytest.mark.parametrize(
    ("value", "fields"),
    [
        ("text", {}),
        ({}, {}),
        ({"app": "web"}, {".": {}, "f:app": {}}),
        (["a", "b"], {}),  # an atomic list: owned as one value
        ([CONTAINER], {'k:{"name":"main"}': {".": {}, "f:name": {}, "f:image": {}}}),
        (
            [{"type": "Ready", "status": "True"}],
            {'k:{"type":"Ready"}': {".": {}, "f:type": {}, "f:status": {}}},
        ),
    ],
)
def test_fields_of_a_value(value: Any, fields: dict[str, Any]) -> None:
    assert fields_of(value) == fields


@pytest.mark.parametrize(
    ("old", "new", "changed"),
    [
        ({"a": 1}, {"a": 1}, None),
        ({"a": 1}, {"a": 2}, {"f:a": {}}),
        ({"labels": {"x": "1"}}, {"labels": {"x": "1", "y": "2"}}, {"f:labels": {"f:y": {}}}),
        (
            {"containers": [CONTAINER]},
            {"containers": [dict(CONTAINER, image="nginx:2")]},
            {"f:containers": {'k:{"name":"main"}': {"f:image": {}}}},
        ),
        ({"args": ["a"]}, {"args": ["a", "b"]}, {"f:args": {}}),
    ],
)
def test_changed_fields(old: Any, new: Any, changed: dict[str, Any] | None) -> None:
    assert changed_fields(old, new) == changed


def test_a_writer_s_fields_accumulate_in_its_one_entry() -> None:
    meta: dict[str, Any] = {}
    record(meta, "kubelet", "v1", "status", {"f:status": {"f:phase": {}}}, "2026-01-01T00:00:00Z")
    record(meta, "kubelet", "v1", "status", {"f:status": {"f:podIP": {}}}, "2026-01-01T00:00:05Z")
    record(meta, "kubectl", "v1", "", {"f:metadata": {"f:labels": {}}}, "2026-01-01T00:00:06Z")
    kubelet, kubectl = meta["managedFields"]
    assert kubelet["fieldsV1"] == {"f:status": {"f:phase": {}, "f:podIP": {}}}
    assert kubelet["time"] == "2026-01-01T00:00:05Z" and kubelet["subresource"] == "status"
    assert kubectl["manager"] == "kubectl" and "subresource" not in kubectl
