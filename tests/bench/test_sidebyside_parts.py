"""The parts of the side-by-side benchmark that run without a control plane: reading
volsched's start-up milestones from its log, and the recorded command line."""

from __future__ import annotations

import pytest

from bench.oracle import sidebyside


def test_start_up_milestones_are_read_from_the_log() -> None:
    log = (
        "2026-11-28 17:38:42,531 INFO volsched: database d.db: 1309 objects loaded\n"
        "2026-11-28 17:38:43,256 INFO volsched: start-up: imported 0.98 s (+0.98), "
        "connected 1.01 s (+0.03), database_open 1.20 s (+0.19), caught_up 1.61 s (+0.41), "
        "ready 1.63 s (+0.02)\n"
        "2026-11-28 17:38:43,300 INFO volsched: first pod bound 1.70 s after the process started\n"
    )
    assert sidebyside.startup_milestones(log) == {
        "imported": 0.98,
        "connected": 1.01,
        "database_open": 1.2,
        "caught_up": 1.61,
        "ready": 1.63,
        "first_binding": 1.7,
    }
    assert sidebyside.startup_milestones("no such lines\n") == {}


@pytest.mark.parametrize(
    ("argv", "recorded"),
    [
        (["--nodes", "30", "--out", "x.json"], ["--nodes", "30"]),
        (["--out=x.json", "--rounds", "1"], ["--rounds", "1"]),
        (["--schedulers", "volsched", "--keep", "k", "--py-spy=p"], ["--schedulers", "volsched"]),
    ],
)
def test_the_recorded_command_leaves_out_where_the_result_went(
    monkeypatch: pytest.MonkeyPatch, argv: list[str], recorded: list[str]
) -> None:
    monkeypatch.setattr("sys.argv", ["sidebyside", *argv])
    assert sidebyside.recorded_arguments() == recorded


def test_an_unknown_scheduler_is_one_line(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stopped:
        sidebyside.main(["--schedulers", "volsched,default-scheduler"])
    assert stopped.value.code == 2
    assert "--schedulers: choose among kube-scheduler, volsched" in capsys.readouterr().err
