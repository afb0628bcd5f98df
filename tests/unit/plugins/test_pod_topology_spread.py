"""PodTopologySpread's filter and score.

The rows restate the cases of upstream's filtering_test.go and scoring_test.go
(podtopologyspread) in our own data: skew per zone and per node, maxSkew, a pod that
does not match its own selector, a node missing the key, minDomains, the node inclusion
policies, other namespaces and terminating pods, two constraints at once; the scores with
the log(domains + 2) weight and upstream's normalization, ignored nodes, and the system
default constraints for a pod a Service selects.
"""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import cluster, node, parse, pod, service
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.status import Code
from volsched.scheduling.plugins.pod_topology_spread import (
    REASON_CONSTRAINTS,
    REASON_MISSING_LABEL,
    DefaultConstraint,
    PodTopologySpread,
)

Raw = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
FOO = {"foo": "bar"}
# a, b in zone1; x, y in zone2.
NODES = {"a": "zone1", "b": "zone1", "x": "zone2", "y": "zone2"}


def nodes(
    layout: dict[str, str | None] = NODES, taints: dict[str, list[Raw]] | None = None
) -> list[Raw]:
    return [
        node(name, labels={ZONE: zone} if zone else {}, taints=(taints or {}).get(name))
        for name, zone in layout.items()
    ]


def constraint(
    key: str = ZONE,
    max_skew: int = 1,
    when: str = "DoNotSchedule",
    selector: Raw | None = None,
    **extra: Any,
) -> Raw:
    body: Raw = {
        "maxSkew": max_skew,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": selector
        if selector is not None
        else {"matchExpressions": [{"key": "foo", "operator": "Exists"}]},
    }
    body.update(extra)
    return body


def placed(counts: dict[str, int], labels: Raw = FOO, namespace: str = "default") -> list[Raw]:
    return [
        pod(f"{where}-{index}", namespace=namespace, node_name=where, labels=labels)
        for where, count in counts.items()
        for index in range(count)
    ]


def incoming(*constraints: Raw, labels: Raw = FOO, extra: Raw | None = None) -> Pod:
    spec: Raw = {"topologySpreadConstraints": list(constraints), **(extra or {})}
    parsed: Pod = parse(pod("incoming", labels=labels, spec=spec))
    return parsed


def feasible(plugin: PodTopologySpread, target: Pod) -> dict[str, str | None]:
    """Each node: None when it fits, else the reason (and the code must be upstream's)."""
    state = CycleState()
    _, status = plugin.pre_filter(state, target)
    names = sorted(plugin.cluster.nodes)
    if status.code is Code.SKIP:
        return dict.fromkeys(names)
    result: dict[str, str | None] = {}
    for name in names:
        verdict = plugin.filter(state, target, plugin.cluster.nodes[name])
        if verdict is None:
            result[name] = None
            continue
        (reason,) = verdict.reasons
        expected = (
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE
            if reason == REASON_MISSING_LABEL
            else Code.UNSCHEDULABLE
        )
        assert verdict.code is expected
        result[name] = reason
    return result


SKEW = REASON_CONSTRAINTS
MISSING = REASON_MISSING_LABEL


@pytest.mark.parametrize(
    ("objects", "target", "expected"),
    [
        pytest.param(
            nodes(),
            incoming(constraint()),
            {"a": None, "b": None, "x": None, "y": None},
            id="no pods",
        ),
        # zone1 1, zone2 0: 1 + 1 - 0 = 2 > 1 in zone1.
        pytest.param(
            nodes() + placed({"a": 1}),
            incoming(constraint()),
            {"a": SKEW, "b": SKEW, "x": None, "y": None},
            id="one zone ahead",
        ),
        # zone1 3, zone2 1: zone1 3 + 1 - 1 = 3; zone2 1 + 1 - 1 = 1.
        pytest.param(
            nodes() + placed({"a": 2, "b": 1, "x": 1}),
            incoming(constraint(max_skew=2)),
            {"a": SKEW, "b": SKEW, "x": None, "y": None},
            id="maxSkew 2 still too little",
        ),
        pytest.param(
            nodes() + placed({"a": 2, "b": 1, "x": 1}),
            incoming(constraint(max_skew=3)),
            {"a": None, "b": None, "x": None, "y": None},
            id="maxSkew 3 allows it",
        ),
        # The pod does not match its own selector: 1 + 0 - 0 = 1.
        pytest.param(
            nodes() + placed({"a": 1}),
            incoming(constraint(), labels={"other": "x"}),
            {"a": None, "b": None, "x": None, "y": None},
            id="a pod that does not match itself",
        ),
        pytest.param(
            nodes({"a": "zone1", "c": None}) + placed({"a": 1}),
            incoming(constraint()),
            {"a": None, "c": MISSING},
            id="a node without the key",
        ),
        # Per node: a has 1, the others 0.
        pytest.param(
            nodes() + placed({"a": 1}),
            incoming(constraint(HOST)),
            {"a": SKEW, "b": None, "x": None, "y": None},
            id="per node",
        ),
        # Two domains exist, minDomains 3: the global minimum is 0, so zone2's 1 + 1 = 2.
        pytest.param(
            nodes() + placed({"a": 1, "x": 1}),
            incoming(constraint(minDomains=3)),
            {"a": SKEW, "b": SKEW, "x": SKEW, "y": SKEW},
            id="fewer domains than minDomains",
        ),
        pytest.param(
            nodes() + placed({"a": 1, "x": 1}),
            incoming(constraint(minDomains=2)),
            {"a": None, "b": None, "x": None, "y": None},
            id="enough domains",
        ),
        # The pod may only go to zone1 (nodeSelector); Honor (the default) counts zone1
        # alone, whose minimum is its own 1: 1 + 1 - 1 = 1.
        pytest.param(
            nodes() + placed({"a": 1, "b": 1}),
            incoming(constraint(), extra={"nodeSelector": {ZONE: "zone1"}}),
            {"a": None, "b": None, "x": None, "y": None},
            id="nodeAffinityPolicy Honor counts only eligible nodes",
        ),
        pytest.param(
            nodes() + placed({"a": 1, "b": 1}),
            incoming(
                constraint(nodeAffinityPolicy="Ignore"), extra={"nodeSelector": {ZONE: "zone1"}}
            ),
            {"a": SKEW, "b": SKEW, "x": None, "y": None},
            id="nodeAffinityPolicy Ignore counts zone2 too",
        ),
        # x and y are tainted; with Honor their pods and domain do not count.
        pytest.param(
            nodes(
                taints={n: [{"key": "k", "value": "v", "effect": "NoSchedule"}] for n in ("x", "y")}
            )
            + placed({"a": 1}),
            incoming(constraint(nodeTaintsPolicy="Honor")),
            {"a": None, "b": None, "x": None, "y": None},
            id="nodeTaintsPolicy Honor leaves tainted nodes out",
        ),
        pytest.param(
            nodes(
                taints={n: [{"key": "k", "value": "v", "effect": "NoSchedule"}] for n in ("x", "y")}
            )
            + placed({"a": 1}),
            incoming(constraint()),
            {"a": SKEW, "b": SKEW, "x": None, "y": None},
            id="nodeTaintsPolicy Ignore counts them",
        ),
        pytest.param(
            nodes() + placed({"a": 2}, namespace="elsewhere"),
            incoming(constraint()),
            {"a": None, "b": None, "x": None, "y": None},
            id="pods of other namespaces do not count",
        ),
        # zone: zone1 1, zone2 1 -> fine; per node: a has 1.
        pytest.param(
            nodes() + placed({"a": 1, "x": 1}),
            incoming(constraint(), constraint(HOST, when="DoNotSchedule")),
            {"a": SKEW, "b": None, "x": SKEW, "y": None},
            id="two constraints",
        ),
        pytest.param(
            nodes() + placed({"a": 3}),
            incoming(constraint(when="ScheduleAnyway")),
            {"a": None, "b": None, "x": None, "y": None},
            id="ScheduleAnyway never filters",
        ),
    ],
)
def test_filter(objects: list[Raw], target: Pod, expected: dict[str, str | None]) -> None:
    assert feasible(PodTopologySpread(cluster(*objects)), target) == expected


def test_terminating_pods_do_not_count() -> None:
    leaving = placed({"a": 2})
    for raw in leaving:
        raw["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    plugin = PodTopologySpread(cluster(*nodes(), *leaving))
    assert set(feasible(plugin, incoming(constraint())).values()) == {None}


def test_the_constraint_validation_names_the_field() -> None:
    from volsched.cache.errors import ObjectError

    with pytest.raises(ObjectError, match="minDomains"):
        incoming(constraint(when="ScheduleAnyway", minDomains=2))
    with pytest.raises(ObjectError, match="maxSkew"):
        incoming(constraint(max_skew=0))


# -- score -------------------------------------------------------------------------


def scores(
    plugin: PodTopologySpread, target: Pod, names: list[str] | None = None
) -> dict[str, int]:
    state = CycleState()
    infos = [plugin.cluster.nodes[n] for n in (names or sorted(plugin.cluster.nodes))]
    status = plugin.pre_score(state, target, infos)
    if status.code is Code.SKIP:
        return dict.fromkeys((i.name for i in infos), 0)
    raw = {info.name: plugin.score(state, target, info) for info in infos}
    plugin.normalize(state, target, raw)
    return raw


@pytest.mark.parametrize(
    ("objects", "target", "expected"),
    [
        # Two zones, weight log(4) = 1.386: zone1 holds 2 -> 2.77 -> 3; zone2 0.
        # Normalized 100 * (3 + 0 - s) / 3: zone1 0, zone2 100.
        pytest.param(
            nodes() + placed({"a": 1, "b": 1}),
            incoming(constraint(when="ScheduleAnyway")),
            {"a": 0, "b": 0, "x": 100, "y": 100},
            id="per zone",
        ),
        # Four nodes, weight log(6) = 1.792: a 2 -> 3.58 -> 4; b 1 -> 1.79 -> 2; x, y 0.
        # 100 * (4 + 0 - s) // 4: 0, 50, 100, 100.
        pytest.param(
            nodes() + placed({"a": 2, "b": 1}),
            incoming(constraint(HOST, when="ScheduleAnyway")),
            {"a": 0, "b": 50, "x": 100, "y": 100},
            id="per node",
        ),
        # maxSkew 3 adds 2 everywhere: zone1 2.77 + 2 -> 5, zone2 2: 100 * (5 + 2 - s) // 5.
        pytest.param(
            nodes() + placed({"a": 1, "b": 1}),
            incoming(constraint(max_skew=3, when="ScheduleAnyway")),
            {"a": 40, "b": 40, "x": 100, "y": 100},
            id="maxSkew shifts every node",
        ),
        # One domain, weight log(3): a and b both 1.1 -> 1; min = max = 1 -> 100 each.
        pytest.param(
            nodes({"a": "zone1", "b": "zone1", "c": None}) + placed({"a": 1}),
            incoming(constraint(when="ScheduleAnyway")),
            {"a": 100, "b": 100, "c": 0},
            id="a node missing the key is ignored: it scores 0",
        ),
        pytest.param(
            nodes() + placed({"a": 3}),
            incoming(constraint(when="DoNotSchedule")),
            {"a": 0, "b": 0, "x": 0, "y": 0},
            id="DoNotSchedule does not score",
        ),
    ],
)
def test_score(objects: list[Raw], target: Pod, expected: dict[str, int]) -> None:
    assert scores(PodTopologySpread(cluster(*objects)), target) == expected


def test_system_defaults_spread_a_services_pods() -> None:
    """No constraints of its own, selected by a Service: hostname maxSkew 3 and zone
    maxSkew 5, ScheduleAnyway. Three on a (zone1): zone weight log(4), host log(6)."""
    objects = [*nodes(), service("web", FOO), *placed({"a": 3})]
    plugin = PodTopologySpread(cluster(*objects))
    target: Pod = parse(pod("incoming", labels=FOO))
    result = scores(plugin, target)
    # a: host 3 * 1.792 + 2 = 7.38, zone 3 * 1.386 + 4 = 8.16 -> 16; b: 2 + 8.16 -> 10;
    # x, y: 2 + 4 -> 6. 100 * (16 + 6 - s) // 16: 37, 75, 100, 100.
    assert result == {"a": 37, "b": 75, "x": 100, "y": 100}
    # Nothing selects this pod: no default constraints, nothing to score.
    loner: Pod = parse(pod("loner", labels={"solo": "yes"}))
    assert set(scores(plugin, loner).values()) == {0}
    # A profile may list its own defaults, or none.
    listed = PodTopologySpread(cluster(*objects), (DefaultConstraint(1, ZONE),), "List")
    assert scores(listed, target) == {"a": 0, "b": 0, "x": 100, "y": 100}
    none = PodTopologySpread(cluster(*objects), (), "List")
    assert set(scores(none, target).values()) == {0}


def test_match_label_keys_count_only_the_pods_own_revision() -> None:
    """matchLabelKeys folds the pod's own value of the key into the selector: pods of an
    older revision (another pod-template-hash) do not count."""
    old = placed({"a": 2}, labels={**FOO, "pod-template-hash": "old"})
    target = incoming(
        constraint(matchLabelKeys=["pod-template-hash"]),
        labels={**FOO, "pod-template-hash": "new"},
    )
    assert set(feasible(PodTopologySpread(cluster(*nodes(), *old)), target).values()) == {None}
    same = placed({"a": 2}, labels={**FOO, "pod-template-hash": "new"})
    verdicts = feasible(PodTopologySpread(cluster(*nodes(), *same)), target)
    assert verdicts["a"] == SKEW and verdicts["x"] is None
