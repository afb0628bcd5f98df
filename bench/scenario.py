"""Seeded, deterministic cluster scenarios for benchmarks (and tests that need scale).

Shapes of storage, after kube-scheduler's scheduler_perf workloads:

- ``prebound``: every measured pod has a claim already bound to a PV pinned to one node;
- ``wffc``: WaitForFirstConsumer local PVs, ``pvs_per_node`` on each node, in two
  StorageClasses with varied sizes; each measured pod has one unbound claim;
- ``dynamic``: a provisioner with allowedTopologies per zone; each pod one claim;
- ``replicated``: StorageNodes with ``disks_per_node`` disks and a replicated
  StorageClass; half of the measured pods ask for a new replicated volume (provisioned
  with best-effort data locality), the other half use an existing one whose replicas
  already sit on nodes in different zones, so pod locality decides (every fourth of
  those pods is labelled ``strict``);
- ``none``: pods without volumes.

With ``constrained``, every pod (running and measured) belongs to one of ``groups``
StatefulSet-like groups (label ``app``), and every measured pod carries what such
workloads write: a required pod anti-affinity to its own group on
``kubernetes.io/hostname`` and a DoNotSchedule spread constraint over zones (maxSkew 1).

Initial pods are already running (``spec.nodeName`` set, phase Running) and are spread
round-robin over the nodes; in the ``prebound`` shape each has its own bound claim, as
scheduler_perf's ``initPods`` do.  Every object carries ``apiVersion`` so the emulator
can load it as is; the measured pods come last, each right after its claim and volume.
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
SHAPES = ("wffc", "prebound", "dynamic", "replicated", "none")
STORAGE_API = "volsched.io/v1alpha1"
REPLICATED_PROVISIONER = "replicated.volsched.io"
LOCALITY_LABEL = "volsched.io/locality"
GI = 2**30


@dataclass(frozen=True)
class Scenario:
    nodes: int = 100
    zones: int = 3
    shape: str = "wffc"
    pvs_per_node: int = 10
    initial_pods: int = 0
    measured_pods: int = 100
    seed: int = 1
    # StorageNodes with this many disks each (0: none; the replicated shape uses 4).
    disks_per_node: int = 0
    replicas: int = 3
    # Pods in StatefulSet-like groups with anti-affinity and zone spread (see above).
    constrained: bool = False
    groups: int = 2000

    @property
    def storage_disks(self) -> int:
        return self.disks_per_node or (4 if self.shape == "replicated" else 0)

    @property
    def pvs(self) -> int:
        """Local PVs of the ``wffc`` shape (the PV count of the scaling series)."""
        return self.nodes * self.pvs_per_node if self.shape == "wffc" else 0


def _node(index: int, zones: int) -> Raw:
    name = f"node-{index:05d}"
    return {
        "apiVersion": "v1",
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
        "apiVersion": "v1",
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
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": metadata,
        "spec": spec,
        "status": {"phase": phase},
    }


def _group_constraints(group: str) -> Raw:
    """Required anti-affinity to the pod's own group per node, and even spread per zone."""
    selector = {"matchLabels": {"app": group}}
    return {
        "affinity": {
            "podAntiAffinity": {
                "requiredDuringSchedulingIgnoredDuringExecution": [
                    {"labelSelector": selector, "topologyKey": HOSTNAME}
                ]
            }
        },
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": selector,
            }
        ],
    }


def _pod(
    name: str,
    claim: str | None,
    node: str = "",
    created: int = 0,
    labels: Raw | None = None,
    constraints: Raw | None = None,
) -> Raw:
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
    if constraints:
        spec.update(constraints)
    metadata: Raw = {
        "name": name,
        "namespace": "bench",
        "uid": f"uid-{name}",
        "resourceVersion": "1",
        "creationTimestamp": f"2026-01-01T{created // 3600 % 24:02d}:{created // 60 % 60:02d}:{created % 60:02d}Z",
    }
    if labels:
        metadata["labels"] = labels
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": metadata,
        "spec": spec,
        "status": {"phase": "Running" if node else "Pending"},
    }


def storage_classes(replicated: bool = False, replicas: int = 3) -> list[Raw]:
    classes: list[Raw] = [
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": name, "resourceVersion": "1"},
            "provisioner": "kubernetes.io/no-provisioner",
            "volumeBindingMode": "WaitForFirstConsumer",
        }
        for name in ("local-ssd", "local-hdd")
    ]
    classes.append(
        {
            "apiVersion": "storage.k8s.io/v1",
            "kind": "StorageClass",
            "metadata": {"name": "zonal", "resourceVersion": "1"},
            "provisioner": "csi.example.com",
            "volumeBindingMode": "WaitForFirstConsumer",
            "allowedTopologies": [
                {"matchLabelExpressions": [{"key": ZONE, "values": ["zone-0", "zone-1"]}]}
            ],
        }
    )
    if replicated:
        classes.append(
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": "replicated", "resourceVersion": "1"},
                "provisioner": REPLICATED_PROVISIONER,
                "volumeBindingMode": "WaitForFirstConsumer",
                "parameters": {"numberOfReplicas": str(replicas), "dataLocality": "best-effort"},
            }
        )
    return classes


@dataclass(frozen=True)
class _Copy:
    volume: str
    size_gi: int
    node: str
    disk: str
    primary: bool


def _existing_volumes(scenario: Scenario, node_names: list[str]) -> dict[int, list[_Copy]]:
    """Replica placements of the replicated shape's existing volumes, by pod number.

    Replicas of one volume go to consecutive node indexes, which are in different zones
    whenever there are at least as many zones as replicas.
    """
    if scenario.shape != "replicated":
        return {}
    rng = random.Random(scenario.seed * 7919 + 1)
    placements: dict[int, list[_Copy]] = {}
    copies = min(scenario.replicas, scenario.nodes)
    first = scenario.initial_pods
    for number in range(first + 1, first + scenario.measured_pods, 2):
        base = rng.randrange(scenario.nodes)
        size = rng.choice((5, 10, 20))
        volume = f"vol-{number:06d}"
        placements[number] = [
            _Copy(
                volume,
                size,
                node_names[(base + offset) % scenario.nodes],
                f"disk-{rng.randrange(scenario.storage_disks)}",
                offset == 0,
            )
            for offset in range(copies)
        ]
    return placements


def _storage_node(
    index: int, name: str, disks: int, rng: random.Random, scheduled: dict[tuple[str, str], int]
) -> Raw:
    spec_disks: Raw = {}
    status_disks: Raw = {}
    for d in range(disks):
        disk = f"disk-{d}"
        maximum = rng.choice((1024, 2048, 4096)) * GI
        used = rng.randrange(0, maximum // 4)
        spec_disks[disk] = {
            "path": f"/mnt/{disk}",
            "allowScheduling": True,
            "storageReserved": maximum // 10,
            "tags": ["ssd"] if d % 2 == 0 else ["hdd"],
        }
        status_disks[disk] = {
            "storageMaximum": maximum,
            "storageAvailable": maximum - used,
            "storageScheduled": scheduled.get((name, disk), 0),
        }
    return {
        "apiVersion": STORAGE_API,
        "kind": "StorageNode",
        "metadata": {"name": name, "resourceVersion": "1"},
        "spec": {
            "allowScheduling": True,
            "tags": ["fast"] if index % 4 == 0 else [],
            "disks": spec_disks,
        },
        "status": {"ready": True, "disks": status_disks},
    }


def _replicated_volume(copies: list[_Copy], claim: str) -> Iterator[Raw]:
    """An existing replicated volume: Volume, its Replicas, the bound PV and claim."""
    first = copies[0]
    yield {
        "apiVersion": STORAGE_API,
        "kind": "Volume",
        "metadata": {"name": first.volume, "resourceVersion": "1"},
        "spec": {
            "size": f"{first.size_gi}Gi",
            "numberOfReplicas": len(copies),
            "dataLocality": "best-effort",
        },
        "status": {"robustness": "healthy", "state": "detached"},
    }
    for copy in copies:
        yield {
            "apiVersion": STORAGE_API,
            "kind": "Replica",
            "metadata": {"name": f"{copy.volume}-r-{copy.node}", "resourceVersion": "1"},
            "spec": {
                "volumeName": copy.volume,
                "nodeID": copy.node,
                "diskID": copy.disk,
                "primary": copy.primary,
            },
            "status": {"synced": True},
        }
    pv_name = f"pv-{first.volume}"
    yield {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": pv_name, "resourceVersion": "1"},
        "spec": {
            "capacity": {"storage": f"{first.size_gi}Gi"},
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": "replicated",
            "csi": {"driver": REPLICATED_PROVISIONER, "volumeHandle": first.volume},
            "claimRef": {"namespace": "bench", "name": claim, "uid": f"uid-{claim}"},
        },
        "status": {"phase": "Bound"},
    }
    yield _claim(claim, first.size_gi, "replicated", pv_name)


def generate(scenario: Scenario) -> Iterator[Raw]:
    """The scenario's objects: cluster first, then initial pods, then measured pods."""
    rng = random.Random(scenario.seed)
    node_names = [f"node-{i:05d}" for i in range(scenario.nodes)]
    disks = scenario.storage_disks
    existing = _existing_volumes(scenario, node_names)
    yield from storage_classes(replicated=disks > 0, replicas=scenario.replicas)
    for index in range(scenario.nodes):
        yield _node(index, scenario.zones)
    if disks:
        scheduled: dict[tuple[str, str], int] = {}
        for copies in existing.values():
            for copy in copies:
                place = (copy.node, copy.disk)
                scheduled[place] = scheduled.get(place, 0) + copy.size_gi * GI
        disk_rng = random.Random(scenario.seed * 104729 + 3)
        for index, node in enumerate(node_names):
            yield _storage_node(index, node, disks, disk_rng, scheduled)
    if scenario.shape == "wffc":
        for index, node in enumerate(node_names):
            for slot in range(scenario.pvs_per_node):
                # Alternate the classes across nodes too, so one PV per node still
                # offers both classes cluster-wide.
                storage_class = "local-ssd" if (index + slot) % 2 == 0 else "local-hdd"
                size = rng.choice(SIZES_GI)
                yield _pv(f"pv-{index:05d}-{slot:03d}", size, storage_class, node)
    total = scenario.initial_pods + scenario.measured_pods
    for number in range(total):
        name = f"pod-{number:06d}"
        running = number < scenario.initial_pods
        node = node_names[number % scenario.nodes] if running else ""
        claim = f"claim-{number:06d}"
        labels: Raw | None = None
        if scenario.shape == "prebound":
            target = node or node_names[rng.randrange(scenario.nodes)]
            yield _pv(f"pv-bound-{number:06d}", 10, "local-ssd", target, claim)
            yield _claim(claim, 10, "local-ssd", f"pv-bound-{number:06d}")
        elif scenario.shape == "wffc" and not running:
            yield _claim(claim, rng.choice((5, 10, 20)), rng.choice(("local-ssd", "local-hdd")))
        elif scenario.shape == "dynamic" and not running:
            yield _claim(claim, 10, "zonal")
        elif scenario.shape == "replicated" and not running:
            if number in existing:
                yield from _replicated_volume(existing[number], claim)
                if number % 4 == 3:
                    labels = {LOCALITY_LABEL: "strict"}
            else:
                yield _claim(claim, rng.choice((5, 10, 20)), "replicated")
        else:
            claim = ""
        constraints: Raw | None = None
        if scenario.constrained:
            group = f"group-{number % scenario.groups:05d}"
            labels = {**(labels or {}), "app": group}
            constraints = None if running else _group_constraints(group)
        yield _pod(name, claim or None, node, number, labels, constraints)


def is_measured_pod(raw: Raw) -> bool:
    """A pod the scheduler has to place (the rest of the scenario is set-up)."""
    return raw.get("kind") == "Pod" and not (raw.get("spec") or {}).get("nodeName")


def object_counts(objects: list[Raw]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for raw in objects:
        counts[raw["kind"]] = counts.get(raw["kind"], 0) + 1
    return dict(sorted(counts.items()))


def main() -> None:
    parser = argparse.ArgumentParser(description="print a scenario as a JSON List")
    parser.add_argument("--nodes", type=int, default=10)
    parser.add_argument("--zones", type=int, default=3)
    parser.add_argument("--shape", default="wffc", choices=SHAPES)
    parser.add_argument("--pvs-per-node", type=int, default=2)
    parser.add_argument("--initial-pods", type=int, default=0)
    parser.add_argument("--pods", type=int, default=10)
    parser.add_argument("--disks-per-node", type=int, default=0)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    scenario = Scenario(
        args.nodes,
        args.zones,
        args.shape,
        args.pvs_per_node,
        args.initial_pods,
        args.pods,
        args.seed,
        disks_per_node=args.disks_per_node,
    )
    json.dump({"kind": "List", "items": list(generate(scenario))}, sys.stdout)


if __name__ == "__main__":
    main()
