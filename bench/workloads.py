"""Named benchmark workloads, each at a ``quick`` size (CI smoke, seconds) and a full size
(the published figures, minutes).

Every workload returns ``results`` (its own shape, documented by its function),
``targets`` (each a target of the issue with the measured figure and whether it is
met; ``None`` at the quick size, which proves nothing) and writes its PNG plots.
``bench.__main__`` wraps them with the machine description and writes the JSON.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench import plots
from bench.e2e import ROOT, E2eOptions, run_e2e
from bench.memory import daemon_memory
from bench.memory import measure as memory_measure
from bench.restart import run_restart
from bench.scenario import Scenario

# Upstream's gates: kube-scheduler's scheduler_perf, test/integration/scheduler_perf/
# volumes/performance-config.yaml (``threshold``, SchedulingThroughput average, pods/s).
UPSTREAM_IN_TREE_PVS = "SchedulingInTreePVs/5000Nodes_2000Pods: 290 pods/s"
UPSTREAM_BASIC = "SchedulingBasic/5000Nodes_10000Pods: 680-810 pods/s"
# The real PV controller completes a claim in 0.1-0.25 s; the WaitForFirstConsumer
# benchmark binds each claim this long after volsched prebinds its PV.
PV_CONTROLLER_DELAY_SECONDS = 0.2
UPSTREAM_CSI_PVS = (
    "none for WaitForFirstConsumer; closest: SchedulingCSIPVs/5000Nodes_5000Pods 100 pods/s"
)


@dataclass
class Context:
    quick: bool
    out: Path
    workdir: Path
    e2e: E2eOptions = field(default_factory=E2eOptions)
    profile: bool = False
    # End-to-end runs per figure: each figure reported is the median over the runs (the
    # machine is shared, so one run can be slowed by someone else's work).
    repeat: int = 1
    note: str = ""  # machine summary printed on every plot
    log: Callable[[str], None] = print

    def plot_path(self, workload: str, what: str) -> Path:
        return self.out / f"{workload}-{what}.png"


Outcome = tuple[dict[str, Any], list[dict[str, Any]], list[Path | None]]


def target(
    name: str,
    wanted: str,
    measured: Any,
    unit: str,
    met: bool | None,
    quick: bool,
    upstream: str | None = None,
) -> dict[str, Any]:
    return {
        "name": name,
        "target": wanted,
        "measured": measured,
        "unit": unit,
        "met": None if quick else met,
        "upstream": upstream,
    }


# -- engine mode -------------------------------------------------------------------------


def _engine(scenario: Scenario) -> dict[str, Any]:
    from bench.engine_decisions import measure

    result = measure(scenario)
    mean = result["ms_per_pod"]["mean"]
    result["pods_per_second"] = round(1000 / mean, 1) if mean else None
    return result


def engine_prebound(ctx: Context) -> Outcome:
    """Engine decisions for pre-bound PVs (scheduler_perf's SchedulingInTreePVs shape)
    over a node series; ``results.series`` holds engine_decisions' figures per size."""
    sizes = [50, 100] if ctx.quick else [500, 1000, 2000, 5000]
    initial, measured = (50, 100) if ctx.quick else (1000, 2000)
    series = []
    for nodes in sizes:
        ctx.log(f"engine-prebound: {nodes} nodes")
        scenario = Scenario(
            nodes=nodes, shape="prebound", initial_pods=initial, measured_pods=measured
        )
        series.append(_engine(scenario))
    lines = [
        (p, [r["nodes"] for r in series], [r["ms_per_pod"][p] for r in series])
        for p in ("p50", "p90", "p99")
    ]
    png = plots.latency_vs_size(
        lines,
        ctx.plot_path("engine-prebound", "latency"),
        "Engine: per-pod decision time, pre-bound PVs",
        "nodes",
        note=ctx.note,
    )
    return {"series": series}, [], [png]


def engine_constraints(ctx: Context) -> Outcome:
    """Engine decisions where every measured pod has a required pod anti-affinity (per
    node) and a zone spread constraint, among twice as many running pods of the same
    groups (the shape of StatefulSets written for high availability), over a node series;
    default profile. ``results.series`` holds engine_decisions' figures per size."""
    sizes = [50, 100] if ctx.quick else [1000, 2000, 5000]
    measured = 100 if ctx.quick else 1000
    series = []
    for nodes in sizes:
        ctx.log(f"engine-constraints: {nodes} nodes, {2 * nodes} running pods")
        scenario = Scenario(
            nodes=nodes,
            shape="none",
            initial_pods=2 * nodes,
            measured_pods=measured,
            constrained=True,
            groups=max(1, 2 * nodes // 5),
        )
        series.append(_engine(scenario))
    lines = [
        (p, [r["nodes"] for r in series], [r["ms_per_pod"][p] for r in series])
        for p in ("p50", "p90", "p99")
    ]
    png = plots.latency_vs_size(
        lines,
        ctx.plot_path("engine-constraints", "latency"),
        "Engine: per-pod decision time, pod anti-affinity + zone spread",
        "nodes",
        note=ctx.note,
    )
    last = series[-1]
    p50 = last["ms_per_pod"]["p50"]
    targets = [
        target(
            f"per-pod decision at {last['nodes']} nodes / {2 * last['nodes']} running pods, "
            "required anti-affinity + zone spread",
            "< 10 ms",
            p50,
            "ms (p50)",
            p50 < 10,
            ctx.quick,
        )
    ]
    return {"series": series}, targets, [png]


def engine_wffc_scaling(ctx: Context) -> Outcome:
    """The scaling series: nodes 500 → 5,000 at 10 WaitForFirstConsumer PVs per node
    (PVs 5,000 → 50,000), and PVs 5,000 → 50,000 at 5,000 nodes."""
    if ctx.quick:
        by_nodes, fixed_nodes, per_node, measured = [50, 100], 100, [1, 10], 50
    else:
        by_nodes, fixed_nodes, per_node, measured = (
            [500, 1000, 2000, 5000],
            5000,
            [1, 2, 5, 10],
            1000,
        )
    done: dict[tuple[int, int], dict[str, Any]] = {}

    def point(nodes: int, pvs_per_node: int) -> dict[str, Any]:
        if (nodes, pvs_per_node) not in done:
            ctx.log(f"engine-wffc-scaling: {nodes} nodes, {nodes * pvs_per_node} PVs")
            scenario = Scenario(
                nodes=nodes, shape="wffc", pvs_per_node=pvs_per_node, measured_pods=measured
            )
            done[nodes, pvs_per_node] = _engine(scenario)
        return done[nodes, pvs_per_node]

    nodes_series = [point(n, 10) for n in by_nodes]
    pvs_series = [point(fixed_nodes, k) for k in per_node]
    low, high = pvs_series[0], pvs_series[-1]
    ratio = round(high["ms_per_pod"]["mean"] / low["ms_per_pod"]["mean"], 2)
    p50_ratio = round(high["ms_per_pod"]["p50"] / low["ms_per_pod"]["p50"], 2)

    def lines(series: list[dict[str, Any]], x: str) -> list[plots.Series]:
        return [
            (p, [r[x] for r in series], [r["ms_per_pod"][p] for r in series])
            for p in ("p50", "p90", "p99")
        ]

    png = plots.panels(
        [
            ("10 local PVs per node (PVs grow with nodes)", "nodes", lines(nodes_series, "nodes")),
            (f"{fixed_nodes} nodes", "PersistentVolumes", lines(pvs_series, "pvs")),
        ],
        ctx.plot_path("engine-wffc-scaling", "latency"),
        "Engine: per-pod decision time, WaitForFirstConsumer local PVs",
        "ms per pod",
        note=ctx.note,
    )
    results = {
        "by_nodes": nodes_series,
        "by_pvs": pvs_series,
        "cost_ratio_mean": ratio,
        "cost_ratio_p50": p50_ratio,
    }
    largest = nodes_series[-1]
    largest_p50 = largest["ms_per_pod"]["p50"]
    targets = [
        target(
            f"engine per-pod decision at {largest['nodes']} nodes / {largest['pvs']} WFC PVs",
            "≤ 6 ms",
            largest_p50,
            "ms (p50)",
            largest_p50 <= 6,
            ctx.quick,
        ),
        target(
            f"engine per-pod cost at {high['pvs']} PVs vs {low['pvs']} PVs ({fixed_nodes} nodes)",
            "≤ 1.5×",
            ratio,
            "× (mean)",
            ratio <= 1.5,
            ctx.quick,
        ),
    ]
    return results, targets, [png]


# -- end to end ------------------------------------------------------------------------


# The figures of a run that are reported as medians over repeated runs.
MEDIAN_FIGURES = ("pods_per_second", "daemon_cpu_ms_per_pod", "outside_cycle_cpu_ms_per_pod")
ZERO_COST = "zero-cost"


def median_of_runs(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The run with the median throughput, with every figure's median over all the runs
    (``median``) and each run's figures (``repeats``)."""
    ordered = sorted(runs, key=lambda run: run["pods_per_second"])
    chosen = dict(ordered[(len(ordered) - 1) // 2])
    chosen["repeats"] = [{name: run.get(name) for name in MEDIAN_FIGURES} for run in runs]
    medians: dict[str, Any] = {"runs": len(runs)}
    for name in MEDIAN_FIGURES:
        values = [run[name] for run in runs if run.get(name) is not None]
        medians[name] = round(statistics.median(values), 3) if values else None
    chosen["median"] = medians
    return chosen


def _e2e(
    ctx: Context,
    scenario: Scenario,
    pv_bind_delay_seconds: float = 0.0,
    emulator: str | None = None,
) -> dict[str, Any]:
    """``ctx.repeat`` runs of one scenario, as ``median_of_runs``; ``emulator`` other than
    the context's for a comparison."""
    pvs = f"{scenario.pvs} local PVs, " if scenario.pvs else ""
    options = replace(
        ctx.e2e,
        profile=ctx.profile,
        pv_bind_delay_seconds=pv_bind_delay_seconds,
        emulator=emulator or ctx.e2e.emulator,
    )
    runs = []
    for attempt in range(max(1, ctx.repeat)):
        ctx.log(
            f"e2e: {scenario.shape}, {scenario.nodes} nodes, {pvs}"
            f"{scenario.measured_pods} pods ({ctx.e2e.mode}, {options.emulator} emulator, "
            f"run {attempt + 1}/{max(1, ctx.repeat)})"
        )
        result = asyncio.run(run_e2e(scenario, options, ctx.workdir))
        ctx.log(
            f"  {result['scheduled_pods']}/{result['measured_pods']} bound, "
            f"{result['pods_per_second']} pods/s, "
            f"{result.get('daemon_cpu_ms_per_pod')} ms daemon CPU per pod"
        )
        runs.append(result)
    return median_of_runs(runs)


def _comparison(ctx: Context, scenario: Scenario, **kwargs: Any) -> dict[str, Any] | None:
    """The same scenario against the zero-cost emulator, when the headline is realistic."""
    if ctx.e2e.emulator == ZERO_COST:
        return None
    return _e2e(ctx, scenario, emulator=ZERO_COST, **kwargs)


def _throughput_plot(
    ctx: Context, name: str, runs: list[tuple[str, dict[str, Any]]], title: str, goal: float | None
) -> Path | None:
    series = [
        (
            label,
            [t for t, _ in run["bound_per_second_timeline"]],
            [r for _, r in run["bound_per_second_timeline"]],
        )
        for label, run in runs
    ]
    return plots.throughput_over_time(
        series, ctx.plot_path(name, "throughput"), title, f"{ctx.note}, daemon {ctx.e2e.mode}", goal
    )


def e2e_plain(ctx: Context) -> Outcome:
    """End to end, pods without volumes at 5,000 nodes (scheduler_perf's SchedulingBasic
    shape: 1,000 running pods, 4,000 measured) against the realistic emulator (HTTPS,
    objects as a real server returns them), with the daemon's own CPU per pod; the same
    against the zero-cost emulator as a comparison."""
    scenario = (
        Scenario(nodes=100, shape="none", initial_pods=50, measured_pods=200)
        if ctx.quick
        else Scenario(nodes=5000, shape="none", initial_pods=1000, measured_pods=4000)
    )
    run = _e2e(ctx, scenario)
    comparison = _comparison(ctx, scenario)
    medians = run["median"]
    average = medians["pods_per_second"]
    cpu = medians["daemon_cpu_ms_per_pod"]
    outside = medians["outside_cycle_cpu_ms_per_pod"]
    curves = [(f"{scenario.nodes} nodes, {ctx.e2e.emulator} emulator", run)]
    if comparison is not None:
        curves.append((f"{scenario.nodes} nodes, {ZERO_COST} emulator (comparison)", comparison))
    png = _throughput_plot(
        ctx,
        "e2e-plain",
        curves,
        "End to end: pods bound per second, pods without volumes",
        600.0,
    )
    what = f"{ctx.e2e.emulator} emulator"
    targets = [
        target(
            f"end-to-end throughput, {scenario.nodes} nodes, pods without volumes, {what}",
            "≥ 600 pods/s",
            average,
            f"pods/s (median of {medians['runs']} runs' averages)",
            average >= 600,
            ctx.quick,
            UPSTREAM_BASIC,
        ),
        target(
            f"daemon CPU per pod, all in, pods without volumes, {what}",
            "≤ 1.3 ms",
            cpu,
            f"ms per pod (median of {medians['runs']} runs)",
            cpu is not None and cpu <= 1.3,
            ctx.quick,
        ),
        target(
            f"daemon CPU per pod outside the scheduling cycle, {what}",
            "< 1 ms",
            outside,
            f"ms per pod (median of {medians['runs']} runs)",
            outside is not None and outside < 1.0,
            ctx.quick,
        ),
    ]
    results: dict[str, Any] = {"emulator": ctx.e2e.emulator, "run": run}
    if comparison is not None:
        results["zero_cost_comparison"] = comparison
    return results, targets, [png]


def e2e_prebound(ctx: Context) -> Outcome:
    """End to end, pre-bound PVs: scheduler_perf's SchedulingInTreePVs/5000Nodes_2000Pods
    (1,000 running pods with their bound claims, 2,000 measured)."""
    scenario = (
        Scenario(nodes=100, shape="prebound", initial_pods=50, measured_pods=100)
        if ctx.quick
        else Scenario(nodes=5000, shape="prebound", initial_pods=1000, measured_pods=2000)
    )
    run = _e2e(ctx, scenario)
    average = run["pods_per_second"]
    png = _throughput_plot(
        ctx,
        "e2e-prebound",
        [(f"{scenario.nodes} nodes, pre-bound PVs", run)],
        "End to end: pods bound per second, pre-bound PVs",
        300.0,
    )
    targets = [
        target(
            f"end-to-end throughput, {scenario.nodes} nodes, pre-bound PVs",
            "≥ 300 pods/s",
            average,
            "pods/s (average)",
            average >= 300,
            ctx.quick,
            UPSTREAM_IN_TREE_PVS,
        )
    ]
    return {"run": run}, targets, [png]


def e2e_wffc(ctx: Context) -> Outcome:
    """End to end, WaitForFirstConsumer local PVs at 5,000 nodes: 5,000 PVs and 50,000
    PVs (1 and 10 per node), each claim bound by the PV controller's binding step 200 ms
    after volsched prebinds its PV (the real controller takes 0.1-0.25 s); against the
    realistic emulator, and (full size) the zero-cost one as a comparison."""
    nodes, initial, measured = (100, 20, 50) if ctx.quick else (5000, 1000, 2000)
    runs = []
    comparisons = []
    for per_node in (1, 10):
        scenario = Scenario(
            nodes=nodes,
            shape="wffc",
            pvs_per_node=per_node,
            initial_pods=initial,
            measured_pods=measured,
        )
        runs.append(
            (
                f"{nodes} nodes, {scenario.pvs} PVs",
                _e2e(ctx, scenario, pv_bind_delay_seconds=PV_CONTROLLER_DELAY_SECONDS),
            )
        )
        # The comparison at full size only: e2e-plain's smoke run covers the path.
        compared = (
            None
            if ctx.quick
            else _comparison(ctx, scenario, pv_bind_delay_seconds=PV_CONTROLLER_DELAY_SECONDS)
        )
        if compared is not None:
            comparisons.append(compared)
    low, high = runs[0][1]["median"], runs[1][1]["median"]
    average = high["pods_per_second"]
    ratio = (
        round(low["pods_per_second"] / high["pods_per_second"], 2)
        if high["pods_per_second"] and low["pods_per_second"]
        else None
    )
    png = _throughput_plot(
        ctx,
        "e2e-wffc",
        runs,
        "End to end: pods bound per second, WaitForFirstConsumer local PVs",
        150.0,
    )
    pvs = (runs[0][1]["pvs"], runs[1][1]["pvs"])
    targets = [
        target(
            f"end-to-end throughput, {nodes} nodes, {pvs[1]} WFC local PVs, "
            f"{ctx.e2e.emulator} emulator",
            "≥ 150 pods/s",
            average,
            f"pods/s (median of {high['runs']} runs' averages)",
            average >= 150,
            ctx.quick,
            UPSTREAM_CSI_PVS,
        ),
        target(
            f"end-to-end per-pod cost at {pvs[1]} PVs vs {pvs[0]} PVs, {ctx.e2e.emulator} emulator",
            "≤ 1.5×",
            ratio,
            "×",
            ratio is not None and ratio <= 1.5,
            ctx.quick,
        ),
    ]
    results: dict[str, Any] = {
        "emulator": ctx.e2e.emulator,
        "runs": [run for _, run in runs],
        "cost_ratio": ratio,
    }
    if comparisons:
        results["zero_cost_comparisons"] = comparisons
    return results, targets, [png]


def e2e_replicated(ctx: Context) -> Outcome:
    """End to end, replicated volumes: half the pods provision a new 3-replica volume
    (replicas placed by volsched), half use an existing one (pod locality decides)."""
    scenario = (
        Scenario(nodes=30, shape="replicated", measured_pods=30)
        if ctx.quick
        else Scenario(nodes=1000, shape="replicated", measured_pods=1000)
    )
    run = _e2e(ctx, scenario)
    png = _throughput_plot(
        ctx,
        "e2e-replicated",
        [(f"{scenario.nodes} nodes × 4 disks", run)],
        "End to end: pods bound per second, replicated volumes",
        None,
    )
    return {"run": run}, [], [png]


# -- replicas, restart, memory ---------------------------------------------------------


def replicas(ctx: Context) -> Outcome:
    """Replica placement time per replica (bench/replica_placement.py) over a node series
    at 4 disks per node."""
    sizes, volumes = ([50, 100], 100) if ctx.quick else ([250, 500, 1000], 3000)
    series = []
    for nodes in sizes:
        ctx.log(f"replicas: {nodes} nodes × 4 disks, {volumes} volumes")
        completed = subprocess.run(
            [
                sys.executable,
                str(ROOT / "bench" / "replica_placement.py"),
                "--nodes",
                str(nodes),
                "--disks",
                "4",
                "--volumes",
                str(volumes),
            ],
            cwd=ROOT,
            capture_output=True,
            text=True,
            check=True,
        )
        series.append(json.loads(completed.stdout))
    xs = [r["cluster"]["nodes"] for r in series]
    png = plots.latency_vs_size(
        [(p, xs, [r["ms_per_replica"][p] for r in series]) for p in ("mean", "p50", "p99")],
        ctx.plot_path("replicas", "latency"),
        "Replica placement: time per replica (4 disks per node)",
        "nodes",
        "ms per replica",
        note=ctx.note,
    )
    last = series[-1]
    mean = last["ms_per_replica"]["mean"]
    targets = [
        target(
            f"replica placement, {last['cluster']['nodes']} nodes × 4 disks",
            "≤ 2 ms per replica",
            mean,
            "ms (mean)",
            mean <= 2.0,
            ctx.quick,
        )
    ]
    return {"series": series}, targets, [png]


def warm_restart(ctx: Context) -> Outcome:
    """Process start to ready: warm (database of the scenario's objects) vs cold (relist),
    against the realistic emulator (HTTPS, managedFields, kube-apiserver's bookmark
    cadence), on a small cluster (300 nodes, 1,000 pods) and a large one (50,003 objects)."""
    small_nodes, small_pods = (30, 100) if ctx.quick else (300, 1000)
    nodes, repeats = (50, 1) if ctx.quick else (5000, 3)
    small = Scenario(
        nodes=small_nodes, shape="wffc", pvs_per_node=0, initial_pods=small_pods, measured_pods=0
    )
    ctx.log(f"warm-restart: {small_nodes} nodes, {small_pods} pods, {repeats} repeat(s)")
    emulator = ctx.e2e.emulator
    small_result = asyncio.run(run_restart(small, repeats, ctx.workdir, emulator=emulator))
    scenario = Scenario(
        nodes=nodes, shape="wffc", pvs_per_node=8, initial_pods=nodes, measured_pods=0
    )
    ctx.log(f"warm-restart: {nodes} nodes, {repeats} repeat(s)")
    result = asyncio.run(
        run_restart(scenario, repeats, ctx.workdir, ctx.profile, emulator=emulator)
    )
    result["small"] = small_result
    png = plots.bars(
        [
            f"cold, {small_result['objects']:,}",
            f"warm, {small_result['objects']:,}",
            f"cold, {result['objects']:,}",
            f"warm, {result['objects']:,}",
        ],
        [
            small_result["cold_ready_seconds"],
            small_result["warm_ready_seconds"],
            result["cold_ready_seconds"],
            result["warm_ready_seconds"],
        ],
        ctx.plot_path("warm-restart", "ready"),
        "Process start to /readyz 200 (kube-apiserver's bookmark cadence)",
        "seconds",
        note=ctx.note,
    )
    later = round(small_result["warm_ready_seconds"] - small_result["cold_ready_seconds"], 3)
    targets = [
        target(
            f"warm restart vs cold relist, {small_nodes} nodes / {small_pods} pods",
            "warm ready ≤ cold ready + 0.2 s",
            later,
            "s (warm − cold)",
            later <= 0.2,
            ctx.quick,
        ),
        target(
            f"warm restart vs cold relist, {result['objects']} objects",
            "≥ 3× sooner",
            result["speedup"],
            "× (cold / warm)",
            result["speedup"] >= 3,
            ctx.quick,
        ),
    ]
    return result, targets, [png]


def memory(ctx: Context) -> Outcome:
    """Peak RSS of the engine (fresh process per size) and of the daemon process."""
    if ctx.quick:
        sizes, daemon_size = [(50, 500), (100, 1000)], (50, 500)
    else:
        sizes = [(500, 5000), (1000, 10_000), (2500, 25_000), (5000, 50_000)]
        daemon_size = (5000, 50_000)
    engine = []
    for nodes, pods in sizes:
        ctx.log(f"memory: engine, {nodes} nodes / {pods} pods / {nodes * 10} PVs")
        engine.append(
            memory_measure(
                Scenario(
                    nodes=nodes, shape="wffc", pvs_per_node=10, initial_pods=pods, measured_pods=500
                )
            )
        )
    nodes, pods = daemon_size
    ctx.log(f"memory: daemon, {nodes} nodes / {pods} pods / {nodes * 10} PVs")
    daemon = asyncio.run(
        daemon_memory(
            Scenario(
                nodes=nodes, shape="wffc", pvs_per_node=10, initial_pods=pods, measured_pods=0
            ),
            ctx.workdir,
        )
    )
    xs = [r["nodes"] for r in engine]
    png = plots.latency_vs_size(
        [
            ("engine peak RSS", xs, [r["peak_rss_mb"] for r in engine]),
            ("engine after load", xs, [r["rss_after_load_mb"] for r in engine]),
            ("daemon process peak RSS", [daemon["nodes"]], [daemon["peak_rss_mb"]]),
        ],
        ctx.plot_path("memory", "rss"),
        "Peak RSS (10 pods and 10 PVs per node)",
        "nodes",
        "MB",
        note=ctx.note,
    )
    last = engine[-1]
    peaks = [
        daemon[key]
        for key in ("peak_rss_mb", "peak_rss_through_stop_mb", "warm_peak_rss_mb")
        if daemon[key] is not None
    ]
    daemon_peak = max(peaks) if peaks else None
    targets = [
        target(
            f"engine peak RSS, {last['nodes']} nodes / {last['pods']} pods / {last['pvs']} PVs",
            "≤ 600 MB",
            last["peak_rss_mb"],
            "MB",
            last["peak_rss_mb"] <= 600,
            ctx.quick,
        ),
        target(
            f"daemon process peak RSS, {daemon['nodes']} nodes / {daemon['pods']} pods / "
            f"{daemon['pvs']} PVs (running, through a clean stop, warm start)",
            "≤ 600 MB",
            daemon_peak,
            "MB",
            daemon_peak is not None and daemon_peak <= 600,
            ctx.quick,
        ),
    ]
    return {"engine": engine, "daemon": daemon}, targets, [png]


WORKLOADS: dict[str, Callable[[Context], Outcome]] = {
    "engine-prebound": engine_prebound,
    "engine-wffc-scaling": engine_wffc_scaling,
    "engine-constraints": engine_constraints,
    "e2e-plain": e2e_plain,
    "e2e-prebound": e2e_prebound,
    "e2e-wffc": e2e_wffc,
    "e2e-replicated": e2e_replicated,
    "replicas": replicas,
    "warm-restart": warm_restart,
    "memory": memory,
}


def describe(name: str) -> str:
    doc = WORKLOADS[name].__doc__ or ""
    return " ".join(doc.split())
