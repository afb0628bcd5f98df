"""The calibration run's bookkeeping, without a server: the pod watch's tally, request
latencies and the real-over-embedded ratios."""

from __future__ import annotations

from bench.oracle.calibration import (
    PodWatchTally,
    compact_size,
    latency_summary,
    ratios,
    scheduled_event,
)


def pod(name: str, node: str = "") -> dict[str, object]:
    return {"metadata": {"name": name}, "spec": {"nodeName": node} if node else {}}


def test_the_tally_counts_events_per_pod_and_their_sizes() -> None:
    tally = PodWatchTally()
    for event in (
        {"type": "ADDED", "object": pod("a")},
        {"type": "ADDED", "object": pod("b")},
        {"type": "MODIFIED", "object": pod("a", "node-1")},
        {"type": "MODIFIED", "object": pod("b", "node-2")},
    ):
        tally.seen(event)
    assert tally.bound == {"a", "b"}
    summary = tally.summary(2)
    assert summary["events_per_pod"] == {"ADDED": 1.0, "MODIFIED": 1.0}
    assert summary["bytes_per_event"] == {
        "ADDED": compact_size(pod("a")),
        "MODIFIED": compact_size(pod("a", "node-1")),
    }


def test_compact_size_is_the_bytes_of_compact_json() -> None:
    assert compact_size({"a": [1, 2], "b": "é"}) == len(b'{"a":[1,2],"b":"\\u00e9"}')


def test_latencies_are_summarised_as_median_and_90th_percentile() -> None:
    summary = latency_summary([i / 1000 for i in range(1, 11)])
    assert summary == {"requests": 10, "median_ms": 5.5, "p90_ms": 9.0}


def test_ratios_are_real_over_embedded_where_both_have_the_figure() -> None:
    real = {"list": {"ms_per_pod": 0.3, "pods": 500}, "only_real": 1, "events": {"ADDED": 1.0}}
    embedded = {"list": {"ms_per_pod": 0.1, "pods": 500}, "events": {"ADDED": 0.0}}
    assert ratios(real, embedded) == {
        "list": {"ms_per_pod": 3.0, "pods": 1.0},
        "events": {"ADDED": None},
    }


def test_the_event_is_the_one_volsched_writes_for_a_bound_pod() -> None:
    event = scheduled_event("ns", "p", "node-1")
    assert (event["apiVersion"], event["reason"], event["action"]) == (
        "events.k8s.io/v1",
        "Scheduled",
        "Binding",
    )
    assert event["note"] == "Successfully assigned ns/p to node-1"
    assert event["metadata"]["name"].startswith("p.")
