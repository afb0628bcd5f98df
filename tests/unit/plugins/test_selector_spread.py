"""SelectorSpreadPriority, with upstream's tables (selector_spread_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import cluster, meta, node, parse, pod, service
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.status import Code
from volsched.scheduling.plugins.selector_spread import SelectorSpread, default_selector

Raw = dict[str, Any]
LABELS1 = {"foo": "bar", "baz": "blah"}
LABELS2 = {"bar": "foo", "baz": "blah"}
ZONE = "topology.kubernetes.io/zone"


def owner(kind: str, name: str, api_version: str = "apps/v1") -> Raw:
    return {"apiVersion": api_version, "kind": kind, "name": name, "uid": name, "controller": True}


def workload(kind: str, name: str, match_labels: dict[str, str]) -> Raw:
    return {
        "kind": kind,
        "metadata": meta(name, "default"),
        "spec": {"selector": {"matchLabels": match_labels}},
    }


def spread_scores(objects: list[Raw], incoming: Raw, nodes: list[str]) -> list[int]:
    cache = cluster(*objects)
    plugin = SelectorSpread(cache)
    target = parse(incoming)
    infos = [cache.nodes[name] for name in nodes]
    state = CycleState()
    assert plugin.pre_score(state, target, infos).code is Code.SUCCESS
    scores = {info.name: plugin.score(state, target, info) for info in infos}
    plugin.normalize(state, target, scores)
    return [scores[name] for name in nodes]


@pytest.mark.parametrize(
    ("extra", "incoming", "expected"),
    [
        pytest.param([], pod("p"), [100, 100], id="nothing scheduled"),
        pytest.param(
            [pod("e0", node_name="node1")], pod("p", labels=LABELS1), [100, 100], id="no services"
        ),
        pytest.param(
            [pod("e0", node_name="node1", labels=LABELS2), service("s1", {"key": "value"})],
            pod("p", labels=LABELS1),
            [100, 100],
            id="different services",
        ),
        pytest.param(
            [
                pod("e0", node_name="node1", labels=LABELS2),
                pod("e1", node_name="node2", labels=LABELS1),
                service("s1", {"baz": "blah"}),
            ],
            pod("p", labels=LABELS1),
            [0, 0],
            id="two pods, both service pods",
        ),
        pytest.param(
            [
                pod("e0", node_name="node1", labels=LABELS2),
                pod("e1", node_name="node2", labels=LABELS1),
                service("s1", {"foo": "bar"}),
            ],
            pod("p", labels=LABELS1),
            [100, 0],
            id="two pods, one service pod",
        ),
        pytest.param(
            [
                pod("e0", node_name="node1", labels=LABELS1),
                pod("e1", node_name="node1", labels=LABELS1, namespace="other"),
                pod("e2", node_name="node2", labels=LABELS1, namespace="other"),
                service("s1", {"foo": "bar"}),
            ],
            pod("p", labels=LABELS1),
            [0, 100],
            id="pods of other namespaces do not count",
        ),
        pytest.param(
            [
                # Merged {baz: blah, foo: bar}: only the LABELS1 pod on node1 matches.
                pod("e0", node_name="node1", labels=LABELS2),
                pod("e1", node_name="node1", labels=LABELS1),
                pod("e2", node_name="node2", labels=LABELS2),
                service("s1", {"baz": "blah"}),
                service("s2", {"foo": "bar"}),
            ],
            pod("p", labels=LABELS1),
            [0, 100],
            id="service selectors merge",
        ),
        pytest.param(
            [
                pod("e0", node_name="node1", labels=LABELS2, owner=owner("ReplicaSet", "rs2")),
                pod("e1", node_name="node1", labels=LABELS1, owner=owner("ReplicaSet", "rs1")),
                pod("e2", node_name="node2", labels=LABELS1, owner=owner("ReplicaSet", "rs1")),
                workload("ReplicaSet", "rs1", {"foo": "bar"}),
            ],
            pod("p", labels=LABELS1, owner=owner("ReplicaSet", "rs1")),
            [0, 0],
            id="replica set with partial pod label matches",
        ),
        pytest.param(
            [
                pod("e0", node_name="node1", labels=LABELS2, owner=owner("ReplicaSet", "rs2")),
                pod("e1", node_name="node1", labels=LABELS1, owner=owner("ReplicaSet", "rs1")),
                pod("e2", node_name="node2", labels=LABELS1, owner=owner("ReplicaSet", "rs1")),
                workload("ReplicaSet", "rs3", {"baz": "blah"}),
            ],
            pod("p", labels=LABELS1, owner=owner("ReplicaSet", "rs3")),
            [0, 50],
            id="another replica set with partial pod label matches",
        ),
        pytest.param(
            [
                pod("e0", node_name="node1", labels=LABELS2, owner=owner("StatefulSet", "ss2")),
                pod("e1", node_name="node1", labels=LABELS1, owner=owner("StatefulSet", "ss1")),
                pod("e2", node_name="node2", labels=LABELS1, owner=owner("StatefulSet", "ss1")),
                workload("StatefulSet", "ss3", {"baz": "blah"}),
            ],
            pod("p", labels=LABELS1, owner=owner("StatefulSet", "ss3")),
            [0, 50],
            id="another stateful set with partial pod label matches",
        ),
        pytest.param(
            [
                pod("e0", node_name="node1", labels=LABELS2),
                pod("e1", node_name="node1", labels=LABELS1),
                workload("ReplicaSet", "rs3", {"baz": "blah"}),
            ],
            pod("p", labels=LABELS1, owner=owner("ReplicaSet", "rs3", "extensions/v1beta1")),
            [100, 100],
            id="an owner of another API version is not read",
        ),
        pytest.param(
            [
                pod("e0", node_name="node1", labels=LABELS1),
                pod("e1", node_name="node2", labels=LABELS2),
                service("s1", {"baz": "blah"}),
                workload("ReplicaSet", "rs1", {"foo": "other"}),
            ],
            pod("p", labels=LABELS1, owner=owner("ReplicaSet", "rs1")),
            [100, 100],
            id="service and owner selectors are ANDed",
        ),
    ],
)
def test_spread_over_nodes(extra: list[Raw], incoming: Raw, expected: list[int]) -> None:
    objects = [node("node1"), node("node2"), *extra]
    assert spread_scores(objects, incoming, ["node1", "node2"]) == expected


def test_pods_being_deleted_do_not_count() -> None:
    deleting = pod("e1", node_name="node2", labels=LABELS1)
    deleting["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    objects = [
        node("node1"),
        node("node2"),
        pod("e0", node_name="node1", labels=LABELS1),
        deleting,
        service("s1", {"foo": "bar"}),
    ]
    assert spread_scores(objects, pod("p", labels=LABELS1), ["node1", "node2"]) == [0, 100]


def test_no_selector_means_nothing_to_count() -> None:
    cache = cluster(node("node1"), pod("e0", node_name="node1"))
    assert default_selector(cache, parse(pod("p", labels=LABELS1))) is None


ZONED = ["node1.zone1", "node1.zone2", "node2.zone2", "node1.zone3", "node2.zone3", "node3.zone3"]
Z_LABELS1 = {"label1": "l1", "baz": "blah"}
Z_LABELS2 = {"label2": "l2", "baz": "blah"}


@pytest.mark.parametrize(
    ("placed", "expected"),
    [
        pytest.param([], [100, 100, 100, 100, 100, 100], id="nothing scheduled"),
        pytest.param(
            [("node1.zone1", Z_LABELS2), ("node1.zone2", Z_LABELS2)],
            [100, 100, 100, 100, 100, 100],
            id="two pods, 0 matching",
        ),
        pytest.param(
            [("node1.zone1", Z_LABELS2), ("node1.zone2", Z_LABELS1)],
            [100, 0, 33, 100, 100, 100],
            id="two pods, 1 matching (in z2)",
        ),
        pytest.param(
            [
                ("node1.zone1", Z_LABELS2),
                ("node1.zone2", Z_LABELS1),
                ("node2.zone2", Z_LABELS1),
                ("node1.zone3", Z_LABELS2),
                ("node2.zone3", Z_LABELS1),
            ],
            [100, 0, 0, 66, 33, 66],
            id="five pods, 3 matching (z2=2, z3=1)",
        ),
        pytest.param(
            [
                ("node1.zone1", Z_LABELS1),
                ("node1.zone2", Z_LABELS1),
                ("node2.zone2", Z_LABELS2),
                ("node1.zone3", Z_LABELS1),
            ],
            [0, 0, 33, 0, 33, 33],
            id="four pods, 3 matching (z1=1, z2=1, z3=1)",
        ),
    ],
)
def test_spread_over_zones(placed: list[tuple[str, dict[str, str]]], expected: list[int]) -> None:
    objects = [node(name, labels={ZONE: name.split(".")[1]}) for name in ZONED]
    objects += [
        pod(f"e{i}", node_name=where, labels=labels) for i, (where, labels) in enumerate(placed)
    ]
    objects.append(service("s1", Z_LABELS1))
    assert spread_scores(objects, pod("p", labels=Z_LABELS1), ZONED) == expected
