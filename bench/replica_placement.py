"""Time per replica placement on a seeded synthetic cluster.

    python bench/replica_placement.py [--nodes 1000 --disks 4 --zones 3 --volumes 3000 --seed 1]

Builds ``nodes`` Kubernetes Nodes and StorageNodes (``disks`` disks each, over ``zones``
zones, a few storage-cordoned, evicting or tagged), then places ``volumes`` new volumes of
three replicas (some two, some with selectors or best-effort locality) one after another
in name order with one ``ScheduledSpace``, as a scheduling pass does.  It also times
``place_for_new_volume`` the way CheckVolumeBinding uses it: one claim, asked for a few
hundred candidate pod nodes.  Prints JSON: milliseconds per replica (mean, p50, p99).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from volsched.cache.objects.core import parse_node
from volsched.cache.objects.replicated import Volume, parse_storage_node, parse_volume
from volsched.scheduling.replicas import (
    ReplicaCluster,
    ReplicaSchedulingSettings,
    ScheduledSpace,
    place_for_new_volume,
    schedule_volume,
)

GI = 2**30


def build_cluster(
    rng: random.Random, nodes: int, disks: int, zones: int
) -> tuple[list[Any], list[Any]]:
    kube, storage = [], []
    for n in range(nodes):
        name = f"node-{n:05d}"
        kube.append(
            parse_node(
                {
                    "metadata": {
                        "name": name,
                        "labels": {"topology.kubernetes.io/zone": f"zone-{n % zones}"},
                    },
                    "spec": {"unschedulable": rng.random() < 0.01},
                    "status": {
                        "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                        "conditions": [{"type": "Ready", "status": "True"}],
                    },
                }
            )
        )
        spec_disks, status_disks = {}, {}
        for d in range(disks):
            maximum = rng.choice((1024, 2048, 4096)) * GI
            used = rng.randrange(0, maximum // 2)
            spec_disks[f"disk-{d}"] = {
                "path": f"/mnt/disk-{d}",
                "allowScheduling": rng.random() > 0.02,
                "storageReserved": maximum // 10,
                "tags": ["ssd"] if d % 2 == 0 else ["hdd"],
            }
            status_disks[f"disk-{d}"] = {
                "storageMaximum": maximum,
                "storageAvailable": maximum - used,
                "storageScheduled": used,
            }
        storage.append(
            parse_storage_node(
                {
                    "metadata": {"name": name},
                    "spec": {
                        "allowScheduling": rng.random() > 0.01,
                        "evictionRequested": rng.random() < 0.01,
                        "tags": ["fast"] if n % 4 == 0 else [],
                        "disks": spec_disks,
                    },
                    "status": {"ready": rng.random() > 0.01, "disks": status_disks},
                }
            )
        )
    return kube, storage


def build_volumes(rng: random.Random, count: int, nodes: int) -> list[Volume]:
    volumes = []
    for v in range(count):
        spec: dict[str, Any] = {
            "size": f"{rng.randrange(1, 200)}Gi",
            "numberOfReplicas": rng.choice((3, 3, 3, 2)),
        }
        if rng.random() < 0.2:
            spec["diskSelector"] = ["ssd"]
        if rng.random() < 0.1:
            spec["nodeSelector"] = ["fast"]
        if rng.random() < 0.3:
            spec["dataLocality"] = "best-effort"
            spec["nodeID"] = f"node-{rng.randrange(nodes):05d}"
        volumes.append(parse_volume({"metadata": {"name": f"vol-{v:06d}"}, "spec": spec}))
    return volumes


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def summary(samples: list[float]) -> dict[str, float]:
    return {
        "mean": round(statistics.fmean(samples), 4),
        "p50": round(percentile(samples, 0.50), 4),
        "p99": round(percentile(samples, 0.99), 4),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, default=1000)
    parser.add_argument("--disks", type=int, default=4)
    parser.add_argument("--zones", type=int, default=3)
    parser.add_argument("--volumes", type=int, default=3000)
    parser.add_argument("--candidates", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args(argv)
    rng = random.Random(args.seed)
    kube, storage = build_cluster(rng, args.nodes, args.disks, args.zones)
    volumes = build_volumes(rng, args.volumes, args.nodes)
    settings = ReplicaSchedulingSettings()

    started = time.perf_counter()
    cluster = ReplicaCluster(kube, storage, [])
    build_ms = (time.perf_counter() - started) * 1000

    scheduled = ScheduledSpace()
    per_replica: list[float] = []
    placed = unplaced = 0
    clock = time.perf_counter
    pass_started = clock()
    for volume in volumes:
        started = clock()
        result = schedule_volume(volume, cluster, settings, 0.0, scheduled)
        elapsed = (clock() - started) * 1000
        if result is None:
            continue
        attempts = len(result.placed) + result.unplaced
        placed += len(result.placed)
        unplaced += result.unplaced
        per_replica.extend([elapsed / attempts] * attempts)
    pass_ms = (clock() - pass_started) * 1000

    # One claim of a replicated class, checked against many candidate pod nodes.
    candidates = [info.name for info in cluster.nodes[: args.candidates]]
    per_node: list[float] = []
    for locality in ("best-effort", "disabled"):
        for node in candidates:
            started = clock()
            place_for_new_volume(
                20 * GI, 3, locality, (), (), node, cluster, settings, scheduled, "pvc-new"
            )
            per_node.append((clock() - started) * 1000)

    report = {
        "cluster": {
            "nodes": args.nodes,
            "disks_per_node": args.disks,
            "zones": args.zones,
            "volumes": args.volumes,
            "seed": args.seed,
        },
        "build_view_ms": round(build_ms, 2),
        "replicas_placed": placed,
        "replicas_unplaced": unplaced,
        "pass_total_ms": round(pass_ms, 1),
        "ms_per_replica": summary(per_replica),
        "place_for_new_volume_ms_per_pod_node": summary(per_node),
        "place_for_new_volume_pod_nodes": len(per_node),
    }
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
