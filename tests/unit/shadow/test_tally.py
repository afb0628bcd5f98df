"""The shadow's tally: what the report says after a sequence of comparisons."""

from __future__ import annotations

from volsched.scheduling.shadow.comparison import Comparison, Outcome
from volsched.scheduling.shadow.tally import PENDING_LISTED, PendingVerdict, ShadowTally

TAINT = "node(s) had untolerated taint(s)"
SELECTOR = "node(s) didn't match Pod's node affinity/selector"


def seen(pod: str, outcome: Outcome, reasons: tuple[str, ...] = (), gap: int | None = None,
         scheduler: str = "default-scheduler") -> Comparison:  # fmt: skip
    ours = None if outcome is Outcome.UNSCHEDULABLE else "a"
    return Comparison(pod, scheduler, "b", ours, outcome, reasons, gap)


def test_a_report_counts_each_outcome_reason_and_gap() -> None:
    tally = ShadowTally(["default-scheduler", "batch"])
    for comparison in [
        seen("ns/p1", Outcome.AGREED, gap=0),
        seen("ns/p2", Outcome.TIED, gap=0),
        seen("ns/p3", Outcome.LOWER_SCORE, gap=30),
        seen("ns/p4", Outcome.LOWER_SCORE, gap=10),
        seen("ns/p5", Outcome.LOWER_SCORE, gap=20, scheduler="batch"),
        seen("ns/p6", Outcome.REJECTED, (TAINT,)),
        seen("ns/p7", Outcome.UNSCHEDULABLE, (SELECTOR, TAINT)),
        seen("ns/p8", Outcome.REJECTED, (TAINT, TAINT)),
    ]:
        tally.record(comparison)
    report = tally.report()
    assert report["compared"] == 8
    assert report["outcomes"] == {
        "agreed": 1,
        "tied": 1,
        "lower_score": 3,
        "rejected": 2,
        "unschedulable": 1,
        "unknown_node": 0,
        "error": 0,
    }
    # A tie is agreement: the same cluster could have gone either way.
    assert report["agreementRatio"] == 0.25
    assert report["bySchedulerName"] == {
        "batch": {"lower_score": 1},
        "default-scheduler": {"agreed": 1, "tied": 1, "lower_score": 2, "rejected": 2,
                              "unschedulable": 1},
    }  # fmt: skip
    # Each pod counts a reason once, however many times its node gave it.
    assert report["rejectionReasons"] == {TAINT: 3, SELECTOR: 1}
    assert report["scoreGap"] == {"median": 20, "max": 30}
    assert [d["pod"] for d in report["differences"]] == [f"ns/p{i}" for i in range(3, 9)]


def test_an_empty_report_has_no_ratio() -> None:
    report = ShadowTally(["default-scheduler"]).report()
    assert report["compared"] == 0 and report["agreementRatio"] is None
    assert report["scoreGap"] == {"median": None, "max": None}
    assert report["differences"] == []


def test_only_the_latest_differences_are_kept() -> None:
    tally = ShadowTally(["default-scheduler"], recent=3)
    for index in range(10):
        tally.record(seen(f"ns/p{index}", Outcome.REJECTED, (TAINT,)))
    assert [d["pod"] for d in tally.report()["differences"]] == ["ns/p7", "ns/p8", "ns/p9"]
    assert tally.report()["rejectionReasons"] == {TAINT: 10}


def test_pending_verdicts_last_until_the_pod_is_bound_or_gone() -> None:
    tally = ShadowTally(["default-scheduler"])
    tally.decided_pending("ns/p1", PendingVerdict("a"))
    tally.decided_pending("ns/p2", PendingVerdict(None, "0/3 nodes are available"))
    tally.decided_pending("ns/p3", PendingVerdict("a"))
    assert tally.report()["pending"] == {
        "placeable": 2,
        "unschedulable": 1,
        "pods": [
            {"pod": "ns/p3", "node": "a"},
            {"pod": "ns/p2", "node": None, "message": "0/3 nodes are available"},
            {"pod": "ns/p1", "node": "a"},
        ],
    }
    tally.record(seen("ns/p1", Outcome.AGREED, gap=0))
    tally.forget_pending("ns/p2")
    # Decided again (a cluster event moved it): the latest verdict stands.
    tally.decided_pending("ns/p3", PendingVerdict(None, "0/3 nodes are available"))
    assert tally.report()["pending"] == {
        "placeable": 0,
        "unschedulable": 1,
        "pods": [{"pod": "ns/p3", "node": None, "message": "0/3 nodes are available"}],
    }


def test_the_pending_list_is_bounded_and_the_median_exact() -> None:
    tally = ShadowTally(["default-scheduler"])
    for index in range(PENDING_LISTED + 50):
        tally.decided_pending(f"ns/p{index}", PendingVerdict("a"))
    pending = tally.report()["pending"]
    assert pending["placeable"] == PENDING_LISTED + 50
    assert len(pending["pods"]) == PENDING_LISTED
    assert pending["pods"][0]["pod"] == f"ns/p{PENDING_LISTED + 49}"
    for index, gap in enumerate([5, 1, 9, 9, 3, 7, 2]):
        tally.record(seen(f"ns/g{index}", Outcome.LOWER_SCORE, gap=gap))
    # sorted 1 2 3 5 7 9 9: the element at index 7 // 2 = 3.
    assert tally.report()["scoreGap"] == {"median": 5, "max": 9}
