"""The policy's labelsPresence predicate and labelPreference priority, after upstream's
tables (node_label_test.go)."""

from __future__ import annotations

import pytest

from tests.support import cluster, node, parse, pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.status import Code
from volsched.scheduling.plugins.node_label import NodeLabelPreference, NodeLabelPresence

NODE_LABELS = {"foo": "any value", "bar": ""}


@pytest.mark.parametrize(
    ("labels", "presence", "reason"),
    [
        pytest.param(("baz",), True, "node(s) didn't have the requested labels: baz", id="missing"),
        pytest.param(("baz",), False, None, id="absent as required"),
        pytest.param(("foo", "bar"), True, None, id="all present, whatever their values"),
        pytest.param(
            ("foo", "bar"),
            False,
            "node(s) didn't have the requested labels: foo, bar (must be absent)",
            id="present but must be absent",
        ),
        pytest.param(
            ("foo", "baz", "qux"),
            True,
            "node(s) didn't have the requested labels: baz, qux",
            id="every missing label is named",
        ),
        pytest.param(
            ("foo", "baz"),
            False,
            "node(s) didn't have the requested labels: foo (must be absent)",
            id="only the offending label is named",
        ),
        pytest.param((), True, None, id="no labels"),
    ],
)
def test_labels_presence(labels: tuple[str, ...], presence: bool, reason: str | None) -> None:
    cache = cluster(node("n1", labels=NODE_LABELS))
    plugin = NodeLabelPresence(cache, labels, presence)
    status = plugin.filter(CycleState(), parse(pod("p")), cache.nodes["n1"])
    if reason is None:
        assert status is None
    else:
        assert status is not None
        assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == (reason,)


@pytest.mark.parametrize(
    ("label", "presence", "expected"),
    [
        ("foo", True, 100),
        ("foo", False, 0),
        ("baz", True, 0),
        ("baz", False, 100),
        ("bar", True, 100),
    ],
)
def test_label_preference(label: str, presence: bool, expected: int) -> None:
    cache = cluster(node("n1", labels=NODE_LABELS))
    plugin = NodeLabelPreference(cache, label, presence)
    assert plugin.score(CycleState(), parse(pod("p")), cache.nodes["n1"]) == expected
