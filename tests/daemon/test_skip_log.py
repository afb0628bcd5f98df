"""A flood of skipped objects names the first of a kind at once and then one line per
interval, saying how many went unnamed in between."""

from __future__ import annotations

import logging

import pytest

from volsched.daemon.watch.skip_log import SkipLog


def test_one_line_per_kind_per_interval(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    skips = SkipLog(interval_seconds=10.0, clock=lambda: now[0])
    caplog.set_level(logging.WARNING, logger="volsched.ingest")
    for index in range(1000):
        skips.line("Pod", f"Pod default/bad-{index}: skipped")
    skips.line("Node", "Node n1: skipped")
    now[0] = 10.0
    skips.line("Pod", "Pod default/late: skipped")
    assert [r.getMessage() for r in caplog.records] == [
        "Pod default/bad-0: skipped",
        "Node n1: skipped",
        "Pod default/late: skipped (999 more Pod object(s) skipped since the last such line)",
    ]
