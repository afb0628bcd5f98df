"""Peak resident memory of the engine at cluster scale, one fresh process per size.

    python -m bench.memory --nodes 5000 --pvs-per-node 10 --pods 50000

Each measurement is a new interpreter: it imports the engine, records its peak RSS
(``VmHWM``; see ``peak_rss_mb``), streams the seeded scenario into a cluster cache (the
generator yields one object at a time, so the raw JSON is never held whole), decides
``--measured`` pending pods with the default policy — each decision assumed, as the
daemon does — and records the peak again.  Pods are running pods spread over the nodes;
PVs are WaitForFirstConsumer local PVs; each measured pod adds one claim.

``daemon_memory`` measures the same cluster in the real daemon process instead (its
informer cache, raw objects kept for writes, and SQLite), through the emulator.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import random
import resource
import subprocess
import sys
import time
from dataclasses import asdict
from pathlib import Path
from typing import Any

from bench.scenario import Scenario


def peak_rss_mb(pid: int | str = "self") -> float | None:
    """A process's peak resident set since it started (``VmHWM``), in MB.

    Not ``ru_maxrss``: Linux carries it across ``fork`` and ``execve``, so a fresh child
    of a large parent (``python -m bench all`` after an end-to-end run) reports the
    parent's peak.  ``ru_maxrss`` is the fallback where /proc is missing.
    """
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return round(int(line.split()[1]) / 1024, 1)
    except OSError:
        pass
    if pid != "self":
        return None
    return round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)


def _rss_mb() -> float:
    return peak_rss_mb() or 0.0


def child(scenario: Scenario) -> dict[str, Any]:
    """Runs in the fresh process: load, decide, report."""
    from bench.engine_decisions import load
    from volsched.scheduling.framework.runner import Scheduler
    from volsched.scheduling.profile_builder import PluginFactory, build_profile
    from volsched.scheduling.scheduler_config import default_profile
    from volsched.scheduling.simulation import pending_pods

    floor = _rss_mb()
    started = time.perf_counter()
    cluster = load(scenario)
    load_seconds = time.perf_counter() - started
    gc.collect()
    after_load = _rss_mb()
    profile = build_profile(default_profile(with_storage=False).policy, PluginFactory(cluster))
    scheduler = Scheduler(cluster, profile, random.Random(scenario.seed))
    placed = 0
    for pod in pending_pods(cluster, None):
        placed += scheduler.schedule(pod).node is not None
    return {
        "nodes": len(cluster.node_list()),
        "pods": len(cluster.pods),
        "pvs": len(cluster.pvs),
        "claims": len(cluster.pvcs),
        "decided": scenario.measured_pods,
        "placed": placed,
        "load_seconds": round(load_seconds, 2),
        "rss_after_imports_mb": floor,
        "rss_after_load_mb": after_load,
        "peak_rss_mb": _rss_mb(),
    }


def measure(scenario: Scenario) -> dict[str, Any]:
    """One size in a fresh interpreter."""
    completed = subprocess.run(
        [sys.executable, "-m", "bench.memory", "--child", json.dumps(asdict(scenario))],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(completed.stdout))


async def daemon_memory(scenario: Scenario, workdir: Path) -> dict[str, Any]:
    """Peak RSS of a real daemon process that has listed (and stored) the scenario."""
    from bench.e2e import DaemonProcess, start_emulator, wait_for_settled_database
    from bench.scenario import generate
    from volsched.emulator import ControllerSettings

    objects = list(generate(scenario))
    server, _ = await start_emulator(scenario, ControllerSettings.none(), objects)
    del objects
    try:
        daemon = DaemonProcess(workdir, workdir / "memory.db", server.url)
        await daemon.start()
        try:
            ready = await daemon.wait_ready(timeout=600)
            await wait_for_settled_database(daemon)
            peak = daemon.peak_rss_mb()
        finally:
            # A clean stop keeps the parsed-cache snapshot: its peak counts too.
            through_stop = await _peak_through_stop(daemon)
        warm = DaemonProcess(workdir, workdir / "memory.db", server.url)
        await warm.start()
        try:
            warm_ready = await warm.wait_ready(timeout=600)
            warm_peak = warm.peak_rss_mb()
        finally:
            await warm.stop()
    finally:
        await server.stop()
    return {
        "nodes": scenario.nodes,
        "pods": scenario.initial_pods + scenario.measured_pods,
        "pvs": scenario.pvs,
        "ready_seconds": round(ready, 2),
        "peak_rss_mb": peak,
        "peak_rss_through_stop_mb": through_stop,
        "warm_ready_seconds": round(warm_ready, 2),
        "warm_peak_rss_mb": warm_peak,
    }


async def _peak_through_stop(daemon: Any) -> float | None:
    """SIGTERM the daemon and follow its peak RSS until it exits."""
    pid = daemon.pid
    stopping = asyncio.ensure_future(daemon.stop())
    peak = peak_rss_mb(pid)
    while not stopping.done():
        peak = peak_rss_mb(pid) or peak
        await asyncio.sleep(0.01)
    await stopping
    return peak


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pvs-per-node", type=int, default=10)
    parser.add_argument("--pods", type=int, default=50_000, help="running pods")
    parser.add_argument("--measured", type=int, default=500, help="pending pods to decide")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        json.dump(child(Scenario(**json.loads(args.child))), sys.stdout)
        return
    scenario = Scenario(
        nodes=args.nodes,
        shape="wffc",
        pvs_per_node=args.pvs_per_node,
        initial_pods=args.pods,
        measured_pods=args.measured,
    )
    json.dump(measure(scenario), sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
