"""Verdicts and score rows kept per pod shape over the whole node list decide as the
plugins do, whatever happens to the nodes between two cycles: a pod placed, a node
relabelled or tainted, a node added or removed."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import cluster, node, parse, pod
from tests.unit.framework.test_node_verdicts import outcome, scheduler_for
from volsched.cache.node_changes import KEPT, NodeChanges
from volsched.cache.node_info import UNKNOWN
from volsched.scheduling.framework.shape_columns import (
    COLUMNS_KEPT,
    ShapeColumns,
    put_window,
    window,
)

NAMES = [f"n{i:02}" for i in range(12)]
SPOT = [{"key": "spot", "value": "yes", "effect": "NoSchedule"}]


def changed_node(name: str, variant: int) -> dict[str, Any]:
    """The node as one of a few versions: plain, relabelled, tainted, smaller."""
    if variant == 1:
        return node(name, cpu="8", labels={"disk": "ssd"})
    if variant == 2:
        return node(name, cpu="8", taints=SPOT)
    if variant == 3:
        return node(name, cpu="2")
    return node(name, cpu="8")


STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("pod"), st.sampled_from(["1", "2", "500m"])),
        st.tuples(st.just("node"), st.sampled_from(NAMES), st.integers(0, 3)),
        st.tuples(st.just("add"), st.integers(12, 15)),
        st.tuples(st.just("remove"), st.sampled_from(NAMES[6:])),
    ),
    min_size=1,
    max_size=25,
)


@settings(max_examples=60, deadline=None)
@given(STEPS)
def test_columns_decide_as_the_plugins_do_through_node_changes(
    steps: list[tuple[Any, ...]],
) -> None:
    start = [node(name, cpu="8") for name in NAMES]
    kept, asked = cluster(*start), cluster(*start)
    keeping, asking = scheduler_for(kept, keep=True), scheduler_for(asked, keep=False)
    # Every cycle walks a window of the list, not the whole of it.
    keeping.profile.percentage_of_nodes_to_score = asking.profile.percentage_of_nodes_to_score = 50
    made = 0
    for step in steps:
        for cache in (kept, asked):
            if step[0] == "node":
                cache.upsert("Node", parse(changed_node(step[1], step[2])))
            elif step[0] == "add":
                cache.upsert("Node", parse(node(f"n{step[1]:02}", cpu="8")))
            elif step[0] == "remove":
                cache.delete("Node", step[1])
            else:
                cache.upsert("Pod", parse(pod(f"p{made}", cpu=step[1])))
        if step[0] == "pod":
            key = f"default/p{made}"
            made += 1
            one, other = keeping.schedule(kept.pending[key]), asking.schedule(asked.pending[key])
            assert outcome(one) == outcome(other), key


def test_a_changed_node_is_forgotten_and_no_other() -> None:
    cache = cluster(*(node(name) for name in NAMES))
    nodes = cache.node_list()
    columns = ShapeColumns(cache.node_changes)
    values = columns.column("shape", nodes, UNKNOWN)
    values[:] = [None] * len(nodes)
    cache.upsert("Pod", parse(pod("p", cpu="1", node_name="n03")))
    again = columns.column("shape", nodes, UNKNOWN)
    assert [info.name for info, v in zip(nodes, again, strict=True) if v is UNKNOWN] == ["n03"]


def test_a_rebuilt_node_list_forgets_every_column() -> None:
    cache = cluster(*(node(name) for name in NAMES))
    columns = ShapeColumns(cache.node_changes)
    columns.column("shape", cache.node_list(), UNKNOWN)[:] = [None] * len(NAMES)
    cache.upsert("Node", parse(node("n99")))
    assert columns.column("shape", cache.node_list(), UNKNOWN) == [UNKNOWN] * (len(NAMES) + 1)


def test_a_column_too_far_behind_starts_over() -> None:
    changes = NodeChanges()
    cache = cluster(*(node(name) for name in NAMES))
    columns = ShapeColumns(changes)
    nodes = cache.node_list()
    columns.column("shape", nodes, UNKNOWN)[:] = [None] * len(nodes)
    changes.record("n01")
    assert columns.column("shape", nodes, UNKNOWN).count(UNKNOWN) == 1
    for _ in range(KEPT + 1):
        changes.record("elsewhere")
    assert changes.since(0) is None
    assert columns.column("shape", nodes, UNKNOWN) == [UNKNOWN] * len(nodes)


def test_only_the_most_recent_shapes_are_kept() -> None:
    cache = cluster(*(node(name) for name in NAMES))
    columns = ShapeColumns(cache.node_changes)
    nodes = cache.node_list()
    for shape in range(COLUMNS_KEPT + 1):
        columns.column(shape, nodes, UNKNOWN)[0] = "kept"
    assert columns.column(0, nodes, UNKNOWN)[0] is UNKNOWN
    assert columns.column(COLUMNS_KEPT, nodes, UNKNOWN)[0] == "kept"


def test_a_window_wraps_round_the_end_and_is_written_back_where_it_was_read() -> None:
    values = list(range(10))
    assert window(values, 8, 4) == [8, 9, 0, 1]
    assert window(values, 13, 2) == [3, 4]
    put_window(values, 8, ["a", "b", "c", "d"])
    assert values == ["c", "d", 2, 3, 4, 5, 6, 7, "a", "b"]
