"""The parts of the side-by-side benchmark that run without a control plane: reading
volsched's start-up milestones from its log, and the recorded command line."""

from __future__ import annotations

import os
import subprocess
import sys
import time

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


def test_a_trial_reports_the_schedulers_and_the_control_planes_cpu_per_pod() -> None:
    """Three bindings a second apart: the scheduler spent 4 ms, the control plane 0.5 s of
    CPU on the two pods after the first; its core was busy for a quarter of the time."""
    trial = sidebyside.Trial("volsched", "volsched first", 1)
    bound_at = {
        "a": (10.0, 1.000, 4.000),
        "b": (11.0, 1.001, 4.250),
        "c": (12.0, 1.004, 4.500),
    }
    sidebyside.summarise(trial, 9.0, bound_at, 3)
    assert (trial.bound, trial.first_binding_seconds, trial.pods_per_second) == (3, 1.0, 1.0)
    assert trial.cpu_ms_per_pod_binding == 2.0
    assert trial.extra["control_plane_cpu_ms_per_pod"] == 250.0
    assert trial.extra["control_plane_core_busy"] == 0.25
    assert sidebyside.medians([trial])["volsched (cold)"]["control_plane_core_busy"] == 0.25


def test_pinning_covers_every_thread_of_a_process() -> None:
    """A process whose threads started before it was pinned has them all moved."""
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import threading, time\n"
            "for _ in range(3): threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
            "print('up', flush=True); time.sleep(30)",
        ],
        stdout=subprocess.PIPE,
    )
    try:
        assert child.stdout is not None and child.stdout.readline() == b"up\n"
        sidebyside.pin(child.pid, 0)
        time.sleep(0.05)
        threads = os.listdir(f"/proc/{child.pid}/task")
        assert len(threads) >= 4
        assert all(os.sched_getaffinity(int(thread)) == {0} for thread in threads)
    finally:
        child.kill()
        child.wait()
        assert child.stdout is not None
        child.stdout.close()


def test_the_api_servers_requests_are_read_by_verb_and_resource() -> None:
    metrics = "\n".join(
        [
            "# TYPE apiserver_request_total counter",
            'apiserver_request_total{code="201",component="apiserver",dry_run="",group="",'
            'resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 40',
            'apiserver_request_total{code="409",component="apiserver",dry_run="",group="",'
            'resource="pods",scope="resource",subresource="binding",verb="POST",version="v1"} 2',
            'apiserver_request_total{code="201",component="apiserver",dry_run="",'
            'group="events.k8s.io",resource="events",scope="namespace",subresource="",'
            'verb="POST",version="v1"} 7',
            'apiserver_request_duration_seconds_count{verb="POST"} 99',
        ]
    )
    assert sidebyside.apiserver_requests(metrics) == {"POST pods/binding": 42, "POST events": 7}


def test_the_time_stolen_from_each_cpu_is_read_from_proc_stat() -> None:
    stat = (
        "cpu  300 0 20 900 5 0 1 70 0 0\n"
        f"cpu0 100 0 10 450 2 0 0 {int(sidebyside.CLOCK_TICKS * 1.5)} 0 0\n"
        "cpu1 200 0 10 450 3 0 1 20 0 0\n"
        "intr 12345 0 0\n"
    )
    assert sidebyside.stolen_seconds(stat) == {0: 1.5, 1: 20 / sidebyside.CLOCK_TICKS}
