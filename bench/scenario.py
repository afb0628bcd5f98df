"""Seeded, deterministic cluster scenarios for benchmarks (and tests that need scale).

Shapes of storage, after kube-scheduler's scheduler_perf workloads:

- ``prebound``: every measured pod has a claim already bound to a PV pinned to one node;
- ``wffc``: WaitForFirstConsumer local PVs, ``pvs_per_node`` on each node, in two
  StorageClasses with varied sizes; each measured pod has one unbound claim;
- ``dynamic``: a provisioner with allowedTopologies per zone; each pod one claim;
- ``none``: pods without volumes.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

Raw = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
SIZES_GI = (5, 10, 20, 50, 100)


@dataclass(frozen=True)
class Scenario:
    nodes: int = 100
    zones: int = 3
    shape: str = "wffc"
    pvs_per_node: int = 10
    initial_pods: int = 0
    measured_pods: int = 100
    seed: int = 1


def _node(index: int, zones: int) -> Raw:
    name = f"node-{index:05d}"
    return {
        "kind": "Node",
        "metadata": {
            "name": name,
            "resourceVersion": "1",
            "labels": {HOSTNAME: name, ZONE: f"zone-{index % zones}"},
        },
        "spec": {},
        "status": {
            "allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def _pv(name: str, size_gi: int, storage_class: str, node: str | None, claim: str = "") -> Raw:
    spec: Raw = {
        "capacity": {"storage": f"{size_gi}Gi"},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": storage_class,
        "local": {"path": f"/mnt/{name}"},
    }
    if node is not None:
        spec["nodeAffinity"] = {
            "required": {
                "nodeSelectorTerms": [
                    {"matchExpressions": [{"key": HOSTNAME, "operator": "In", "values": [node]}]}
                ]
            }
        }
    status = "Available"
    if claim:
        spec["claimRef"] = {"namespace": "bench", "name": claim, "uid": f"uid-{claim}"}
        status = "Bound"
    return {
        "kind": "PersistentVolume",
        "metadata": {"name": name, "resourceVersion": "1"},
        "spec": spec,
        "status": {"phase": status},
    }


def _claim(name: str, size_gi: int, storage_class: str, volume: str = "") -> Raw:
    metadata: Raw = {
        "name": name,
        "namespace": "bench",
        "uid": f"uid-{name}",
        "resourceVersion": "1",
    }
    spec: Raw = {
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": storage_class,
        "resources": {"requests": {"storage": f"{size_gi}Gi"}},
    }
    phase = "Pending"
    if volume:
        spec["volumeName"] = volume
        metadata["annotations"] = {"pv.kubernetes.io/bind-completed": "yes"}
        phase = "Bound"
    return {
        "kind": "PersistentVolumeClaim",
        "metadata": metadata,
        "spec": spec,
        "status": {"phase": phase},
    }


def _pod(name: str, claim: str | None, node: str = "", created: int = 0) -> Raw:
    spec: Raw = {
        "schedulerName": "volsched",
        "containers": [
            {"name": "main", "resources": {"requests": {"cpu": "100m", "memory": "256Mi"}}}
        ],
    }
    if claim:
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim}}]
    if node:
        spec["nodeName"] = node
    return {
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": "bench",
            "uid": f"uid-{name}",
            "resourceVersion": "1",
            "creationTimestamp": f"2026-01-01T00:{created // 60 % 60:02d}:{created % 60:02d}Z",
        },
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def storage_classes() -> list[Raw]:
    classes = [
        {
            "kind": "StorageClass",
            "metadata": {"name": name, "resourceVersion": "1"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
        for name in ("local-ssd", "local-hdd")
    ]
    classes.append(
        {
            "kind": "StorageClass",
            "metadata": {"name": "zonal", "resourceVersion": "1"},
            "provisioner": "csi.example.com",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [
                {"matchLabelExpressions": [{"key": ZONE, "values": ["zone-0", "zone-1"]}]}
            ],
        }
    )
    return classes


def generate(scenario: Scenario) -> Iterator[Raw]:
    """The scenario's objects: cluster first, then initial pods, then measured pods."""
    rng = random.Random(scenario.seed)
    node_names = [f"node-{i:05d}" for i in range(scenario.nodes)]
    yield from storage_classes()
    for index in range(scenario.nodes):
        yield _node(index, scenario.zones)
    if scenario.shape == "wffc":
        for index, node in enumerate(node_names):
            for slot in range(scenario.pvs_per_node):
                storage_class = "local-ssd" if slot % 2 == 0 else "local-hdd"
                size = rng.choice(SIZES_GI)
                yield _pv(f"pv-{index:05d}-{slot:03d}", size, storage_class, node)
    total = scenario.initial_pods + scenario.measured_pods
    for number in range(total):
        name = f"pod-{number:06d}"
        running = number < scenario.initial_pods
        node = node_names[number % scenario.nodes] if running else ""
        claim = f"claim-{number:06d}"
        if scenario.shape == "prebound":
            target = node or node_names[rng.randrange(scenario.nodes)]
            yield _pv(f"pv-bound-{number:06d}", 10, "local-ssd", target, claim)
            yield _claim(claim, 10, "local-ssd", f"pv-bound-{number:06d}")
        elif scenario.shape == "wffc" and not running:
            yield _claim(claim, rng.choice((5, 10, 20)), rng.choice(("local-ssd", "local-hdd")))
        elif scenario.shape == "dynamic" and not running:
            yield _claim(claim, 10, "zonal")
        else:
            claim = ""
        yield _pod(name, claim or None, node, number)


def main() -> None:
    parser = argparse.ArgumentParser(description="print a scenario as a JSON List")
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--zones", type=int, default=3)
    parser.add_argument("--shape", default="wffc", choices=("wffc", "prebound", "dynamic", "none"))
    parser.add_argument("--pvs-per-node", type=int, default=2)
    parser.add_argument("--pods", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    scenario = Scenario(
        args.nodes, args.zones, args.shape, args.pvs_per_node, 0, args.pods, args.seed
    )
    json.dump({"kind": "List", "items": list(generate(scenario))}, sys.stdout)


if __name__ == "__main__":
    main()
