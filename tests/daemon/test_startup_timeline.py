"""The start-up timeline: milestones in seconds after the process started, each counted
once, logged at ``ready`` and at the first binding, and exported as a gauge."""

from __future__ import annotations

import logging
import subprocess
import sys

import pytest

from volsched.daemon.telemetry.metrics import Metrics
from volsched.daemon.telemetry.startup import StartupTimeline, process_age_seconds


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


@pytest.mark.parametrize(
    ("age", "steps", "expected"),
    [
        # The process had run 0.4 s (interpreter and imports) when the timeline was made.
        (0.4, [("imported", 0.1), ("connected", 0.05)], {"imported": 0.5, "connected": 0.55}),
        # Without /proc the timeline counts from when it was made.
        (None, [("imported", 0.0), ("ready", 1.25)], {"imported": 0.0, "ready": 1.25}),
        # A milestone reached again keeps its first time.
        (0.0, [("ready", 1.0), ("ready", 2.0)], {"ready": 1.0}),
    ],
)
def test_milestones_count_from_the_process_start(
    age: float | None, steps: list[tuple[str, float]], expected: dict[str, float]
) -> None:
    clock = Clock()
    timeline = StartupTimeline(clock, lambda: age)
    for milestone, after in steps:
        clock.now += after
        timeline.mark(milestone)
    assert timeline.reached == pytest.approx(expected)


def test_an_unknown_milestone_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown start-up milestone 'warm'"):
        StartupTimeline(Clock(), lambda: 0.0).mark("warm")


def test_ready_and_the_first_binding_are_logged(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    timeline = StartupTimeline(clock, lambda: 0.5)
    with caplog.at_level(logging.INFO, logger="volsched"):
        for milestone in ("imported", "connected", "database_open", "caught_up", "ready"):
            clock.now += 0.1
            timeline.mark(milestone)
        clock.now += 0.25
        timeline.mark("first_binding")
        timeline.mark("first_binding")
    assert caplog.messages == [
        "start-up: imported 0.60 s (+0.60), connected 0.70 s (+0.10), database_open 0.80 s "
        "(+0.10), caught_up 0.90 s (+0.10), ready 1.00 s (+0.10)",
        "first pod bound 1.25 s after the process started",
    ]


def test_the_gauge_holds_milestones_reached_before_and_after_the_metrics_were_made() -> None:
    clock = Clock()
    timeline = StartupTimeline(clock, lambda: 0.0)
    clock.now += 0.75
    timeline.mark("imported")
    metrics = Metrics(timeline)
    clock.now += 0.5
    timeline.mark("ready")
    text = metrics.render().decode()
    assert 'volsched_startup_seconds{milestone="imported"} 0.75' in text
    assert 'volsched_startup_seconds{milestone="ready"} 1.25' in text


def test_this_process_has_an_age() -> None:
    age = process_age_seconds()
    assert age is not None and 0.0 < age < 24 * 3600


def test_the_daemon_starts_without_what_its_first_cycle_does_not_use() -> None:
    """The page renderer, the tracing SDK, certificate making and migrations are loaded
    when used (a page asked for, an endpoint set, no certificate given, a new database),
    not at every start: each costs start-up time before the first binding."""
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, volsched.daemon.cli.main, volsched.daemon.runtime.app, "
            "volsched.daemon.runtime.running, volsched.daemon.kube.client; "
            "print(' '.join(sorted(sys.modules)))",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    late = ("jinja2", "opentelemetry.sdk", "cryptography", "alembic", "kubernetes_asyncio")
    assert [name for name in loaded if name.startswith(late)] == []


@pytest.mark.parametrize(
    ("command", "daemon_thresholds"), [("run", True), ("simulate", False), ("demo", False)]
)
def test_the_daemon_imports_under_its_own_collector_thresholds(
    command: str, daemon_thresholds: bool
) -> None:
    """``volsched run`` sets the collector thresholds it schedules with before it imports
    anything of the daemon (the imports and first lists paid for collections that freed
    nothing); a one-shot command keeps the interpreter's."""
    from volsched.daemon.runtime.interpreter import GC_THRESHOLDS

    # The command line stands in for volsched's own, to see the thresholds it runs under.
    shown = subprocess.run(
        [
            sys.executable,
            "-c",
            "import gc, sys, types\n"
            "stand_in = types.ModuleType('volsched.daemon.cli.main')\n"
            "stand_in.main = lambda: print(*gc.get_threshold()) or 0\n"
            "sys.modules['volsched.daemon.cli.main'] = stand_in\n"
            f"sys.argv = ['volsched', {command!r}]\n"
            "from volsched.entry import main\n"
            "main()\n",
        ],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    thresholds = tuple(int(n) for n in shown)
    assert (thresholds == GC_THRESHOLDS) is daemon_thresholds
