"""Warm restart against cold start: how soon a daemon process is ready.

The emulator runs in its realistic mode (HTTPS; objects with managedFields and every
default, as kube-apiserver stores them; ``emulator="zero-cost"`` for the old plain shape)
and bookmarks watches as kube-apiserver does (once a minute, or two seconds before a
watch's timeoutSeconds).  A *cold* start is a
daemon process with an empty database: it lists every kind from the API server before
it is ready.  A *warm* start is the same process pointed at the database a previous run
left behind (the run is stopped with SIGTERM, which drains, flushes and keeps the
snapshot of the parsed cache): it loads the snapshot and is ready once every resumed
watch has caught up with the API server's state at the start (an event or bookmark at
or past it; no kind changed here, so a bookmark).  Both are timed from process start
(``fork``/``exec``) to the first ``/readyz`` answering 200, polled every 10 ms, with the
daemon's modules already compiled to bytecode as an installed package has them.

Also reported: the interpreter-plus-imports floor (``python -c 'import volsched.daemon.cli.main,
volsched.daemon.runtime.app'``), which both starts pay; the daemon's own log line giving the load
from disk; and how long after that load the daemon was ready (the catch-up wait), so
the ratio can be read with and without the fixed costs.
"""

from __future__ import annotations

import asyncio
import datetime
import re
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from bench.e2e import (
    ROOT,
    DaemonProcess,
    Profiler,
    compile_daemon_modules,
    installed_python_environment,
    wait_for_settled_database,
)
from bench.scenario import Scenario, generate, object_counts
from volsched.emulator import ApiServer, ControllerSettings

# kube-apiserver's watch cache bookmarks a watcher once a minute.
KUBE_APISERVER_BOOKMARK_SECONDS = 60.0
LOADED = re.compile(
    r"database .*: (\d+) objects loaded in ([0-9.]+)s \((warm|cold) start(, from the snapshot)?\)"
)


IMPORT_AND_STAMP = (
    "import volsched.daemon.cli.main, volsched.daemon.runtime.app, time; print(time.monotonic())"
)


def import_floor_seconds(repeats: int) -> float:
    """Median time from starting an interpreter to its having imported the daemon.

    Read from the child's own monotonic clock (the same clock across processes), so the
    interpreter's exit, which a daemon does not pay before it is ready, is left out.
    """
    compile_daemon_modules()
    times = []
    for _ in range(repeats):
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c", IMPORT_AND_STAMP],
            cwd=ROOT,
            env=installed_python_environment(),
            check=True,
            capture_output=True,
            text=True,
        )
        times.append(float(done.stdout) - started)
    return statistics.median(times)


def _remove_database(path: Path) -> None:
    for suffix in ("", "-wal", "-shm", "-journal"):
        Path(f"{path}{suffix}").unlink(missing_ok=True)


READY = re.compile(r"^(\S+ \S+) INFO volsched: volsched ready", re.MULTILINE)
# The daemon's line naming how each resumed kind was proven current (see proving.py).
CAUGHT_UP = re.compile(r"caught up after ([0-9.]+)s: (.*)$", re.MULTILINE)
STAMP = re.compile(r"^(\S+ \S+) ", re.MULTILINE)


def disk_load(log_path: Path) -> dict[str, Any]:
    text = log_path.read_text(errors="replace")
    match = LOADED.search(text)
    if match is None:
        return {}
    result: dict[str, Any] = {
        "objects": int(match[1]),
        "seconds": float(match[2]),
        "start": match[3],
        "from_snapshot": match[4] is not None,
    }
    proven = CAUGHT_UP.search(text, match.end())
    if proven is not None:
        result["caught_up"] = {"seconds": float(proven[1]), "proofs": proven[2]}
    loaded_line = text.rfind("\n", 0, match.start()) + 1
    loaded_at = STAMP.match(text, loaded_line)
    ready_at = READY.search(text, match.end())
    if loaded_at is not None and ready_at is not None:
        result["ready_after_load_seconds"] = round(
            (_log_time(ready_at[1]) - _log_time(loaded_at[1])).total_seconds(), 3
        )
    return result


def _log_time(stamp: str) -> datetime.datetime:
    return datetime.datetime.strptime(stamp, "%Y-%m-%d %H:%M:%S,%f")


async def _one_start(
    workdir: Path,
    server: ApiServer,
    database: Path,
    settle: bool,
    profile: Path | None = None,
) -> dict[str, Any]:
    daemon = DaemonProcess(
        workdir, database, server.url, certificate_authority=server.certificate_authority
    )
    await daemon.start()
    profiler = Profiler(daemon.pid, profile) if profile is not None else None
    try:
        if profiler is not None:
            await profiler.start()
        ready = await daemon.wait_ready(timeout=600)
        summary = await profiler.stop() if profiler is not None else None
        if settle:
            # The next warm start needs everything on disk: let the write-behind finish.
            await wait_for_settled_database(daemon)
        rss = daemon.peak_rss_mb()
    finally:
        code = await daemon.stop()
    result = {
        "ready_seconds": round(ready, 3),
        "exit_code": code,
        "peak_rss_mb": rss,
        "load_from_disk": disk_load(daemon.log_path),
    }
    if summary is not None:
        result["profile"] = summary
    return result


async def _start_emulator(
    objects: list[dict[str, Any]], cadence: str, realistic: bool
) -> tuple[ApiServer, float]:
    """The emulator holding ``objects``, bookmarking with ``cadence``; and its load time.
    ``realistic``: over HTTPS, objects as kube-apiserver stores them (managedFields,
    defaults), as the daemon meets them on a real control plane."""
    server = ApiServer(
        ControllerSettings.none(),
        bookmark_interval_seconds=KUBE_APISERVER_BOOKMARK_SECONDS,
        bookmark_cadence=cadence,
        realistic=realistic,
    )
    await server.start()
    started = time.perf_counter()
    server.load(objects)
    return server, time.perf_counter() - started


def _local_pvs(nodes: int, per_node: int) -> list[dict[str, Any]]:
    """Unclaimed local PVs on every node (the ``wffc`` shape's), to add to a scenario of
    another shape: a cluster of pre-bound pods plus spare local disks."""
    if not per_node:
        return []
    spare = Scenario(nodes=nodes, shape="wffc", pvs_per_node=per_node, measured_pods=0)
    return [o for o in generate(spare) if o.get("kind") == "PersistentVolume"]


async def run_restart(
    scenario: Scenario,
    repeats: int,
    workdir: Path,
    profile: bool = False,
    cadence: str = "apiserver",
    local_pvs_per_node: int = 0,
    emulator: str = "realistic",
) -> dict[str, Any]:
    objects = [*generate(scenario), *_local_pvs(scenario.nodes, local_pvs_per_node)]
    server, load_seconds = await _start_emulator(objects, cadence, emulator == "realistic")
    cold: list[dict[str, Any]] = []
    warm: list[dict[str, Any]] = []
    database = workdir / "restart.db"
    try:
        for _ in range(repeats):
            _remove_database(database)
            cold.append(await _one_start(workdir, server, database, settle=True))
            warm.append(await _one_start(workdir, server, database, settle=False))
        profiles = {}
        if profile:
            # Separate runs: a profiler slows what it watches.
            for kind in ("warm", "cold"):
                if kind == "cold":
                    _remove_database(database)
                run = await _one_start(
                    workdir, server, database, False, workdir / f"profile-{kind}-start.txt"
                )
                profiles[kind] = run.get("profile", {})
    finally:
        await server.stop()
    floor = import_floor_seconds(max(3, repeats))
    cold_median = statistics.median(run["ready_seconds"] for run in cold)
    warm_median = statistics.median(run["ready_seconds"] for run in warm)
    database_mb = round(database.stat().st_size / 1e6, 1) if database.exists() else None
    return {
        "scenario": {
            "nodes": scenario.nodes,
            "shape": scenario.shape,
            "pvs_per_node": scenario.pvs_per_node,
            "pods": scenario.initial_pods,
            "local_pvs_per_node": local_pvs_per_node,
        },
        "bookmark_cadence": cadence,
        "emulator": emulator,
        "objects": len(objects),
        "object_kinds": object_counts(objects),
        "emulator_load_seconds": round(load_seconds, 2),
        "database_mb": database_mb,
        "repeats": repeats,
        "cold": cold,
        "warm": warm,
        "cold_ready_seconds": round(cold_median, 3),
        "warm_ready_seconds": round(warm_median, 3),
        "speedup": round(cold_median / warm_median, 2),
        "import_floor_seconds": round(floor, 3),
        "warm_load_seconds": _median_of(warm, "seconds"),
        "warm_ready_after_load_seconds": _median_of(warm, "ready_after_load_seconds"),
        "profiles": profiles,
        "speedup_after_imports": (
            round((cold_median - floor) / (warm_median - floor), 2)
            if warm_median > floor and cold_median > floor
            else None
        ),
    }


def _median_of(runs: list[dict[str, Any]], key: str) -> float | None:
    values = [run["load_from_disk"][key] for run in runs if key in run["load_from_disk"]]
    return round(statistics.median(values), 3) if values else None


def main(argv: list[str] | None = None) -> None:
    """``python -m bench.restart --nodes N --pods P [--shape S] [--pvs-per-node K]``:
    one scenario's cold and warm starts, as JSON on stdout."""
    import argparse
    import json
    import tempfile

    parser = argparse.ArgumentParser(prog="python -m bench.restart", description=main.__doc__)
    parser.add_argument("--nodes", type=int, default=200)
    parser.add_argument("--pods", type=int, default=None, help="running pods (default: nodes)")
    parser.add_argument("--shape", default="wffc", choices=("wffc", "prebound"))
    parser.add_argument("--pvs-per-node", type=int, default=8)
    parser.add_argument(
        "--local-pvs-per-node",
        type=int,
        default=0,
        help="unclaimed local PVs per node added to any shape",
    )
    parser.add_argument("--repeats", type=int, default=1)
    parser.add_argument("--cadence", default="apiserver", choices=("apiserver", "interval"))
    parser.add_argument("--emulator", default="realistic", choices=("realistic", "zero-cost"))
    args = parser.parse_args(argv)
    scenario = Scenario(
        nodes=args.nodes,
        shape=args.shape,
        pvs_per_node=args.pvs_per_node,
        initial_pods=args.nodes if args.pods is None else args.pods,
        measured_pods=0,
    )
    with tempfile.TemporaryDirectory() as directory:
        result = asyncio.run(
            run_restart(
                scenario,
                args.repeats,
                Path(directory),
                False,
                args.cadence,
                args.local_pvs_per_node,
                args.emulator,
            )
        )
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
