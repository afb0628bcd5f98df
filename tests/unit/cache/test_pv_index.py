"""The PV index always agrees with checking every PV's node affinity against every node,
whatever order nodes and PVs arrive, change and leave in."""

from __future__ import annotations

from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support import node, parse, pv
from volsched.cache.cluster import ClusterCache

NODES = [f"n{i}" for i in range(5)]
ZONES = ["a", "b"]


def zonal_pv(name: str, zone: str, operator: str) -> dict[str, Any]:
    values = [zone] if operator in ("In", "NotIn") else None
    expression: dict[str, Any] = {"key": "zone", "operator": operator}
    if values:
        expression["values"] = values
    return pv(
        name,
        "1Gi",
        spec={
            "nodeAffinity": {
                "required": {"nodeSelectorTerms": [{"matchExpressions": [expression]}]}
            }
        },
    )


operations = st.lists(
    st.one_of(
        st.tuples(st.just("node"), st.sampled_from(NODES), st.sampled_from([*ZONES, None])),
        st.tuples(st.just("delete-node"), st.sampled_from(NODES), st.none()),
        st.tuples(
            st.just("pv"),
            st.sampled_from(["p0", "p1", "p2", "p3"]),
            st.tuples(
                st.sampled_from(["host", "In", "NotIn", "Exists", "none"]),
                st.sampled_from(NODES + ZONES),
            ),
        ),
        st.tuples(st.just("delete-pv"), st.sampled_from(["p0", "p1", "p2", "p3"]), st.none()),
    ),
    max_size=40,
)


@settings(max_examples=200, deadline=None)
@given(operations)
def test_index_matches_brute_force(ops: list[tuple[str, str, Any]]) -> None:
    cache = ClusterCache()
    for op, name, arg in ops:
        if op == "node":
            labels = {"zone": arg} if arg else {}
            cache.upsert("Node", parse(node(name, labels=labels)))
        elif op == "delete-node":
            cache.delete("Node", name)
        elif op == "pv":
            kind, value = arg
            if kind == "host":
                raw = pv(name, "1Gi", node_names=[value])
            elif kind == "none":
                raw = pv(name, "1Gi")
            else:
                raw = zonal_pv(name, value, kind)
            cache.upsert("PersistentVolume", parse(raw))
        else:
            cache.delete("PersistentVolume", name)
    for info in cache.nodes.values():
        expected = {
            volume.meta.name
            for volume in cache.pvs.values()
            if volume.node_affinity is not None
            and volume.node_affinity.matches(info.node.meta.labels, info.name)
        }
        entries = cache.pv_index.on_node(info.name, "local")
        assert entries == sorted(entries)
        assert {name for _, name in entries} == expected
    anywhere = {v.meta.name for v in cache.pvs.values() if v.node_affinity is None}
    assert cache.pv_index.anywhere("local") == anywhere
