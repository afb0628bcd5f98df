"""A snapshot view holding NaN or an infinity, anywhere a view keeps a number, is
refused when the snapshot is read (the rows are read instead), naming the object and
the field; finite views pass, and the check costs nothing for parts without any."""

from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest

from volsched.cache.objects.registry import KINDS
from volsched.cache.store import rows
from volsched.cache.store import snapshot as codec

POD = KINDS["Pod"].parse(
    {
        "metadata": {"name": "p", "namespace": "ns", "resourceVersion": "6"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1"}}}]},
    }
)


def part(views: dict[str, Any]) -> bytes:
    return pickle.dumps((codec.FORMAT, views, {}), protocol=pickle.HIGHEST_PROTOCOL)


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_a_non_finite_number_in_a_view_refuses_the_snapshot(number: Any) -> None:
    meta = dataclasses.replace(POD.meta, creation_timestamp=number)
    damaged = dataclasses.replace(POD, meta=meta)
    assert rows.may_hold_non_finite(part({"Pod": {"ns/p": damaged}}))
    with pytest.raises(codec.SnapshotError) as caught:
        codec.decode([part({"Pod": {"ns/p": damaged}})])
    assert str(caught.value) == (
        "its Pod ns/p holds a number that is not finite at meta.creation_timestamp"
    )


def test_finite_views_pass_and_are_not_walked() -> None:
    body = part({"Pod": {"ns/p": POD}})
    assert not rows.may_hold_non_finite(body)
    assert codec.decode([body]).views == {"Pod": {"ns/p": POD}}
