"""How a decision compares with the node another scheduler bound the pod to: one row per
case, decisions built as the scheduler leaves them (every node filtered or scored)."""

from __future__ import annotations

import pytest

from tests.support import parse, pod
from volsched.scheduling.framework.runner import Decision
from volsched.scheduling.shadow.comparison import Cause, Comparison, Outcome, compare

NODES = frozenset({"a", "b", "c", "d"})
TAINT = "node(s) had untolerated taint(s)"
CPU = "Insufficient cpu"
FIT_ERROR = "0/4 nodes are available: 4 Insufficient cpu."


def decision(
    node: str | None = "a",
    scores: dict[str, int] | None = None,
    filtered: dict[str, list[str]] | None = None,
    message: str | None = None,
    error: str | None = None,
) -> Decision:
    made = Decision(
        parse(pod("web", spec={"schedulerName": "default-scheduler"})),
        node=node,
        filtered=filtered if filtered is not None else {"d": [TAINT]},
        message=message,
        error=error,
    )
    made.scores = scores if scores is not None else {"a": 180, "b": 150, "c": 180}
    return made


CASES = [
    # (what, decision, their node, outcome, reasons, score gap)
    ("same node", decision(), "a", Outcome.AGREED, (), 0),
    ("a node scored as high: a tie broken the other way", decision(), "c", Outcome.TIED, (), 0),
    ("a node scored lower", decision(), "b", Outcome.LOWER_SCORE, (), 30),
    ("a node our filters reject", decision(), "d", Outcome.REJECTED, (TAINT,), None),
    (
        "bound although we place it nowhere: our reasons for their node",
        decision(node=None, scores={}, filtered={n: [CPU] for n in NODES}, message=FIT_ERROR),
        "b",
        Outcome.UNSCHEDULABLE,
        (CPU,),
        None,
    ),
    (
        "a pre-filter ruled out every node: its message is the reason",
        decision(node=None, scores={}, filtered={}, message="0/4 nodes are available: x."),
        "b",
        Outcome.UNSCHEDULABLE,
        ("0/4 nodes are available: x.",),
        None,
    ),
    (
        "a node we do not know",
        decision(),
        "ghost",
        Outcome.UNKNOWN_NODE,
        ('node "ghost" not found',),
        None,
    ),
    (
        "unschedulable for us outranks an unknown node",
        decision(node=None, scores={}, filtered={}, message=FIT_ERROR),
        "ghost",
        Outcome.UNSCHEDULABLE,
        ('node "ghost" not found',),
        None,
    ),
    (
        "our cycle failed",
        decision(node=None, scores={}, filtered={}, error="boom", message="boom"),
        "a",
        Outcome.ERROR,
        (),
        None,
    ),
    (
        "a node left unjudged is said so, not guessed at",
        decision(scores={"a": 10}, filtered={}),
        "b",
        Outcome.ERROR,
        ("node b was not evaluated",),
        None,
    ),
]


@pytest.mark.parametrize(
    ("decided", "their_node", "outcome", "reasons", "gap"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_comparison(
    decided: Decision,
    their_node: str,
    outcome: Outcome,
    reasons: tuple[str, ...],
    gap: int | None,
) -> None:
    result = compare(decided, their_node, NODES)
    assert (result.outcome, result.reasons, result.score_gap) == (outcome, reasons, gap)
    assert result.pod == "default/web"
    assert result.scheduler_name == "default-scheduler"
    assert result.their_node == their_node
    assert result.our_node == decided.node


def test_our_fit_error_is_kept_only_when_we_place_the_pod_nowhere() -> None:
    placed = compare(decision(message="stale"), "b", NODES)
    nowhere = compare(
        decision(node=None, scores={}, filtered={"b": [CPU]}, message=FIT_ERROR), "b", NODES
    )
    assert (placed.message, nowhere.message) == ("", FIT_ERROR)


def test_the_json_of_a_comparison_names_every_field() -> None:
    result = Comparison("ns/p", "default-scheduler", "b", "a", Outcome.LOWER_SCORE, (), 30)
    assert result.as_json() == {
        "pod": "ns/p",
        "schedulerName": "default-scheduler",
        "theirNode": "b",
        "ourNode": "a",
        "outcome": "lower_score",
        "reasons": [],
        "scoreGap": 30,
        "message": "",
        "cause": "none",
    }


def scored(
    parts: dict[str, dict[str, int]], filtered: dict[str, list[str]] | None = None
) -> Decision:
    """A decision whose nodes carry these per-plugin scores (before weight), the first
    node volsched's choice."""
    nodes = list(parts)
    made = decision(node=nodes[0], filtered=filtered or {})
    plugins = list(parts[nodes[0]])
    made._priority_scores = {name: [parts[n][name] for n in nodes] for name in plugins}
    made.scores = {n: sum(parts[n][name] * WEIGHTS.get(name, 1) for name in plugins) for n in nodes}
    return made


WEIGHTS = {"TaintToleration": 3, "NodeResourcesFit": 1, "PrioritizeVolumes": 1}


@pytest.mark.parametrize(
    ("made", "their_node", "cause", "differing"),
    [
        pytest.param(
            scored(
                {
                    "a": {"NodeResourcesFit": 50, "PrioritizeVolumes": 90},
                    "b": {"NodeResourcesFit": 50, "PrioritizeVolumes": 40},
                }
            ),
            "b",
            Cause.STORAGE_PREFERENCE,
            ("PrioritizeVolumes",),
            id="only volsched's storage plugin prefers our node",
        ),
        pytest.param(
            scored(
                {
                    "a": {"NodeResourcesFit": 60, "PrioritizeVolumes": 0},
                    "b": {"NodeResourcesFit": 40, "PrioritizeVolumes": 0},
                }
            ),
            "b",
            Cause.FIDELITY,
            ("NodeResourcesFit",),
            id="a plugin kube-scheduler runs too scores the nodes apart",
        ),
        pytest.param(
            scored(
                {
                    "a": {"NodeResourcesFit": 40, "PrioritizeVolumes": 90},
                    "b": {"NodeResourcesFit": 50, "PrioritizeVolumes": 20},
                }
            ),
            "b",
            Cause.STORAGE_PREFERENCE,
            ("NodeResourcesFit", "PrioritizeVolumes"),
            id="kube-scheduler's plugins favour theirs; the storage preference outweighs them",
        ),
        pytest.param(
            scored(
                {
                    "a": {"TaintToleration": 10, "NodeResourcesFit": 40, "PrioritizeVolumes": 90},
                    "b": {"TaintToleration": 0, "NodeResourcesFit": 80, "PrioritizeVolumes": 20},
                }
            ),
            "b",
            Cause.STORAGE_PREFERENCE,
            ("TaintToleration", "NodeResourcesFit", "PrioritizeVolumes"),
            id="one shared plugin favours ours, but kube-scheduler's plugins sum to theirs",
        ),
        pytest.param(
            scored({"a": {"NodeResourcesFit": 50}, "b": {"NodeResourcesFit": 50}}),
            "b",
            Cause.TIE_BREAK,
            (),
            id="a tie",
        ),
    ],
)
def test_each_difference_is_attributed_to_plugins(
    made: Decision, their_node: str, cause: Cause, differing: tuple[str, ...]
) -> None:
    result = compare(made, their_node, NODES, WEIGHTS)
    assert (result.cause, result.differing) == (cause, differing)
    assert dict(result.our_scores) == {
        name: score * WEIGHTS[name] for name, score in made.score_parts["a"].items()
    }
    assert result.as_json()["cause"] == str(cause)


def test_a_rejection_by_a_storage_filter_is_a_storage_preference() -> None:
    made = decision(filtered={"d": ["node(s) don't run the storage"]})
    made.rejected_by["d"] = "StorageNodeReady"
    result = compare(made, "d", NODES)
    assert (result.outcome, result.cause, result.rejected_by) == (
        Outcome.REJECTED,
        Cause.STORAGE_PREFERENCE,
        "StorageNodeReady",
    )
    made.rejected_by["d"] = "TaintToleration"
    assert compare(made, "d", NODES).cause is Cause.REJECTED
