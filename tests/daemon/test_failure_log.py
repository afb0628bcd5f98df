"""An extender's failures are logged when they start or change, then once a minute
with how many were not logged, and a success makes the next failure news again."""

from __future__ import annotations

import logging

import pytest

from volsched.daemon.extenders.failure_log import FailureLog


def test_a_repeated_failure_is_logged_once_a_minute_with_a_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    now = [0.0]
    failures = FailureLog(logging.getLogger("volsched.extenders"), 60.0, lambda: now[0])
    caplog.set_level(logging.INFO, "volsched.extenders")
    for second in range(0, 130):
        now[0] = float(second)
        failures.failed("http://x", "filter", "skipped in filter (ignorable)", "broken")
    now[0] = 130.0
    failures.failed("http://x", "filter", "skipped in filter (ignorable)", "broken otherwise")
    failures.failed("http://x", "prioritize", "gave no scores", "broken")
    failures.recovered("http://x", "prioritize")
    failures.failed("http://x", "prioritize", "gave no scores", "broken")
    assert [r.getMessage() for r in caplog.records] == [
        "extender http://x skipped in filter (ignorable): broken",
        "extender http://x skipped in filter (ignorable): broken (59 more times since it was last logged)",
        "extender http://x skipped in filter (ignorable): broken (59 more times since it was last logged)",
        "extender http://x skipped in filter (ignorable): broken otherwise",
        "extender http://x gave no scores: broken",
        "extender http://x gave no scores: broken",
    ]
