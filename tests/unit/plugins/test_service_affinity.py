"""The policy's serviceAffinity predicate and serviceAntiAffinity priority, with
upstream's tables (service_affinity_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import cluster, node, parse, pod, service
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.status import Code
from volsched.scheduling.plugins.service_affinity import ServiceAffinity, ServiceAntiAffinity

Raw = dict[str, Any]
SELECTOR = {"foo": "bar"}
MACHINES = {
    "machine1": {"region": "r1", "zone": "z11"},
    "machine2": {"region": "r1", "zone": "z12"},
    "machine3": {"region": "r2", "zone": "z21"},
    "machine4": {"region": "r2", "zone": "z22"},
    "machine5": {"region": "r2", "zone": "z22"},
}


def affinity_status(
    extra: list[Raw], incoming: Raw, labels: tuple[str, ...], target: str, pre_filter: bool = True
) -> Any:
    objects = [node(name, labels=labels) for name, labels in MACHINES.items()]
    cache = cluster(*objects, *extra)
    plugin = ServiceAffinity(cache, labels)
    state = CycleState()
    target_pod = parse(incoming)
    if pre_filter:
        _, status = plugin.pre_filter(state, target_pod)
        assert status.code is Code.SUCCESS
    return plugin.filter(state, target_pod, cache.nodes[target])


@pytest.mark.parametrize(
    ("extra", "incoming", "labels", "target", "reason"),
    [
        pytest.param([], pod("p"), ("region",), "machine1", None, id="nothing scheduled"),
        pytest.param(
            [],
            pod("p", spec={"nodeSelector": {"region": "r1"}}),
            ("region",),
            "machine1",
            None,
            id="pod with region label match",
        ),
        pytest.param(
            [],
            pod("p", spec={"nodeSelector": {"region": "r2"}}),
            ("region",),
            "machine1",
            "(region)",
            id="pod with region label mismatch",
        ),
        pytest.param(
            [pod("e0", node_name="machine1", labels=SELECTOR), service("s", SELECTOR)],
            pod("p", labels=SELECTOR),
            ("region",),
            "machine1",
            None,
            id="service pod on same node",
        ),
        pytest.param(
            [pod("e0", node_name="machine2", labels=SELECTOR), service("s", SELECTOR)],
            pod("p", labels=SELECTOR),
            ("region",),
            "machine1",
            None,
            id="service pod on different node, region match",
        ),
        pytest.param(
            [pod("e0", node_name="machine3", labels=SELECTOR), service("s", SELECTOR)],
            pod("p", labels=SELECTOR),
            ("region",),
            "machine1",
            "(region)",
            id="service pod on different node, region mismatch",
        ),
        pytest.param(
            [
                pod("e0", node_name="machine3", labels=SELECTOR, namespace="ns1"),
                service("s", SELECTOR, namespace="ns2"),
            ],
            pod("p", labels=SELECTOR, namespace="ns1"),
            ("region",),
            "machine1",
            None,
            id="service in different namespace, region mismatch",
        ),
        pytest.param(
            [
                pod("e0", node_name="machine3", labels=SELECTOR, namespace="ns2"),
                service("s", SELECTOR, namespace="ns1"),
            ],
            pod("p", labels=SELECTOR, namespace="ns1"),
            ("region",),
            "machine1",
            None,
            id="pod in different namespace, region mismatch",
        ),
        pytest.param(
            [
                pod("e0", node_name="machine3", labels=SELECTOR, namespace="ns1"),
                service("s", SELECTOR, namespace="ns1"),
            ],
            pod("p", labels=SELECTOR, namespace="ns1"),
            ("region",),
            "machine1",
            "(region)",
            id="service and pod in same namespace, region mismatch",
        ),
        pytest.param(
            [pod("e0", node_name="machine2", labels=SELECTOR), service("s", SELECTOR)],
            pod("p", labels=SELECTOR),
            ("region", "zone"),
            "machine1",
            "(zone)",
            id="service pod on different node, multiple labels, not all match",
        ),
        pytest.param(
            [pod("e0", node_name="machine5", labels=SELECTOR), service("s", SELECTOR)],
            pod("p", labels=SELECTOR),
            ("region", "zone"),
            "machine4",
            None,
            id="service pod on different node, multiple labels, all match",
        ),
        pytest.param(
            [pod("e0", node_name="machine4", labels=SELECTOR), service("s", SELECTOR)],
            pod("p", labels=SELECTOR),
            ("region", "zone"),
            "machine1",
            "(region, zone)",
            id="every failing label is named",
        ),
        pytest.param(
            [pod("e0", node_name="machine3", labels=SELECTOR), service("s", SELECTOR)],
            pod("p", labels=SELECTOR, spec={"nodeSelector": {"zone": "z11"}}),
            ("region", "zone"),
            "machine1",
            "(region)",
            id="the pod's own selector wins over the peer's node",
        ),
        pytest.param(
            [pod("e0", node_name="machine3", labels=SELECTOR)],
            pod("p", labels=SELECTOR),
            ("region",),
            "machine1",
            None,
            id="no service selects the pod: nothing to follow",
        ),
        pytest.param(
            [
                pod("e0", node_name="machine3", labels={"foo": "bar"}),
                service("s", SELECTOR),
            ],
            pod("p", labels={"foo": "bar", "tier": "web"}),
            ("region",),
            "machine1",
            None,
            id="peers must carry all of the pod's labels",
        ),
        pytest.param(
            [
                pod("e0", node_name="machine3", labels={"foo": "bar", "tier": "web"}),
                service("s", SELECTOR),
            ],
            pod("p", labels=SELECTOR),
            ("region",),
            "machine1",
            "(region)",
            id="a peer may carry more labels than the pod",
        ),
    ],
)
def test_service_affinity(
    extra: list[Raw], incoming: Raw, labels: tuple[str, ...], target: str, reason: str | None
) -> None:
    for pre_filter in (True, False):
        status = affinity_status(extra, incoming, labels, target, pre_filter)
        if reason is None:
            assert status is None
        else:
            assert status is not None
            assert status.code is Code.UNSCHEDULABLE
            assert status.reasons == (f"node(s) didn't match service affinity {reason}",)


def test_first_peer_in_node_order_decides() -> None:
    objects = [
        *(node(name, labels=labels) for name, labels in MACHINES.items()),
        pod("e0", node_name="machine3", labels=SELECTOR),
        pod("e1", node_name="machine2", labels=SELECTOR),
        service("s", SELECTOR),
    ]
    cache = cluster(*objects)
    plugin = ServiceAffinity(cache, ("region",))
    state = CycleState()
    incoming = parse(pod("p", labels=SELECTOR))
    plugin.pre_filter(state, incoming)
    # machine2 comes first in node order, so the pod follows it to region r1.
    assert plugin.filter(state, incoming, cache.nodes["machine1"]) is None
    assert plugin.filter(state, incoming, cache.nodes["machine3"]) is not None


LABELS1 = {"foo": "bar", "baz": "blah"}
LABELS2 = {"bar": "foo", "baz": "blah"}
ANTI_NODES = {
    "machine01": {"name": "value"},
    "machine02": {"name": "value"},
    "machine11": {"zone": "zone1"},
    "machine12": {"zone": "zone1"},
    "machine21": {"zone": "zone2"},
    "machine22": {"zone": "zone2"},
}


@pytest.mark.parametrize(
    ("extra", "incoming", "expected"),
    [
        pytest.param([], pod("p"), [0, 0, 100, 100, 100, 100], id="nothing scheduled"),
        pytest.param(
            [pod("e0", node_name="machine11", labels=LABELS1)],
            pod("p", labels=LABELS1),
            [0, 0, 100, 100, 100, 100],
            id="no services",
        ),
        pytest.param(
            [pod("e0", node_name="machine11", labels=LABELS2), service("s", {"key": "value"})],
            pod("p", labels=LABELS1),
            [0, 0, 100, 100, 100, 100],
            id="different services",
        ),
        pytest.param(
            [
                pod("e0", node_name="machine11", labels=LABELS2),
                pod("e1", node_name="machine11", labels=LABELS1),
                pod("e2", node_name="machine21", labels=LABELS2),
                service("s", LABELS1),
            ],
            pod("p", labels=LABELS1),
            [0, 0, 0, 0, 100, 100],
            id="three pods, one service pod",
        ),
        pytest.param(
            [
                pod("e0", node_name="machine11", labels=LABELS1),
                pod("e1", node_name="machine11", labels=LABELS2),
                pod("e2", node_name="machine21", labels=LABELS1),
                pod("e3", node_name="machine21", labels=LABELS1),
                service("s", LABELS1),
            ],
            pod("p", labels=LABELS1),
            # 3 service pods: zone1 holds 1 -> 100 * 2 / 3 = 66, zone2 holds 2 -> 33.
            [0, 0, 66, 66, 33, 33],
            id="four pods, three service pods",
        ),
        pytest.param(
            [
                pod("e0", node_name="machine01", labels=LABELS1),
                pod("e1", node_name="machine11", labels=LABELS2),
                pod("e2", node_name="machine21", labels=LABELS1),
                service("s", {"baz": "blah"}),
            ],
            pod("p", labels=LABELS1),
            # 3 service pods (one on an unlabelled node): zone1 1 -> 66, zone2 1 -> 66.
            [0, 0, 66, 66, 66, 66],
            id="service pod on a node without the label",
        ),
        pytest.param(
            [
                pod("e0", node_name="machine11", labels=LABELS1),
                pod("e1", node_name="machine21", labels=LABELS1, namespace="other"),
                service("s", LABELS1),
            ],
            pod("p", labels=LABELS1),
            [0, 0, 0, 0, 100, 100],
            id="pods of other namespaces do not count",
        ),
    ],
)
def test_service_anti_affinity(extra: list[Raw], incoming: Raw, expected: list[int]) -> None:
    objects = [node(name, labels=labels) for name, labels in ANTI_NODES.items()]
    cache = cluster(*objects, *extra)
    plugin = ServiceAntiAffinity(cache, "zone")
    target = parse(incoming)
    infos = [cache.nodes[name] for name in ANTI_NODES]
    state = CycleState()
    assert plugin.pre_score(state, target, infos).code is Code.SUCCESS
    scores = {info.name: plugin.score(state, target, info) for info in infos}
    plugin.normalize(state, target, scores)
    assert list(scores.values()) == expected


def test_anti_affinity_follows_the_first_service_by_name() -> None:
    objects = [node(name, labels=labels) for name, labels in ANTI_NODES.items()]
    cache = cluster(
        *objects,
        pod("e0", node_name="machine11", labels={"app": "a", "tier": "x"}),
        pod("e1", node_name="machine21", labels={"app": "a", "tier": "y"}),
        service("b-service", {"app": "a"}),
        service("a-service", {"tier": "x"}),
    )
    plugin = ServiceAntiAffinity(cache, "zone")
    target = parse(pod("p", labels={"app": "a", "tier": "x"}))
    # a-service selects only e0.
    assert [
        plugin.score(CycleState(), target, cache.nodes[n]) for n in ("machine11", "machine21")
    ] == [1, 0]
