"""The type check of snapshot views refuses nothing a parser makes, names the field that
is wrong, and stays bounded however often a part refers to one container."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import pytest

from tests.fuzz.test_hostile_corpus import snapshot_documents
from tests.unit.cache.test_dra_objects import RICH_CLAIM, RICH_CLASS
from tests.unit.longhorn.objects import (
    longhorn_node,
    longhorn_replica,
    longhorn_setting,
    longhorn_volume,
)
from volsched.cache.objects.registry import KINDS, kind_of
from volsched.cache.store import snapshot as codec
from volsched.cache.store.shapes import ShapeError, check_view

from .damage_kit import POD


def _meta(name: str, namespace: str = "ns") -> dict[str, Any]:
    return {"name": name, "namespace": namespace, "uid": "u", "labels": {"app": "a"}}


# Kinds the corpus of snapshot documents does not hold.
WORKLOADS: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": _meta("ns", "")},
    {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": _meta("svc"),
        "spec": {"selector": {"app": "a"}},
    },
    {
        "apiVersion": "apps/v1",
        "kind": "ReplicaSet",
        "metadata": _meta("rs"),
        "spec": {"selector": {"matchLabels": {"app": "a"}}},
    },
    {
        "apiVersion": "apps/v1",
        "kind": "StatefulSet",
        "metadata": _meta("sts"),
        "spec": {"selector": {"matchLabels": {"app": "a"}}},
    },
    {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "CSIDriver",
        "metadata": _meta("driver", ""),
        "spec": {"storageCapacity": True},
    },
]


def every_object() -> list[tuple[str, dict[str, Any]]]:
    documents = [
        *snapshot_documents(),
        *WORKLOADS,
        longhorn_node("node-1"),
        longhorn_volume("vol-1"),
        longhorn_replica("r-1", "vol-1", "node-1"),
        longhorn_setting("storage-over-provisioning-percentage", "200"),
        RICH_CLASS,
        RICH_CLAIM,
    ]
    found = []
    for document in documents:
        kind = kind_of(document.get("apiVersion", ""), document.get("kind", ""))
        if kind in KINDS:
            found.append((kind, document))
    return found


def test_every_kind_a_parser_makes_passes_and_survives_a_snapshot() -> None:
    objects = every_object()
    assert {kind for kind, _ in objects} == set(KINDS)
    views: dict[str, dict[str, Any]] = {}
    for kind, raw in objects:
        view = KINDS[kind].parse(raw)
        check_view(view)
        views.setdefault(kind, {})[view.meta.key] = view
    assert codec.decode(codec.encode(views, {})).views == views


def pod(**fields: Any) -> Any:
    return dataclasses.replace(KINDS["Pod"].parse(POD), **fields)


@pytest.mark.parametrize(
    ("view", "says"),
    [
        (pod(requests=None), ".requests is NoneType, not dict"),
        (pod(requests={"cpu": 1.5}), ".requests['cpu'] is float, not int"),
        (pod(priority="high"), ".priority is str, not int"),
        (pod(containers_nonzero=(1,)), ".containers_nonzero is tuple, not a tuple of 2"),
        (pod(scheduling_gates=["a"]), ".scheduling_gates is list, not tuple"),
        (pod(scheduling_gates=("a", 2)), ".scheduling_gates[1] is int, not str"),
        (pod(start_time="now"), ".start_time is str, not float"),
    ],
)
def test_a_field_of_the_wrong_type_is_named(view: Any, says: str) -> None:
    with pytest.raises(ShapeError) as raised:
        check_view(view)
    assert str(raised.value) == says


def test_a_pod_whose_start_time_is_an_int_passes() -> None:
    check_view(pod(start_time=5))


def test_a_container_shared_by_every_view_is_checked_once() -> None:
    """A part can refer to one container from every view; walking it each time would
    take the square of the part's size (here 10,000 × 100,000 items)."""
    gates = tuple(f"gate-{i}" for i in range(100_000))
    pods = [pod(scheduling_gates=gates) for _ in range(10_000)]
    seen: set[int] = set()
    started = time.perf_counter()
    for view in pods:
        check_view(view, seen)
    assert time.perf_counter() - started < 5.0
