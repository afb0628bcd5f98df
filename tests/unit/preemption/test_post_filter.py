"""The PostFilter as kube-scheduler's DefaultPreemption tests describe it, re-expressed
with our own clusters: eligibility, which nodes are candidates, the victims chosen on
each, the node picked, and the exact message users see when nothing can be done."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import node
from tests.unit.preemption.builders import budget, preempt, preemptor, running

Raw = dict[str, Any]


def keys(outcome_victims: tuple[Any, ...]) -> list[str]:
    return [victim.meta.key for victim in outcome_victims]


@pytest.mark.parametrize(
    ("objects", "node", "victims", "message"),
    [
        pytest.param(
            [node("n1", cpu="2"), running("low", "n1", 1, cpu="2"), preemptor()],
            "n1",
            ["default/low"],
            None,
            id="one node, one low-priority pod evicted",
        ),
        pytest.param(
            [
                node("n1", cpu="2"),
                node("n2", cpu="2"),
                running("a", "n1", 10, cpu="2"),
                running("b", "n2", 5, cpu="2"),
                preemptor(),
            ],
            "n2",
            ["default/b"],
            None,
            id="the node whose most important victim matters least",
        ),
        pytest.param(
            [node("n1", cpu="2"), running("peer", "n1", 100, cpu="2"), preemptor()],
            None,
            [],
            "preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod.",
            id="equal priority is never a victim",
        ),
        pytest.param(
            [
                node("n1", cpu="2"),
                node("n2", cpu="2"),
                running("low", "n1", 1, cpu="1"),
                running("big", "n1", 200, cpu="1"),
                running("peer", "n2", 100, cpu="2"),
                preemptor(cpu="2"),
            ],
            None,
            [],
            "preemption: 0/2 nodes are available: 1 Insufficient cpu,"
            " 1 No preemption victims found for incoming pod.",
            id="mixed reasons: not enough even after eviction, and no lower pod",
        ),
        pytest.param(
            [
                node("n1", cpu="2", unschedulable=True),
                node("n2", cpu="2", taints=[{"key": "k", "value": "v", "effect": "NoSchedule"}]),
                node("n3", cpu="2"),
                node("n4", cpu="2"),
                running("l3", "n3", 1, cpu="1"),
                running("h3", "n3", 200, cpu="1"),
                running("l4", "n4", 1, cpu="1"),
                running("h4", "n4", 200, cpu="1"),
                preemptor(cpu="2"),
            ],
            None,
            [],
            "preemption: 0/4 nodes are available: 2 Insufficient cpu,"
            " 2 Preemption is not helpful for scheduling.",
            id="cordoned and tainted nodes are not helped; small ones not enough",
        ),
        pytest.param(
            [
                node("n1", cpu="2", labels={"disk": "hdd"}),
                running("low", "n1", 1, cpu="1"),
                preemptor(nodeSelector={"disk": "ssd"}),
            ],
            None,
            [],
            "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling.",
            id="a node selector no eviction can change",
        ),
        pytest.param(
            [
                node("n1", cpu="2"),
                running("low", "n1", 1, cpu="2"),
                preemptor(preemptionPolicy="Never"),
            ],
            None,
            [],
            "preemption: not eligible due to preemptionPolicy=Never.",
            id="preemptionPolicy Never",
        ),
        pytest.param(
            [
                node("n1", cpu="3"),
                running("low", "n1", 1, cpu="1"),
                running("mid", "n1", 50, cpu="2"),
                preemptor(cpu="2"),
            ],
            "n1",
            ["default/mid"],
            None,
            id="the medium pod goes, the small low one is reprieved",
        ),
        pytest.param(
            [
                node("n1", cpu="3"),
                running("a", "n1", 1, cpu="1"),
                running("b", "n1", 2, cpu="1"),
                running("c", "n1", 3, cpu="1"),
                preemptor(cpu="2"),
            ],
            "n1",
            ["default/b", "default/a"],
            None,
            id="mixed priorities: the most important one is reprieved first",
        ),
    ],
)
def test_post_filter(
    objects: list[Raw], node: str | None, victims: list[str], message: str | None
) -> None:
    outcome = preempt(*objects)
    assert outcome.node == node
    assert keys(outcome.victims) == victims
    assert outcome.message == message


def test_a_nominated_pod_waits_for_the_victims_it_is_already_evicting() -> None:
    terminating = running("low", "n1", 1, cpu="2")
    terminating["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    terminating["status"]["conditions"] = [
        {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
    ]
    waiting = preemptor(cpu="2")
    waiting["status"] = {"nominatedNodeName": "n1"}
    outcome = preempt(node("n1", cpu="2"), terminating, waiting)
    assert outcome.node is None
    assert (
        outcome.message
        == "preemption: not eligible due to a terminating pod on the nominated node."
    )


def test_a_terminating_pod_not_evicted_by_preemption_does_not_hold_the_pod_back() -> None:
    leaving = running("low", "n1", 1, cpu="2")
    leaving["metadata"]["deletionTimestamp"] = "2026-01-01T00:01:00Z"
    waiting = preemptor(cpu="2")
    waiting["status"] = {"nominatedNodeName": "n1"}
    outcome = preempt(node("n1", cpu="2"), leaving, waiting)
    assert outcome.node == "n1"


@pytest.mark.parametrize(
    ("budgets", "node", "victims"),
    [
        pytest.param([], "n1", ["default/p1"], id="no budget: the node with the lower victim"),
        pytest.param(
            [budget("guard", {"app": "a"}, 0)],
            "n2",
            ["default/p2"],
            id="a node whose eviction breaks no budget wins over a lower victim",
        ),
        pytest.param(
            [budget("guard", {"app": "a"}, 1)],
            "n1",
            ["default/p1"],
            id="a budget with room is no violation",
        ),
        pytest.param(
            [budget("guard", {"app": "a"}, 0, disrupted=("p1",))],
            "n1",
            ["default/p1"],
            id="a pod the budget already counts as disrupted is no violation",
        ),
        pytest.param(
            [budget("guard", {"app": "a"}, 0), budget("other", {"app": "b"}, 0)],
            "n1",
            ["default/p1"],
            id="both nodes violate: the lower victim again",
        ),
    ],
)
def test_budgets_steer_the_node_choice(budgets: list[Raw], node: str, victims: list[str]) -> None:
    outcome = preempt(
        _node("n1"),
        _node("n2"),
        running("p1", "n1", 1, cpu="2", labels={"app": "a"}),
        running("p2", "n2", 5, cpu="2", labels={"app": "b"}),
        *budgets,
        preemptor(cpu="2"),
    )
    assert outcome.node == node
    assert keys(outcome.victims) == victims


def _node(name: str) -> Raw:
    return node(name, cpu="2")


def test_budget_violating_victims_are_reprieved_first() -> None:
    # Evicting either protected pod alone breaks the budget; the unprotected one goes.
    outcome = preempt(
        _node("n1"),
        running("guarded", "n1", 5, cpu="1", labels={"app": "a"}),
        running("free", "n1", 1, cpu="1"),
        budget("guard", {"app": "a"}, 0),
        preemptor(cpu="1"),
    )
    assert keys(outcome.victims) == ["default/free"]
    assert outcome.candidates["n1"].pdb_violations == 0


def test_a_violation_is_counted_when_nothing_else_helps() -> None:
    outcome = preempt(
        _node("n1"),
        running("guarded", "n1", 5, cpu="2", labels={"app": "a"}),
        budget("guard", {"app": "a"}, 0),
        preemptor(cpu="2"),
    )
    assert keys(outcome.victims) == ["default/guarded"]
    assert outcome.candidates["n1"].pdb_violations == 1
