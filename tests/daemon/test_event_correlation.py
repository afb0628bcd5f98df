"""The event correlator's rules, one at a time, without an API server: which events are
counted together, which are combined, when the window closes and how the limit refills."""

from __future__ import annotations

from typing import Any

from volsched.daemon.binding.event_correlation import (
    COMBINED_PREFIX,
    EventCorrelator,
    Recent,
    TokenBucket,
)

Raw = dict[str, Any]


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def event(pod: str = "web", reason: str = "FailedScheduling", message: str = "m") -> Raw:
    return {
        "metadata": {"name": f"{pod}.new", "namespace": "default"},
        "involvedObject": {"kind": "Pod", "namespace": "default", "name": pod, "uid": pod},
        "reason": reason,
        "message": message,
        "type": "Warning",
        "source": {"component": "volsched"},
        "firstTimestamp": "now",
        "lastTimestamp": "now",
        "count": 1,
    }


def test_the_same_event_again_is_a_patch_of_the_first() -> None:
    correlator = EventCorrelator(Clock())
    first = correlator.correlate(event())
    second = correlator.correlate({**event(), "lastTimestamp": "later"})
    assert first is not None and first.patch is None
    assert second is not None
    assert second.event["metadata"]["name"] == "web.new"
    assert second.patch == {"count": 2, "lastTimestamp": "later", "message": "m"}


def test_another_reason_or_pod_is_another_event() -> None:
    correlator = EventCorrelator(Clock())
    correlator.correlate(event())
    for other in (event(reason="Scheduled"), event(pod="db")):
        written = correlator.correlate(other)
        assert written is not None and written.patch is None


def test_similar_events_are_combined_only_within_ten_minutes_of_each_other() -> None:
    clock = Clock()
    correlator = EventCorrelator(clock, burst=1000)
    for n in range(9):
        written = correlator.correlate(event(message=f"m{n}"))
        assert written is not None and written.patch is None
        clock.now += 60
    # Ten minutes and a second of quiet: the similar messages seen so far are forgotten.
    clock.now += 601
    for n in range(9):
        written = correlator.correlate(event(message=f"n{n}"))
        assert written is not None
        assert not written.event["message"].startswith(COMBINED_PREFIX)
    tenth = correlator.correlate(event(message="n9"))
    assert tenth is not None and tenth.event["message"] == COMBINED_PREFIX + "n9"
    assert tenth.event["metadata"]["name"] != "web.new"
    eleventh = correlator.correlate(event(message="n10"))
    assert eleventh is not None and eleventh.patch is not None
    assert eleventh.patch["message"] == COMBINED_PREFIX + "n10"
    assert eleventh.event["metadata"]["name"] == tenth.event["metadata"]["name"]


def test_a_token_bucket_refills_up_to_its_burst_and_ignores_time_going_back() -> None:
    bucket = TokenBucket(tokens=0.0, updated=0.0)
    assert not bucket.take(now=100.0, rate=1 / 300, burst=25)
    assert bucket.take(now=300.0, rate=1 / 300, burst=25)
    assert not bucket.take(now=200.0, rate=1 / 300, burst=25)
    bucket.take(now=10**9, rate=1 / 300, burst=25)
    assert bucket.tokens == 24.0


def test_only_the_most_recent_entries_are_kept() -> None:
    recent: Recent[str, int] = Recent(2)
    recent.put("a", 1)
    recent.put("b", 2)
    assert recent.get("a") == 1
    recent.put("c", 3)
    assert (recent.get("a"), recent.get("b"), recent.get("c"), len(recent)) == (1, None, 3, 2)
