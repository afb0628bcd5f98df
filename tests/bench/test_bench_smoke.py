"""Smoke test of the benchmark harness: every workload at ``--quick`` size, in a child
process (as CI and users run it), writes its JSON with the documented keys and its PNG
plots.  No timing assertions: figures depend on the machine."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"

E2E_KEYS = {
    "scheduled_pods",
    "measured_pods",
    "throughput_pods_per_second",
    "overall_pods_per_second",
    "pods_per_second",
    "ms_per_pod",
    "throughput_timeline",
    "bound_per_second_timeline",
    "latency_create_to_bound_ms",
    "attempt_duration_ms",
    "daemon_peak_rss_mb",
    "daemon_ready_seconds",
    "cpu_percent",
}


def check_e2e(run: dict[str, Any]) -> None:
    assert set(run) >= E2E_KEYS, E2E_KEYS - set(run)
    assert run["scheduled_pods"] == run["measured_pods"], run["ending"]


def check_engine_series(series: list[dict[str, Any]]) -> None:
    assert series
    for point in series:
        assert {"nodes", "pvs", "pods", "placed", "ms_per_pod"} <= set(point)
        assert {"p50", "p90", "p99"} <= set(point["ms_per_pod"])


def check_results(name: str, results: dict[str, Any]) -> None:
    if name in ("engine-prebound", "engine-constraints"):
        check_engine_series(results["series"])
    elif name == "engine-wffc-scaling":
        check_engine_series(results["by_nodes"])
        check_engine_series(results["by_pvs"])
        assert "cost_ratio_mean" in results
    elif name in ("e2e-prebound", "e2e-replicated"):
        check_e2e(results["run"])
    elif name == "e2e-plain":
        check_e2e(results["run"])
        assert results["emulator"] == "realistic"
        check_e2e(results["zero_cost_comparison"])
        run = results["run"]
        assert run["median"]["runs"] == 1
        assert run["cycle_duration_ms"]["count"] >= run["measured_pods"]
        # The cycle's share is its wall time, which a busy machine stretches past its CPU
        # time: the part outside it is below the whole, not necessarily above zero.
        assert run["outside_cycle_cpu_ms_per_pod"] < run["daemon_cpu_ms_per_pod"]
    elif name == "e2e-wffc":
        assert len(results["runs"]) == 2
        for run in results["runs"]:
            check_e2e(run)
        assert "cost_ratio" in results
    elif name == "replicas":
        for point in results["series"]:
            assert {"mean", "p50", "p99"} <= set(point["ms_per_replica"])
    elif name == "warm-restart":
        assert {"objects", "cold_ready_seconds", "warm_ready_seconds", "speedup"} <= set(results)
        assert all(run["exit_code"] == 0 for run in results["cold"] + results["warm"])
        assert results["warm"][0]["load_from_disk"]["start"] == "warm"
        assert results["warm"][0]["load_from_disk"]["from_snapshot"]
    elif name == "memory":
        for point in results["engine"]:
            assert {"nodes", "pods", "pvs", "peak_rss_mb"} <= set(point)
        daemon = results["daemon"]
        assert daemon["peak_rss_mb"] is not None
        assert daemon["peak_rss_through_stop_mb"] >= daemon["peak_rss_mb"]
        assert daemon["warm_peak_rss_mb"] is not None
    else:
        pytest.fail(f"no checks for workload {name}")


WORKLOADS = [
    "engine-prebound",
    "engine-wffc-scaling",
    "engine-constraints",
    "e2e-plain",
    "e2e-prebound",
    "e2e-wffc",
    "e2e-replicated",
    "replicas",
    "warm-restart",
    "memory",
]


def test_every_workload_is_smoke_tested() -> None:
    listed = subprocess.run(
        [sys.executable, "-m", "bench", "--list"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    names = [line.split()[0] for line in listed.stdout.splitlines() if line.strip()]
    assert names == WORKLOADS


@pytest.mark.parametrize("name", WORKLOADS)
def test_quick_workload_writes_results_and_plots(name: str, tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "bench", name, "--quick", "--out", str(tmp_path)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    report = json.loads((tmp_path / f"{name}.json").read_text())

    assert report["workload"] == name
    assert report["size"] == "quick"
    assert report["command"] == f"python -m bench {name} --quick"
    assert report["machine"]["cpus"] == os.cpu_count()
    assert report["machine"]["python"].count(".") == 2
    assert {"load_average_start", "load_average_end", "busy"} <= set(report["machine"])
    check_results(name, report["results"])
    for entry in report["targets"]:
        assert {"name", "target", "measured", "unit", "met", "upstream"} <= set(entry)
        assert entry["met"] is None  # a quick run proves nothing about a target

    if importlib.util.find_spec("matplotlib") is None:
        assert "plots_skipped" in report
        return
    assert report["plots"], "no plot written"
    for plot in report["plots"]:
        assert (tmp_path / plot).read_bytes()[:8] == PNG_MAGIC
