"""MatchNodeSelector and NodeAffinityPriority, after upstream's tables
(node_affinity_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import cluster, node, parse, pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.status import SKIP, Code
from volsched.scheduling.plugins.node_affinity import NodeAffinity

Raw = dict[str, Any]
REASON = "node(s) didn't match Pod's node affinity/selector"


def expr(key: str, operator: str, *values: str) -> Raw:
    item: Raw = {"key": key, "operator": operator}
    if values:
        item["values"] = list(values)
    return item


def required(*terms: list[Raw], fields: list[Raw] | None = None) -> Raw:
    built: list[Raw] = [{"matchExpressions": term} for term in terms]
    if fields is not None:
        built.append({"matchFields": fields})
    return {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": built}
            }
        }
    }


def preferred(*terms: tuple[int, list[Raw]]) -> Raw:
    return {
        "affinity": {
            "nodeAffinity": {
                "preferredDuringSchedulingIgnoredDuringExecution": [
                    {"weight": weight, "preference": {"matchExpressions": exprs}}
                    for weight, exprs in terms
                ]
            }
        }
    }


@pytest.mark.parametrize(
    ("spec", "labels", "fits"),
    [
        pytest.param({"nodeSelector": {"foo": "bar"}}, {}, False, id="missing selector label"),
        pytest.param({"nodeSelector": {"foo": "bar"}}, {"foo": "bar"}, True, id="selector matches"),
        pytest.param(
            {"nodeSelector": {"foo": "bar", "baz": "x"}},
            {"foo": "bar"},
            False,
            id="all pairs needed",
        ),
        pytest.param(required([expr("foo", "In", "bar", "value2")]), {"foo": "bar"}, True, id="In"),
        pytest.param(
            required([expr("foo", "In", "bar")]), {"foo": "baz"}, False, id="In, other value"
        ),
        pytest.param(required([expr("foo", "NotIn", "bar")]), {}, True, id="NotIn, label absent"),
        pytest.param(required([expr("foo", "NotIn", "bar")]), {"foo": "bar"}, False, id="NotIn"),
        pytest.param(required([expr("foo", "Exists")]), {"foo": "x"}, True, id="Exists"),
        pytest.param(
            required([expr("foo", "DoesNotExist")]), {"foo": "x"}, False, id="DoesNotExist"
        ),
        pytest.param(required([expr("kernel", "Gt", "4")]), {"kernel": "5"}, True, id="Gt"),
        pytest.param(required([expr("kernel", "Lt", "4")]), {"kernel": "5"}, False, id="Lt"),
        pytest.param(
            required([expr("kernel", "Gt", "4")]), {"kernel": "five"}, False, id="Gt, not a number"
        ),
        pytest.param(
            required([expr("foo", "In", "bar"), expr("diff", "Exists")]),
            {"foo": "bar"},
            False,
            id="expressions of a term are ANDed",
        ),
        pytest.param(
            required([expr("foo", "In", "nope")], [expr("diff", "Exists")]),
            {"diff": "1"},
            True,
            id="terms are ORed",
        ),
        pytest.param(required(), {"foo": "bar"}, False, id="no terms match nothing"),
        pytest.param(required([]), {"foo": "bar"}, False, id="an empty term matches nothing"),
        pytest.param(
            {"nodeSelector": {"foo": "bar"}, **required([expr("diff", "Exists")])},
            {"foo": "bar"},
            False,
            id="selector and affinity must both match",
        ),
        pytest.param(
            {"nodeSelector": {"foo": "bar"}, **required([expr("diff", "Exists")])},
            {"foo": "bar", "diff": "1"},
            True,
            id="selector and affinity both match",
        ),
        pytest.param(
            required(fields=[expr("metadata.name", "In", "n1")]),
            {},
            True,
            id="matchFields on the node name",
        ),
        pytest.param(
            required(fields=[expr("metadata.name", "NotIn", "n1")]),
            {},
            False,
            id="matchFields NotIn the node name",
        ),
    ],
)
def test_filter(spec: Raw, labels: dict[str, str], fits: bool) -> None:
    cache = cluster(node("n1", labels=labels))
    plugin = NodeAffinity(cache)
    incoming = parse(pod("p", spec=spec))
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming)
    assert status.code is Code.SUCCESS
    for run_state in (state, CycleState()):  # with and without pre-filter
        result = plugin.filter(run_state, incoming, cache.nodes["n1"])
        if fits:
            assert result is None
        else:
            assert result is not None
            assert result.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            assert result.reasons == (REASON,)


def test_pod_without_selector_or_affinity_skips_the_filter() -> None:
    cache = cluster(node("n1"))
    incoming = parse(pod("p", spec=preferred((5, [expr("foo", "Exists")]))))
    assert NodeAffinity(cache).pre_filter(CycleState(), incoming) == (None, SKIP)


@pytest.mark.parametrize(
    ("terms", "narrowed", "conflict"),
    [
        pytest.param(
            [[expr("metadata.name", "In", "n1", "n2")]], {"n1", "n2"}, False, id="one term"
        ),
        pytest.param(
            [
                [expr("metadata.name", "In", "n1", "n2"), expr("metadata.name", "In", "n2", "n3")],
                [expr("metadata.name", "In", "n4")],
            ],
            {"n2", "n4"},
            False,
            id="intersection within a term, union across terms",
        ),
        pytest.param(
            [[expr("metadata.name", "In", "n1")], [expr("metadata.name", "NotIn", "n1")]],
            None,
            False,
            id="a term without a name list admits every node",
        ),
        pytest.param(
            [[expr("metadata.name", "In", "n1"), expr("metadata.name", "In", "n2")]],
            None,
            True,
            id="no name left",
        ),
    ],
)
def test_pre_filter_narrows_to_named_nodes(
    terms: list[list[Raw]], narrowed: set[str] | None, conflict: bool
) -> None:
    spec = {
        "affinity": {
            "nodeAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": {
                    "nodeSelectorTerms": [{"matchFields": term} for term in terms]
                }
            }
        }
    }
    cache = cluster(node("n1"))
    result, status = NodeAffinity(cache).pre_filter(CycleState(), parse(pod("p", spec=spec)))
    if conflict:
        assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == ("pod affinity terms conflict",)
    else:
        assert status.code is Code.SUCCESS
        assert (set(result) if result is not None else None) == narrowed


AFFINITY_WEIGHTED = preferred(
    (2, [expr("foo", "In", "bar")]),
    (4, [expr("key", "In", "value")]),
    (5, [expr("foo", "In", "bar"), expr("key", "In", "value"), expr("az", "In", "az1")]),
)


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        pytest.param(
            preferred((2, [expr("foo", "In", "none")])),
            [0, 0, 0],
            id="no node matches the preferred terms",
        ),
        pytest.param(
            preferred((2, [expr("foo", "In", "bar")])),
            [100, 0, 100],
            id="nodes labelled foo=bar match",
        ),
        # Raw sums n1 = 2, n2 = 4, n3 = 2 + 4 + 5 = 11; scaled: 200 // 11 = 18, 400 // 11 = 36.
        pytest.param(AFFINITY_WEIGHTED, [18, 36, 100], id="weights add up, then scale to 100"),
    ],
)
def test_score(spec: Raw, expected: list[int]) -> None:
    cache = cluster(
        node("n1", labels={"foo": "bar"}),
        node("n2", labels={"key": "value"}),
        node("n3", labels={"foo": "bar", "key": "value", "az": "az1"}),
    )
    plugin = NodeAffinity(cache)
    incoming = parse(pod("p", spec=spec))
    infos = [cache.nodes[name] for name in ("n1", "n2", "n3")]
    state = CycleState()
    assert plugin.pre_score(state, incoming, infos).code is Code.SUCCESS
    scores = {info.name: plugin.score(state, incoming, info) for info in infos}
    plugin.normalize(state, incoming, scores)
    assert list(scores.values()) == expected


def test_pod_without_preferences_skips_the_score() -> None:
    cache = cluster(node("n1"))
    incoming = parse(pod("p", spec={"nodeSelector": {"foo": "bar"}}))
    assert NodeAffinity(cache).pre_score(CycleState(), incoming, []).code is Code.SKIP
