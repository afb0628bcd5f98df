"""Upstream's pickOneNodeForPreemption order, one criterion per row: each row's
candidates tie on every criterion before the one it exercises."""

from __future__ import annotations

import pytest

from tests.support import parse, pod
from volsched.cache.objects.core import Pod
from volsched.scheduling.preemption.choosing import candidates_wanted, pick_one_node
from volsched.scheduling.preemption.victims import Candidate

HOUR = 3600


def victim(name: str, priority: int, started_hour: int | None = 0) -> Pod:
    raw = pod(name, priority=priority)
    if started_hour is not None:
        raw["status"] = {"startTime": f"2026-01-01T{started_hour:02d}:00:00Z"}
    parsed: Pod = parse(raw)
    return parsed


def priority_of(p: Pod) -> int:
    return p.priority or 0


def on(node: str, *pods: Pod, violations: int = 0) -> Candidate:
    return Candidate(node, pods, violations)


@pytest.mark.parametrize(
    ("candidates", "chosen"),
    [
        pytest.param([], None, id="no candidate"),
        pytest.param(
            [on("a", victim("x", 1)), on("b")], "b", id="a node needing no eviction at once"
        ),
        pytest.param(
            [on("a", victim("x", 1), violations=1), on("b", victim("y", 9))],
            "b",
            id="fewest budget violations",
        ),
        pytest.param(
            [on("a", victim("x", 9)), on("b", victim("y", 3), victim("z", 3))],
            "b",
            id="lowest most-important victim",
        ),
        pytest.param(
            [
                on("a", victim("x", 5), victim("y", 4)),
                on("b", victim("z", 5), victim("w", 1)),
            ],
            "b",
            id="smallest sum of priorities",
        ),
        pytest.param(
            [
                on("a", victim("x", 5), victim("y", -100), victim("v", -100)),
                on("b", victim("z", 5), victim("w", 0)),
            ],
            "b",
            id="fewer victims outweigh negative priorities in the sum",
        ),
        pytest.param(
            [
                on("a", victim("x", 5, 3)),
                on("b", victim("y", 5, 7)),
            ],
            "b",
            id="latest start of the most important victims",
        ),
        pytest.param(
            [
                on("a", victim("x", 5, 3), victim("x2", 1, 9)),
                on("b", victim("y", 5, 1), victim("y2", 1, 12)),
            ],
            "a",
            id="only the most important victims' start counts",
        ),
        pytest.param(
            [on("a", victim("x", 5, 3)), on("b", victim("y", 5, None))],
            "b",
            id="a victim not started yet counts as starting now",
        ),
        pytest.param([on("a", victim("x", 5)), on("b", victim("y", 5))], "a", id="then the first"),
    ],
)
def test_pick_one_node(candidates: list[Candidate], chosen: str | None) -> None:
    picked = pick_one_node(candidates, priority_of)
    assert (picked.node if picked else None) == chosen


@pytest.mark.parametrize(
    ("potential", "wanted"), [(1, 1), (50, 50), (100, 100), (999, 100), (5000, 500)]
)
def test_candidates_wanted(potential: int, wanted: int) -> None:
    assert candidates_wanted(potential) == wanted
