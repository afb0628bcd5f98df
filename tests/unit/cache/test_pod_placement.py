"""Every node counts exactly the pods placed on it, in whatever order pods, nodes,
assumptions and deletions arrive — a node listed after its pods included (a relist
lists every kind at once), which the cache now serves from an index of placements
instead of a scan of every pod."""

from __future__ import annotations

from typing import Any

from hypothesis import example, given, settings
from hypothesis import strategies as st

from tests.support import node, parse, pod
from volsched.cache.cluster import ClusterCache

NODES = ["n0", "n1", "n2"]
PODS = ["p0", "p1", "p2", "p3"]

STEPS = st.lists(
    st.one_of(
        st.tuples(st.just("node"), st.sampled_from(NODES)),
        st.tuples(st.just("delete node"), st.sampled_from(NODES)),
        st.tuples(st.just("pod"), st.sampled_from(PODS), st.sampled_from([None, *NODES])),
        st.tuples(st.just("terminal pod"), st.sampled_from(PODS), st.sampled_from(NODES)),
        st.tuples(st.just("delete pod"), st.sampled_from(PODS)),
        st.tuples(st.just("assume"), st.sampled_from(PODS), st.sampled_from(NODES)),
        st.tuples(st.just("forget"), st.sampled_from(PODS)),
    ),
    max_size=40,
)


def apply(cache: ClusterCache, step: tuple[Any, ...], version: int) -> None:
    verb, name = step[0], step[1]
    if verb == "node":
        cache.upsert("Node", parse(node(name)))
    elif verb == "delete node":
        cache.delete("Node", name)
    elif verb in ("pod", "terminal pod"):
        raw = pod(name, cpu="100m", node_name=step[2])
        raw["metadata"]["resourceVersion"] = str(version)
        if verb == "terminal pod":
            raw["status"] = {"phase": "Succeeded"}
        cache.upsert("Pod", parse(raw))
    elif verb == "delete pod":
        cache.delete("Pod", f"default/{name}")
    elif verb == "assume":
        held = cache.pods.get(f"default/{name}")
        if held is not None and not held.node_name and step[2] in cache.nodes:
            cache.assume_pod(held, step[2])
    elif verb == "forget":
        cache.forget_pod(f"default/{name}")


@settings(max_examples=300, deadline=None)
@given(STEPS)
# Sequences random lists rarely hit: an assumption forgotten, one overtaken by the
# informer binding the pod elsewhere, and a node deleted and listed again.
@example([("node", "n0"), ("pod", "p0", None), ("assume", "p0", "n0"), ("forget", "p0")])
@example(
    [
        ("node", "n0"),
        ("pod", "p0", None),
        ("assume", "p0", "n0"),
        ("pod", "p0", "n1"),
        ("node", "n1"),
    ]
)
@example(
    [
        ("pod", "p1", "n2"),
        ("node", "n2"),
        ("delete node", "n2"),
        ("delete pod", "p1"),
        ("node", "n2"),
    ]
)
def test_each_node_counts_the_pods_placed_on_it(steps: list[tuple[Any, ...]]) -> None:
    cache = ClusterCache()
    for version, step in enumerate(steps, start=1):
        apply(cache, step, version)
        placed: dict[str, set[str]] = {}
        for key, held in cache.pods.items():
            where = "" if held.terminal else held.node_name or cache.assumed_pods.get(key, "")
            if where:
                placed.setdefault(where, set()).add(key)
        for name, info in cache.nodes.items():
            assert set(info.pods) == placed.get(name, set()), (name, step)
        # What a node arriving now would take: its pods, known node or not.
        assert {name: set(keys) for name, keys in cache.placement.by_node.items()} == placed, step


def test_a_node_listed_after_its_pods_takes_them() -> None:
    cache = ClusterCache()
    for index in range(3):
        cache.upsert("Pod", parse(pod(f"p{index}", cpu="1", node_name="late")))
    cache.upsert("Pod", parse(pod("elsewhere", cpu="1", node_name="other")))
    cache.upsert("Node", parse(node("late", cpu="8")))
    assert sorted(cache.nodes["late"].pods) == ["default/p0", "default/p1", "default/p2"]
    assert cache.nodes["late"].requested["cpu"] == 3000
