"""Extender answers folded into a decision (upstream's findNodesThatPassExtenders and the
extender part of prioritizeNodes), and the answers' wire shapes checked."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.support import cluster, node, pod
from volsched.daemon.extenders.wire import (
    BadRequest,
    Victims,
    filter_answer,
    host_priorities,
    preemption_answer,
)
from volsched.scheduling.extender_results import (
    apply_filter_result,
    combined_scores,
    failed_cycle,
)
from volsched.scheduling.framework.runner import Decision, Scheduler
from volsched.scheduling.policy import default_policy
from volsched.scheduling.profile_builder import PluginFactory, build_profile


def feasible_decision() -> tuple[Scheduler, Decision]:
    cache = cluster(node("a"), node("b"), node("c"), pod("p", cpu="100m"))
    profile = build_profile(default_policy(with_storage=False), PluginFactory(cache, ()), 0)
    scheduler = Scheduler(cache, profile, random.Random(1))
    decision = scheduler.find_feasible(cache.pods["default/p"])
    assert sorted(info.name for info in decision.feasible) == ["a", "b", "c"]
    return scheduler, decision


@pytest.mark.parametrize(
    ("kept", "failed", "unresolvable", "feasible", "filtered", "unresolvable_nodes"),
    [
        (["a", "b", "c"], {}, {}, ["a", "b", "c"], {}, set()),
        (["a", "c"], {"b": "no widgets"}, {}, ["a", "c"], {"b": ["no widgets"]}, set()),
        # failedAndUnresolvable wins when a node is in both maps.
        (
            ["a"],
            {"b": "soft", "c": "soft"},
            {"c": "hard"},
            ["a"],
            {"b": ["soft"], "c": ["hard"]},
            {"c"},
        ),
        # Dropped without a reason: no reason shown, and no eviction can help it.
        (["a", "b"], {}, {}, ["a", "b"], {"c": []}, {"c"}),
    ],
)
def test_a_filter_answer_rejects_what_it_did_not_keep(
    kept: list[str],
    failed: dict[str, str],
    unresolvable: dict[str, str],
    feasible: list[str],
    filtered: dict[str, list[str]],
    unresolvable_nodes: set[str],
) -> None:
    _, decision = feasible_decision()
    apply_filter_result(decision, "http://x:1", kept, failed, unresolvable)
    assert [info.name for info in decision.feasible] == feasible
    assert decision.filtered == filtered
    assert decision.unresolvable_nodes == unresolvable_nodes
    assert set(decision.rejected_by) == set(filtered)
    assert decision.message is None


def test_nothing_kept_is_upstreams_fit_error() -> None:
    _, decision = feasible_decision()
    apply_filter_result(decision, "http://x:1", [], {"a": "no widgets", "b": "no widgets"}, {})
    assert decision.feasible == []
    assert decision.message == "0/3 nodes are available: 2 no widgets."


def test_an_extender_error_fails_the_cycle() -> None:
    _, decision = feasible_decision()
    failed_cycle(decision, "failed filter with extender at URL http://x:1/filter, code 500")
    assert decision.feasible == [] and decision.node is None
    assert decision.error == decision.message


def test_extra_scores_decide_between_equal_nodes() -> None:
    scheduler, decision = feasible_decision()
    scheduler.select(decision, combined_scores([([("b", 1)], 1)]))
    assert decision.node == "b"
    assert decision.scores["b"] == decision.scores["a"] + 10


@pytest.mark.parametrize(
    ("answers", "totals"),
    [
        ([], {}),
        ([([("a", 10), ("b", 0)], 1)], {"a": 100, "b": 0}),
        ([([("a", 3)], 2), ([("a", 1), ("b", 5)], 4)], {"a": 3 * 2 * 10 + 1 * 4 * 10, "b": 200}),
    ],
)
def test_scores_are_score_times_weight_scaled_to_the_scheduler_range(
    answers: list[tuple[list[tuple[str, int]], int]], totals: dict[str, int]
) -> None:
    assert combined_scores(answers) == totals


@pytest.mark.parametrize(
    ("body", "kept", "error"),
    [
        ({"NodeNames": ["a"], "FailedNodes": {"b": "x"}}, ("a",), ""),
        ({"nodes": {"items": [{"metadata": {"name": "a"}}]}}, ("a",), ""),
        ({"Error": "boom"}, (), "boom"),
        ({}, (), ""),
    ],
)
def test_filter_answers(body: dict[str, Any], kept: tuple[str, ...], error: str) -> None:
    answer = filter_answer(body)
    assert (answer.kept, answer.error) == (kept, error)


@pytest.mark.parametrize(
    ("parse", "body", "problem"),
    [
        (filter_answer, [], "must be a JSON object"),
        (filter_answer, {"NodeNames": "a"}, "NodeNames must be a list"),
        (filter_answer, {"FailedNodes": {"a": 1}}, "FailedNodes must map node names"),
        (host_priorities, {"Host": "a"}, "must be a list"),
        (host_priorities, [{"Host": "a", "Score": "9"}], "needs a Host name and an integer Score"),
        (preemption_answer, {"NodeNameToMetaVictims": []}, "must be an object"),
        (preemption_answer, {"NodeNameToMetaVictims": {"a": {"Pods": 3}}}, ".Pods must be a list"),
    ],
)
def test_answers_of_the_wrong_shape_are_refused(parse: Any, body: Any, problem: str) -> None:
    with pytest.raises(BadRequest, match=problem):
        parse(body)


def test_preemption_answers_are_victims_by_uid() -> None:
    body = {"nodeNameToMetaVictims": {"a": {"Pods": [{"UID": "u1"}], "NumPDBViolations": 1}}}
    assert preemption_answer(body) == {"a": Victims(("u1",), 1)}
