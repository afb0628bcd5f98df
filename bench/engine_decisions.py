"""Per-pod decision time of the scheduling engine, in-process, no I/O.

    python -m bench.engine_decisions [--nodes 5000] [--pvs-per-node 10] [--pods 500]

Builds a seeded scenario, loads it into a cluster cache (not timed), then decides the
measured pods one after the other with the default policy, each decision assumed
before the next, and prints the per-pod latency percentiles as JSON.
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import platform
import random
import statistics
import sys
import time
from typing import Any

from bench.scenario import Scenario, generate
from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.registry import KINDS
from volsched.scheduling.framework.runner import Scheduler
from volsched.scheduling.profile_builder import PluginFactory, build_profile
from volsched.scheduling.scheduler_config import default_profile
from volsched.scheduling.simulation import pending_pods


def load(scenario: Scenario) -> ClusterCache:
    cluster = ClusterCache()
    for raw in generate(scenario):
        cluster.upsert(raw["kind"], KINDS[raw["kind"]].parse(raw))
    return cluster


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def measure(scenario: Scenario) -> dict[str, Any]:
    started = time.perf_counter()
    cluster = load(scenario)
    load_seconds = time.perf_counter() - started
    profile = build_profile(default_profile(with_storage=False).policy, PluginFactory(cluster))
    scheduler = Scheduler(cluster, profile, random.Random(scenario.seed))
    pods = pending_pods(cluster, None)
    samples: list[float] = []
    placed = 0
    gc.collect()
    for pod in pods:
        begin = time.perf_counter()
        decision = scheduler.schedule(pod)
        samples.append((time.perf_counter() - begin) * 1000)
        placed += decision.node is not None
    return {
        "nodes": scenario.nodes,
        "pvs": len(cluster.pvs),
        "shape": scenario.shape,
        "pods": len(pods),
        "placed": placed,
        "load_seconds": round(load_seconds, 2),
        "ms_per_pod": {
            "mean": round(statistics.fmean(samples), 3),
            "p50": round(percentile(samples, 0.5), 3),
            "p90": round(percentile(samples, 0.9), 3),
            "p99": round(percentile(samples, 0.99), 3),
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--nodes", type=int, default=5000)
    parser.add_argument("--pvs-per-node", type=int, nargs="+", default=[10, 1])
    parser.add_argument("--pods", type=int, default=500)
    parser.add_argument("--shape", default="wffc")
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    results = []
    for pvs_per_node in args.pvs_per_node:
        scenario = Scenario(
            nodes=args.nodes,
            shape=args.shape,
            pvs_per_node=pvs_per_node,
            measured_pods=args.pods,
            seed=args.seed,
        )
        results.append(measure(scenario))
        print(json.dumps(results[-1]), file=sys.stderr)
    report = {
        "benchmark": "engine_decisions",
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "results": results,
    }
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
