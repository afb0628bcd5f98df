"""PodToleratesNodeTaints and TaintTolerationPriority, with upstream's tables
(taint_toleration_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import cluster, node, parse, pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.status import Code
from volsched.scheduling.plugins.taint_toleration import REASON_UNTOLERATED, TaintToleration

Raw = dict[str, Any]


def taint(key: str, value: str, effect: str) -> Raw:
    return {"key": key, "value": value, "effect": effect}


def toleration(key: str, value: str, effect: str, operator: str = "Equal") -> Raw:
    return {"key": key, "operator": operator, "value": value, "effect": effect}


@pytest.mark.parametrize(
    ("tolerations", "taints", "reason"),
    [
        pytest.param([], [], None, id="no taints, no tolerations"),
        pytest.param(
            [],
            [taint("dedicated", "user1", "NoSchedule")],
            REASON_UNTOLERATED,
            id="no tolerations",
        ),
        pytest.param(
            [toleration("dedicated", "user1", "NoSchedule")],
            [taint("dedicated", "user1", "NoSchedule")],
            None,
            id="tolerated",
        ),
        pytest.param(
            [toleration("dedicated", "user2", "NoSchedule")],
            [taint("dedicated", "user1", "NoSchedule")],
            REASON_UNTOLERATED,
            id="other value",
        ),
        pytest.param(
            [toleration("foo", "", "NoSchedule", operator="Exists")],
            [taint("foo", "bar", "NoSchedule")],
            None,
            id="Exists tolerates any value",
        ),
        pytest.param(
            [
                toleration("dedicated", "user2", "NoSchedule"),
                toleration("foo", "", "NoSchedule", "Exists"),
            ],
            [taint("dedicated", "user2", "NoSchedule"), taint("foo", "bar", "NoSchedule")],
            None,
            id="every taint tolerated",
        ),
        pytest.param(
            [toleration("foo", "bar", "PreferNoSchedule")],
            [taint("foo", "bar", "NoSchedule")],
            REASON_UNTOLERATED,
            id="toleration for another effect",
        ),
        pytest.param(
            [toleration("foo", "bar", "")],
            [taint("foo", "bar", "NoSchedule")],
            None,
            id="empty effect tolerates every effect",
        ),
        pytest.param(
            [toleration("dedicated", "user1", "NoSchedule")],
            [taint("dedicated", "user1", "PreferNoSchedule")],
            None,
            id="PreferNoSchedule never filters",
        ),
        pytest.param(
            [],
            [taint("evict", "", "NoExecute")],
            REASON_UNTOLERATED,
            id="NoExecute filters",
        ),
        pytest.param(
            [toleration("a", "1", "NoSchedule")],
            [
                taint("a", "1", "NoSchedule"),
                taint("b", "2", "NoSchedule"),
                taint("c", "3", "NoExecute"),
            ],
            REASON_UNTOLERATED,
            id="one untolerated taint among tolerated ones",
        ),
        pytest.param(
            [{"operator": "Exists"}],
            [taint("a", "1", "NoSchedule"), taint("c", "3", "NoExecute")],
            None,
            id="an empty key with Exists tolerates everything",
        ),
    ],
)
def test_filter(tolerations: list[Raw], taints: list[Raw], reason: str | None) -> None:
    cache = cluster(node("n1", taints=taints))
    incoming = parse(pod("p", spec={"tolerations": tolerations}))
    status = TaintToleration(cache).filter(CycleState(), incoming, cache.nodes["n1"])
    if reason is None:
        assert status is None
    else:
        assert status is not None
        assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == (reason,)


@pytest.mark.parametrize(
    ("tolerations", "node_taints", "expected"),
    [
        pytest.param(
            [toleration("foo", "bar", "PreferNoSchedule")],
            [[taint("foo", "bar", "PreferNoSchedule")], [taint("foo", "blah", "PreferNoSchedule")]],
            [100, 0],
            id="tolerated taints score higher than untolerated ones",
        ),
        pytest.param(
            [
                toleration("cpu-type", "arm64", "PreferNoSchedule"),
                toleration("disk-type", "ssd", "PreferNoSchedule"),
            ],
            [
                [],
                [taint("cpu-type", "arm64", "PreferNoSchedule")],
                [
                    taint("cpu-type", "arm64", "PreferNoSchedule"),
                    taint("disk-type", "ssd", "PreferNoSchedule"),
                ],
            ],
            [100, 100, 100],
            id="tolerated taints do not count, however many",
        ),
        pytest.param(
            [toleration("foo", "bar", "PreferNoSchedule")],
            [
                [],
                [taint("cpu-type", "arm64", "PreferNoSchedule")],
                [
                    taint("cpu-type", "arm64", "PreferNoSchedule"),
                    taint("disk-type", "ssd", "PreferNoSchedule"),
                ],
            ],
            [100, 50, 0],
            id="the more untolerated taints the lower the score",
        ),
        pytest.param(
            [toleration("cpu-type", "arm64", "NoSchedule"), toleration("disk-type", "ssd", "")],
            [
                [],
                [taint("cpu-type", "arm64", "NoSchedule")],
                [
                    taint("cpu-type", "arm64", "PreferNoSchedule"),
                    taint("disk-type", "ssd", "PreferNoSchedule"),
                ],
            ],
            [100, 100, 0],
            id="only PreferNoSchedule taints and tolerations count",
        ),
        pytest.param([], [[], []], [100, 100], id="no taints and no tolerations"),
    ],
)
def test_score(tolerations: list[Raw], node_taints: list[list[Raw]], expected: list[int]) -> None:
    cache = cluster(*(node(f"n{i}", taints=taints) for i, taints in enumerate(node_taints)))
    plugin = TaintToleration(cache)
    incoming = parse(pod("p", spec={"tolerations": tolerations}))
    infos = [cache.nodes[f"n{i}"] for i in range(len(node_taints))]
    state = CycleState()
    assert plugin.pre_score(state, incoming, infos).code is Code.SUCCESS
    scores = {info.name: plugin.score(state, incoming, info) for info in infos}
    plugin.normalize(state, incoming, scores)
    assert list(scores.values()) == expected
