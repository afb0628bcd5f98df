"""What the runner asks of the kept results, case by case: what a walk reads back after
another walk judged the nodes — from a node's memo or the shape's column — and what is
never kept (no key, a node with nominated pods, an error, an unreadable node, a node
changed since)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.support import cluster, node, parse, pod
from volsched.cache.cluster import ClusterCache
from volsched.cache.node_changes import KEPT
from volsched.cache.node_info import UNKNOWN, NodeInfo
from volsched.scheduling.framework.kept_results import KeptResults
from volsched.scheduling.framework.profile import Predicate
from volsched.scheduling.framework.status import error, unschedulable

NAMES = ["n0", "n1", "n2", "n3"]
KEY = "shape"


class Plugin:
    name = "Rejecting"

    def filter(self, *_: Any) -> None:
        return None


REJECTED = (Predicate("Rejecting", Plugin()), unschedulable("no"))
ERRED = (Predicate("Rejecting", Plugin()), error("broken"))
BROKEN = ValueError("unreadable")


@dataclass
class Case:
    """One walk judges ``judged`` (node → verdict) over ``walked``; after ``between``,
    a second walk over the same list reads ``expected`` (node → verdict or UNKNOWN)."""

    judged: dict[str, Any]
    expected: dict[str, Any]
    key: str | None = KEY
    walked: Callable[[ClusterCache], list[NodeInfo]] = ClusterCache.node_list
    crowded: frozenset[str] = frozenset()
    between: Callable[[ClusterCache], None] = field(default=lambda cache: None)
    columnar: bool = True


def a_subset(cache: ClusterCache) -> list[NodeInfo]:
    """A list of the nodes other than the cluster's own (a PreFilter narrowed it)."""
    return list(cache.node_list())


def forget_the_columns(cache: ClusterCache) -> None:
    """More node changes than a column can replay: it starts over, the memos do not."""
    for _ in range(KEPT + 1):
        cache.node_changes.record("elsewhere")


def place_a_pod_on_n1(cache: ClusterCache) -> None:
    cache.upsert("Pod", parse(pod("p", cpu="1", node_name="n1")))


ALL_FIT = dict.fromkeys(NAMES)
CASES = {
    "a fit and a rejection are read back from the column": Case(
        {"n0": None, "n1": REJECTED, "n2": None, "n3": None},
        {"n0": None, "n1": REJECTED, "n2": None, "n3": None},
    ),
    "no key keeps nothing": Case(ALL_FIT, dict.fromkeys(NAMES, UNKNOWN), key=None, columnar=False),
    "a list other than the cluster's reads the memos": Case(
        ALL_FIT, ALL_FIT, walked=a_subset, columnar=False
    ),
    "a node with nominated pods is judged each time": Case(
        ALL_FIT,
        {**ALL_FIT, "n2": UNKNOWN},
        crowded=frozenset({"n2"}),
        columnar=False,
    ),
    "an error is never kept": Case({**ALL_FIT, "n3": ERRED}, {**ALL_FIT, "n3": UNKNOWN}),
    "an unreadable node is asked again": Case(
        {**ALL_FIT, "n0": BROKEN}, {**ALL_FIT, "n0": UNKNOWN}
    ),
    "a node changed since is asked again, and no other": Case(
        ALL_FIT, {**ALL_FIT, "n1": UNKNOWN}, between=place_a_pod_on_n1
    ),
}


@pytest.mark.parametrize("case", CASES.values(), ids=CASES.keys())
def test_a_second_walk_reads_what_the_first_kept(case: Case) -> None:
    cache = cluster(*(node(name, cpu="8") for name in NAMES))
    kept = KeptResults(cache)
    nodes = case.walked(cache)
    first = kept.verdicts(case.key, nodes, case.crowded)
    assert first.columnar is case.columnar
    verdicts = first.read(0, len(nodes))
    assert verdicts == [UNKNOWN] * len(nodes)
    for index, info in enumerate(nodes):
        verdicts[index] = case.judged[info.name]
        first.judged(info, verdicts[index])
    first.keep(0, verdicts)
    case.between(cache)
    nodes = case.walked(cache)
    second = kept.verdicts(case.key, nodes, case.crowded).read(0, len(nodes))
    assert dict(zip([info.name for info in nodes], second, strict=True)) == case.expected


def test_a_window_wraps_round_the_end_of_the_list() -> None:
    cache = cluster(*(node(name, cpu="8") for name in NAMES))
    kept = KeptResults(cache)
    walk = kept.verdicts(KEY, cache.node_list(), frozenset())
    walk.keep(3, [REJECTED, None])
    assert walk.read(3, 2) == [REJECTED, None]
    assert walk.read(1, 2) == [UNKNOWN, UNKNOWN]


def test_what_the_column_forgot_is_found_in_the_memo() -> None:
    cache = cluster(*(node(name, cpu="8") for name in NAMES))
    kept = KeptResults(cache)
    walk = kept.verdicts(KEY, cache.node_list(), frozenset())
    for info in cache.node_list():
        walk.judged(info, REJECTED)
    forget_the_columns(cache)
    assert kept.verdicts(KEY, cache.node_list(), frozenset()).read(0, 4) == [REJECTED] * 4


@pytest.mark.parametrize(
    ("walked", "aligned"),
    [
        pytest.param(lambda nodes, feasible: None, False, id="no window"),
        pytest.param(lambda nodes, feasible: (nodes, feasible, 1), True, id="the walk's window"),
        pytest.param(
            lambda nodes, feasible: (nodes, list(feasible), 1), False, id="feasible trimmed since"
        ),
        pytest.param(
            lambda nodes, feasible: (list(nodes), feasible, 1), False, id="another node list"
        ),
    ],
)
def test_score_rows_are_read_as_a_slice_only_of_the_walks_own_window(
    walked: Callable[[list[NodeInfo], list[NodeInfo]], Any], aligned: bool
) -> None:
    cache = cluster(*(node(name, cpu="8") for name in NAMES))
    kept = KeptResults(cache)
    nodes = cache.node_list()
    feasible = nodes[1:3]
    columns = kept.score_columns(walked(nodes, feasible), feasible)
    assert (columns is not None) is aligned
    if columns is not None:
        assert columns[1:] == (nodes, 1)
