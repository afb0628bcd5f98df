"""Run a named benchmark workload and write its results.

    python -m bench WORKLOAD [--quick] [--out DIR] [--mode subprocess|inprocess]
                             [--emulator realistic|zero-cost] [--repeat N]
                             [--profile] [--workdir DIR]
    python -m bench all [--quick] ...
    python -m bench summary [--out DIR]
    python -m bench --list
    python -m bench cluster --kubeconfig FILE [...]   (a real test cluster: bench/cluster.py)

Writes ``DIR/<workload>.json`` (default DIR: ``bench/results``) and the workload's PNG
plots beside it; ``all`` runs every workload in turn and also writes ``all.json``, the
targets of every workload in one table (``summary`` rebuilds it from the JSON files
already there).  Each JSON holds the machine's core count and Python version, how busy
the machine was with other work before and during the run, the exact command, the
results, the targets with the measured figures, and the plot files.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import resource
import shlex
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from bench import plots
from bench.e2e import E2eOptions, load_average
from bench.workloads import WORKLOADS, Context, describe

RESULTS = Path(__file__).resolve().parent / "results"


def _cpu_times() -> tuple[float, float, float] | None:
    """(all cores' elapsed seconds, their busy seconds, this process tree's CPU seconds)."""
    try:
        fields = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    except (OSError, ValueError):
        return None
    tick = os.sysconf("SC_CLK_TCK")
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)
    own = sum(
        usage.ru_utime + usage.ru_stime
        for usage in (
            resource.getrusage(resource.RUSAGE_SELF),
            resource.getrusage(resource.RUSAGE_CHILDREN),
        )
    )
    return sum(fields) / tick, (sum(fields) - idle) / tick, own


def other_cpu_percent(before: tuple[float, float, float] | None) -> float | None:
    """Share of the machine (all cores, 0-100) that other processes used since ``before``:
    all busy time minus this process's and its finished children's (the daemon's)."""
    after = _cpu_times()
    if before is None or after is None or after[0] <= before[0]:
        return None
    other = (after[1] - before[1]) - (after[2] - before[2])
    return round(max(0.0, 100 * other / (after[0] - before[0])), 1)


def idle_check(seconds: float = 1.0) -> float | None:
    """Other processes' share of the machine over ``seconds`` while this one sleeps."""
    before = _cpu_times()
    time.sleep(seconds)
    return other_cpu_percent(before)


def machine() -> dict[str, Any]:
    return {
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "implementation": platform.python_implementation(),
        "platform": platform.platform(),
        "processor": platform.machine(),
        "load_average_start": load_average(),
        "other_cpu_percent_before": idle_check(),
    }


def run_one(name: str, args: argparse.Namespace, workdir: Path) -> dict[str, Any]:
    description = machine()
    started_at = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    started = time.monotonic()
    cpu_before = _cpu_times()
    note = (
        f"{description['cpus']} cores, Python {description['python']}, "
        f"{'quick' if args.quick else 'full'} size, "
        f"other processes {description['other_cpu_percent_before']}% CPU before"
    )
    context = Context(
        quick=args.quick,
        out=args.out,
        workdir=workdir,
        e2e=E2eOptions(mode=args.mode, emulator=args.emulator),
        profile=args.profile,
        repeat=args.repeat,
        note=note,
        log=lambda line: print(line, file=sys.stderr, flush=True),
    )
    results, targets, pngs = WORKLOADS[name](context)
    description["load_average_end"] = load_average()
    description["other_cpu_percent_during"] = other_cpu_percent(cpu_before)
    # Busy: other processes took more than a tenth of the machine just before or during
    # the run (the load average alone also counts the bench's own previous workload).
    shares = [
        v
        for v in (description["other_cpu_percent_before"], description["other_cpu_percent_during"])
        if v is not None
    ]
    description["busy"] = bool(shares) and max(shares) > 10.0
    report = {
        "workload": name,
        "description": describe(name),
        "size": "quick" if args.quick else "full",
        "command": command_line(name, args),
        "started_at": started_at,
        "elapsed_seconds": round(time.monotonic() - started, 1),
        "machine": description,
        "results": results,
        "targets": targets,
        "plots": [png.name for png in pngs if png is not None],
    }
    if not plots.available():
        report["plots_skipped"] = "matplotlib is not installed: pip install -e '.[bench]'"
    path = args.out / f"{name}.json"
    path.write_text(json.dumps(report, indent=2) + "\n")
    print(f"{name}: wrote {path} in {report['elapsed_seconds']}s", file=sys.stderr)
    return report


def command_line(name: str, args: argparse.Namespace) -> str:
    parts = ["python", "-m", "bench", name]
    if args.quick:
        parts.append("--quick")
    if args.mode != "subprocess":
        parts += ["--mode", args.mode]
    if args.emulator != "realistic":
        parts += ["--emulator", args.emulator]
    if args.repeat != 1:
        parts += ["--repeat", str(args.repeat)]
    if args.profile:
        parts.append("--profile")
    return shlex.join(parts)


def main(argv: list[str] | None = None) -> int:
    given = sys.argv[1:] if argv is None else argv
    if given[:1] == ["cluster"]:
        # Against a real control plane, with options of its own (bench/cluster.py).
        from bench.cluster import main as cluster_main

        return cluster_main(given[1:])
    parser = argparse.ArgumentParser(
        prog="python -m bench", description="Run a named volsched benchmark workload."
    )
    parser.add_argument("workload", nargs="?", choices=[*WORKLOADS, "all", "summary"])
    parser.add_argument("--quick", action="store_true", help="CI smoke size (seconds)")
    parser.add_argument("--out", type=Path, default=RESULTS, help="results directory")
    parser.add_argument(
        "--mode",
        choices=("subprocess", "inprocess"),
        default="subprocess",
        help="end-to-end runs: the daemon as a child process (default) or on the bench's loop",
    )
    parser.add_argument(
        "--emulator",
        choices=("realistic", "zero-cost"),
        default="realistic",
        help="end-to-end runs: the API emulator as a real server costs (HTTPS, objects with "
        "managedFields and every default; the default) or zero-cost (plain HTTP, objects as "
        "loaded); with realistic, e2e-plain and e2e-wffc also run zero-cost as a comparison",
    )
    parser.add_argument(
        "--repeat",
        type=int,
        default=1,
        help="end-to-end runs per figure; each figure is the median over them",
    )
    parser.add_argument(
        "--profile", action="store_true", help="record the daemon with py-spy; top functions"
    )
    parser.add_argument("--workdir", type=Path, help="keep databases, logs, profiles here")
    parser.add_argument("--list", action="store_true", help="list the workloads")
    args = parser.parse_args(argv)
    if args.list or args.workload is None:
        for name in WORKLOADS:
            print(f"{name:22} {describe(name)}")
        return 0 if args.list else 2
    args.out.mkdir(parents=True, exist_ok=True)
    if args.workload == "summary":
        print(write_summary(args.out))
        return 0
    names = list(WORKLOADS) if args.workload == "all" else [args.workload]
    with tempfile.TemporaryDirectory(prefix="volsched-bench-") as scratch:
        workdir = args.workdir or Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        reports = [run_one(name, args, workdir) for name in names]
    if args.workload == "all":
        write_summary(args.out, reports)
    return 0


def write_summary(out: Path, reports: list[dict[str, Any]] | None = None) -> Path:
    """``all.json``: every workload's targets in one table (from ``reports``, or from the
    workload JSON files already in ``out``: ``python -m bench summary``)."""
    if reports is None:
        reports = [
            json.loads((out / f"{name}.json").read_text())
            for name in WORKLOADS
            if (out / f"{name}.json").exists()
        ]
    summary = {
        "workloads": {
            r["workload"]: {
                "size": r["size"],
                "command": r["command"],
                "started_at": r["started_at"],
                "busy": r["machine"].get("busy"),
            }
            for r in reports
        },
        "machine": {k: v for k, v in machine().items() if not k.startswith(("load", "other"))},
        "targets": [dict(t, workload=r["workload"]) for r in reports for t in r["targets"]],
    }
    path = out / "all.json"
    path.write_text(json.dumps(summary, indent=2) + "\n")
    return path


if __name__ == "__main__":
    sys.exit(main())
