"""How often volsched agrees with the real kube-scheduler, side by side on a real control plane.

    VOLSCHED_KUBE_ASSETS=/path/to/bin python -m bench.oracle.shadow_agreement \\
        [--nodes 60] [--pods 1000] [--seed 1] [--rate 20] [--wffc-pods 0] \\
        [--volsched-profile kube|own] [--out FILE.json] [--keep-logs DIR]

The recordings under ``tests/oracle/`` check volsched against kube-scheduler one small
scenario at a time. This benchmark asks the question a platform team asks before switching:
on a busy cluster with a realistic mix of pods, how often would volsched have put a pod where
kube-scheduler did? It answers it the way they would, with shadow mode (docs/guides/shadow.md):

1. a :class:`~bench.oracle.controlplane.ControlPlane` (etcd, kube-apiserver, the PV binder)
   and the real kube-scheduler v1.36.2 with the default profile at ``-v=2``;
2. nodes of mixed sizes in three zones, with ``disktype``/``pool`` labels, a few
   ``NoSchedule`` and ``PreferNoSchedule`` taints and ``status.images`` (created as the
   recorder creates them: status patched, exact taints so the not-ready taint is gone);
3. ``volsched run --shadow`` with the *same* KubeSchedulerConfiguration, so both decide with
   the same plugins and weights (``--volsched-profile kube``, the default), or with none at
   all (``--volsched-profile own``: volsched's own default profile, which adds
   ``PrioritizeVolumes`` and so may choose another node for a claim pod, counted under the
   cause ``storage-preference``); the pods are created only once it is ready (a shadow does
   not compare pods it first sees bound);
4. the pods, at a modest rate (default 20 a second) so that kube-scheduler decides them one
   by one, each against the bindings of the ones before: plain pods with varied requests,
   best-effort pods, pods whose images some nodes hold, preferred and required node affinity,
   tolerations, host ports, soft and hard pod (anti-)affinity by zone and by hostname,
   topology spread constraints (zone and hostname, DoNotSchedule and ScheduleAnyway), all in
   Deployment-like label sets, some behind a Service or owned by a ReplicaSet so that the
   default spreading constraints apply too. With ``--wffc-pods N``, N of the pods are
   StatefulSet-like pods with a claim each (created just before its pod) of a local,
   ``WaitForFirstConsumer`` StorageClass, interleaved with the rest; local PVs of mixed sizes
   are pinned to the nodes, created (and ``Available``) before kube-scheduler starts. Claim
   pods carry requests and some of the constraints above too. Everything is drawn from
   ``--seed`` (the claim pods and PVs from a stream of their own, so the other pods are
   the ones a run without them draws);
5. it waits until every pod is bound or has a FailedScheduling event and the shadow's
   compared count has stopped growing, then reads ``/shadow/report``. The report keeps only
   the latest 100 differences, so it is also read every two seconds during the run and the
   differences are merged by pod: every non-agreement is listed, with what kind of pod it
   was and what the two nodes are;
6. it checks that volsched wrote nothing (no Event it reported, no field it manages on any
   object) and writes the result as JSON: the outcomes, the report's ``causes`` and
   ``storage`` section, how the claim pods came out, and per difference its ``cause``,
   ``differingPlugins`` and, for a claim pod, the claim's size and both PVs' sizes (theirs:
   the PV bound to the claim; ours: from the difference's ``strandedBytes`` when given).

Claims and PVs are not deleted at the end (their protection finalizers would hold them):
the whole control plane, etcd's data with it, is torn down instead.

With fewer than 100 nodes kube-scheduler's adaptive ``percentageOfNodesToScore`` still
evaluates every node, as the shadow always does, so the two choose among the same nodes.
Everything started is stopped on exit, on error and on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shlex
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any

import yaml

from bench.local_volumes import local_pv_manifest
from bench.oracle.controlplane import ASSETS_ENV, ControlPlane, assets_dir, free_port
from bench.oracle.record import MERGE, parse_scheduler_log

Raw = dict[str, Any]
ROOT = Path(__file__).resolve().parents[2]
# Beside, not among, the embedded benchmarks' results (the docs read those as one set).
DEFAULT_OUT = ROOT / "bench" / "results" / "oracle" / "shadow-agreement.json"
NAMESPACE = "shadow-bench"
ZONE = "topology.kubernetes.io/zone"
HOSTNAME = "kubernetes.io/hostname"
ZONES = ("zone-a", "zone-b", "zone-c")
PAUSE = "registry.k8s.io/pause:3.10"
POLL_SECONDS = 2.0
# The outcomes that count as agreement (docs/guides/shadow.md).
AGREEING = ("agreed", "tied")

# The KubeSchedulerConfiguration both schedulers run with: kube-scheduler's default profile.
# No ``profiles`` key: kube-scheduler then serves default-scheduler with its defaults, and
# volsched decides as that profile does without claiming the name it shadows.
SCHEDULER_CONFIGURATION: Raw = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "leaderElection": {"leaderElect": False},
}

# (shape, cpu allocatable, memory allocatable, weight): mixed sizes, so that
# NodeResourcesFit and BalancedAllocation decide between them.
NODE_SHAPES: tuple[tuple[str, str, str, int], ...] = (
    ("small", "3920m", "7680Mi", 3),
    ("medium", "7910m", "15Gi", 4),
    ("highmem", "7910m", "62Gi", 2),
    ("large", "15890m", "60Gi", 3),
    ("xlarge", "31850m", "124Gi", 1),
)
# Images some nodes hold (name, size in bytes); ImageLocality scores those of 23 MB to 1 GB.
IMAGES: tuple[tuple[str, int], ...] = (
    ("registry.example.com/shop/web:1.4.2", 180_000_000),
    ("registry.example.com/shop/api:2.0.1", 320_000_000),
    ("registry.example.com/data/postgres:16.3", 430_000_000),
    ("registry.example.com/data/redis:7.2", 45_000_000),
    ("registry.example.com/ml/trainer:0.9", 950_000_000),
    ("registry.example.com/batch/report:3.1", 120_000_000),
)
# The local, WaitForFirstConsumer class of the claim pods, its PVs' and claims' sizes (GiB).
STORAGE_CLASS = "local-wffc"
PV_SIZES_GIB = (5, 10, 20, 50, 100)
PV_SIZE_WEIGHTS = (3, 4, 3, 2, 1)
CLAIM_SIZES_GIB = (1, 2, 4, 5, 8, 10, 15, 20, 30, 40)
CLAIM_SIZE_WEIGHTS = (3, 3, 3, 3, 3, 3, 2, 2, 1, 1)
GIB = 2**30
CPU_REQUESTS = ("50m", "100m", "100m", "250m", "250m", "500m", "1", "2")
MEMORY_REQUESTS = ("64Mi", "128Mi", "256Mi", "256Mi", "512Mi", "1Gi", "2Gi", "4Gi")


@dataclass(frozen=True)
class AgreementRun:
    """One benchmark run's parameters; every random choice is drawn from ``seed``."""

    nodes: int = 60
    pods: int = 1000
    seed: int = 1
    rate: float = 20.0  # pods created per second
    settle_seconds: float = 10.0  # how long nothing may change before the run is over
    timeout_seconds: float = 900.0  # for the wait after the last pod is created
    scheduler_verbosity: int = 2
    # The KubeSchedulerConfiguration volsched gets; None: as ``volsched_profile`` says.
    # Only a check of the benchmark itself gives it another (does a known difference show?).
    volsched_configuration: Raw | None = None
    # How many of ``pods`` are StatefulSet-like pods with a WaitForFirstConsumer claim.
    wffc_pods: int = 0
    # "kube": volsched's config holds kube-scheduler's KubeSchedulerConfiguration; "own":
    # it holds none, and volsched decides with its own default profile.
    volsched_profile: str = "kube"

    def shadow_configuration(self) -> Raw | None:
        """The KubeSchedulerConfiguration volsched's config holds; None: none at all."""
        if self.volsched_configuration is not None:
            return self.volsched_configuration
        return SCHEDULER_CONFIGURATION if self.volsched_profile == "kube" else None


# --------------------------------------------------------------------------- nodes


def make_nodes(run: AgreementRun, rng: random.Random) -> list[Raw]:
    """Node objects with status: sizes, zones, labels, some taints, images."""
    shapes = [shape for shape in NODE_SHAPES for _ in range(shape[3])]
    nodes = []
    for index in range(run.nodes):
        name = f"node-{index:03d}"
        shape, cpu, memory, _ = rng.choice(shapes)
        labels = {
            HOSTNAME: name,
            ZONE: ZONES[index % len(ZONES)],
            "kubernetes.io/os": "linux",
            "kubernetes.io/arch": "amd64",
            "node.example.com/shape": shape,
            "disktype": rng.choice(("ssd", "ssd", "hdd")),
        }
        taints: list[Raw] = []
        draw = rng.random()
        if draw < 0.08:
            labels["pool"] = "infra"
            taints.append({"key": "dedicated", "value": "infra", "effect": "NoSchedule"})
        elif draw < 0.20:
            labels["pool"] = "spot"
            taints.append({"key": "spot", "value": "true", "effect": "PreferNoSchedule"})
        else:
            labels["pool"] = "general"
        images = [
            {"names": [image, f"{image.split(':')[0]}@sha256:{index:064x}"], "sizeBytes": size}
            for image, size in IMAGES
            if rng.random() < 0.3
        ]
        images.append({"names": [PAUSE], "sizeBytes": 740_000})
        allocatable = {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "100Gi"}
        nodes.append(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": name, "labels": labels},
                "spec": {"taints": taints},
                "status": {
                    "capacity": allocatable,
                    "allocatable": allocatable,
                    "conditions": [
                        {
                            "type": "Ready",
                            "status": "True",
                            "reason": "KubeletReady",
                            "message": "node of the shadow agreement benchmark",
                        }
                    ],
                    "images": images,
                },
            }
        )
    return nodes


def describe_node(node: Raw) -> Raw:
    """What a reader of a difference needs to know about a node, in one small mapping."""
    labels = node["metadata"]["labels"]
    return {
        "zone": labels[ZONE],
        "shape": labels["node.example.com/shape"],
        "cpu": node["status"]["allocatable"]["cpu"],
        "memory": node["status"]["allocatable"]["memory"],
        "disktype": labels["disktype"],
        "pool": labels["pool"],
        "taints": [f"{t['key']}={t['value']}:{t['effect']}" for t in node["spec"]["taints"]],
        "images": [i["names"][0] for i in node["status"]["images"] if i["names"][0] != PAUSE],
    }


# --------------------------------------------------------------------------- volumes


def claim_rng(run: AgreementRun) -> random.Random:
    """The claim pods' and PVs' own random stream: the other pods and the nodes are the
    ones a run without claim pods draws."""
    return random.Random(f"{run.seed}/wffc")


def make_storage_class() -> Raw:
    """The local class: no provisioner, binding delayed until a pod is scheduled."""
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": STORAGE_CLASS},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer",
        "reclaimPolicy": "Retain",
    }


def make_volumes(run: AgreementRun, nodes: Sequence[Raw], rng: random.Random) -> list[Raw]:
    """Local PVs of mixed sizes on every node, pinned to it by hostname: 2 to 4 a node, or
    more where the claims need them (about one and a half PVs a claim), none without claim
    pods."""
    if run.wffc_pods <= 0:
        return []
    low = max(2, -(-3 * run.wffc_pods // (2 * max(run.nodes, 1))) - 1)
    volumes = []
    for node in nodes:
        name = node["metadata"]["name"]
        for index in range(rng.randint(low, low + 2)):
            size = rng.choices(PV_SIZES_GIB, PV_SIZE_WEIGHTS)[0]
            volumes.append(
                local_pv_manifest(
                    f"local-{name}-{index}",
                    name,
                    size,
                    STORAGE_CLASS,
                    f"/mnt/disks/vol{index}",
                    {"size": f"{size}Gi"},
                )
            )
    return volumes


def quantity_bytes(quantity: str) -> int:
    """A storage quantity (``10Gi``, ``500M``, ``1073741824``) in bytes."""
    suffixes = {
        "Ki": 2**10,
        "Mi": 2**20,
        "Gi": 2**30,
        "Ti": 2**40,
        "Pi": 2**50,
        "k": 10**3,
        "K": 10**3,
        "M": 10**6,
        "G": 10**9,
        "T": 10**12,
        "P": 10**15,
    }
    for suffix in sorted(suffixes, key=len, reverse=True):
        if quantity.endswith(suffix):
            return int(float(quantity[: -len(suffix)]) * suffixes[suffix])
    return int(float(quantity))


# --------------------------------------------------------------------------- pods


@dataclass(frozen=True)
class App:
    """A Deployment-like set of pods: one label set, one kind of constraint."""

    name: str
    kind: str
    weight: float
    # "service", "replicaset", "statefulset" or "none": what default spreading sees
    owner: str = "none"


# Each kind is one way a pod can constrain or steer its placement; the weights set the mix.
APPS: tuple[App, ...] = (
    App("web", "plain", 10, "service"),
    App("api", "plain", 8, "replicaset"),
    App("worker", "plain", 8),
    App("db", "plain", 3, "service"),
    App("cache", "plain", 3, "replicaset"),
    App("scratch", "besteffort", 5),
    App("sidecar", "multi-container", 4, "service"),
    App("imaged", "image", 6, "replicaset"),
    App("ssd-lover", "preferred-node-affinity", 5),
    App("ssd-only", "required-node-affinity", 4, "service"),
    App("zone-b", "node-selector", 2),
    App("infra-agent", "tolerates-noschedule", 3),
    App("spot-batch", "tolerates-prefernoschedule", 4, "replicaset"),
    App("ingress", "host-port", 2),
    App("soft-anti", "preferred-anti-affinity-hostname", 4, "service"),
    App("hard-anti", "required-anti-affinity-hostname", 3),
    App("one-per-zone", "required-anti-affinity-zone", 0.6),
    App("near-cache", "preferred-affinity-zone", 3),
    App("near-db", "required-affinity-zone", 2),
    App("with-cache", "required-affinity-hostname", 1),
    App("zone-spread", "spread-zone-donotschedule", 5, "replicaset"),
    App("host-spread", "spread-hostname-scheduleanyway", 4),
    App("both-spread", "spread-zone-soft-hostname-hard", 3, "service"),
    App("ssd-spread", "spread-zone-with-required-node-affinity", 2),
    App("mixed", "tolerations-preferred-affinity-soft-anti", 3, "replicaset"),
)


# The StatefulSet-like apps of the claim pods (``--wffc-pods``): one claim each, and the
# requests and constraints of the kind named.
CLAIM_APPS: tuple[App, ...] = (
    App("pg", "plain", 4, "statefulset"),
    App("kafka", "preferred-anti-affinity-hostname", 3, "statefulset"),
    App("elastic", "spread-zone-donotschedule", 3, "statefulset"),
    App("mongo", "required-node-affinity", 2, "statefulset"),
    App("zk", "spread-hostname-scheduleanyway", 2, "statefulset"),
    App("etcd-store", "tolerates-prefernoschedule", 2, "service"),
    App("minio", "required-anti-affinity-hostname", 1),
    App("scratch-db", "besteffort", 1),
)


def _container(rng: random.Random, image: str = PAUSE, requests: bool = True) -> Raw:
    container: Raw = {"name": "main", "image": image}
    if requests:
        container["resources"] = {
            "requests": {"cpu": rng.choice(CPU_REQUESTS), "memory": rng.choice(MEMORY_REQUESTS)}
        }
    return container


def _term(labels: dict[str, str], key: str) -> Raw:
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key}


def _spread(app: str, key: str, skew: int, when: str, **extra: Any) -> Raw:
    return {
        "maxSkew": skew,
        "topologyKey": key,
        "whenUnsatisfiable": when,
        "labelSelector": {"matchLabels": {"app": app}},
        **extra,
    }


# (constraint types, spec changes) for each kind; the constraint types go into the result.
def _shape(kind: str, app: str, rng: random.Random) -> tuple[list[str], Raw]:
    own = {"app": app}
    if kind == "plain":
        return ["requests"], {"containers": [_container(rng)]}
    if kind == "besteffort":
        return ["best-effort"], {"containers": [_container(rng, requests=False)]}
    if kind == "multi-container":
        sidecar = _container(rng)
        sidecar["name"] = "sidecar"
        init = _container(rng)
        init["name"] = "init"
        return ["requests", "init-container", "two-containers"], {
            "initContainers": [init],
            "containers": [_container(rng), sidecar],
        }
    if kind == "image":
        image = rng.choice(IMAGES)[0]
        return ["requests", "image-on-some-nodes"], {"containers": [_container(rng, image)]}
    if kind == "preferred-node-affinity":
        return ["requests", "preferred-node-affinity"], {
            "containers": [_container(rng)],
            "affinity": {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 80,
                            "preference": {
                                "matchExpressions": [
                                    {"key": "disktype", "operator": "In", "values": ["ssd"]}
                                ]
                            },
                        },
                        {
                            "weight": 20,
                            "preference": {
                                "matchExpressions": [
                                    {"key": ZONE, "operator": "In", "values": ["zone-a"]}
                                ]
                            },
                        },
                    ]
                }
            },
        }
    if kind == "required-node-affinity":
        return ["requests", "required-node-affinity"], {
            "containers": [_container(rng)],
            "affinity": {
                "nodeAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": {
                        "nodeSelectorTerms": [
                            {
                                "matchExpressions": [
                                    {"key": "disktype", "operator": "In", "values": ["ssd"]},
                                    {"key": "pool", "operator": "NotIn", "values": ["spot"]},
                                ]
                            }
                        ]
                    }
                }
            },
        }
    if kind == "node-selector":
        return ["requests", "node-selector"], {
            "containers": [_container(rng)],
            "nodeSelector": {ZONE: "zone-b"},
        }
    if kind == "tolerates-noschedule":
        return ["requests", "toleration-noschedule", "preferred-node-affinity"], {
            "containers": [_container(rng)],
            "tolerations": [
                {"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}
            ],
            "affinity": {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 100,
                            "preference": {
                                "matchExpressions": [
                                    {"key": "pool", "operator": "In", "values": ["infra"]}
                                ]
                            },
                        }
                    ]
                }
            },
        }
    if kind == "tolerates-prefernoschedule":
        return ["requests", "toleration-prefernoschedule"], {
            "containers": [_container(rng)],
            "tolerations": [{"key": "spot", "operator": "Exists"}],
        }
    if kind == "host-port":
        container = _container(rng)
        container["ports"] = [{"containerPort": 8443, "hostPort": 8443, "protocol": "TCP"}]
        return ["requests", "host-port"], {"containers": [container]}
    if kind == "preferred-anti-affinity-hostname":
        return ["requests", "preferred-pod-anti-affinity-hostname"], {
            "containers": [_container(rng)],
            "affinity": {
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 100, "podAffinityTerm": _term(own, HOSTNAME)}
                    ]
                }
            },
        }
    if kind == "required-anti-affinity-hostname":
        return ["requests", "required-pod-anti-affinity-hostname"], {
            "containers": [_container(rng)],
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [_term(own, HOSTNAME)]
                }
            },
        }
    if kind == "required-anti-affinity-zone":
        return ["requests", "required-pod-anti-affinity-zone"], {
            "containers": [_container(rng)],
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [_term(own, ZONE)]
                }
            },
        }
    if kind == "preferred-affinity-zone":
        return ["requests", "preferred-pod-affinity-zone", "preferred-pod-anti-affinity-zone"], {
            "containers": [_container(rng)],
            "affinity": {
                "podAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 60, "podAffinityTerm": _term({"app": "cache"}, ZONE)}
                    ]
                },
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 30, "podAffinityTerm": _term({"app": "db"}, ZONE)}
                    ]
                },
            },
        }
    if kind == "required-affinity-zone":
        return ["requests", "required-pod-affinity-zone"], {
            "containers": [_container(rng)],
            "affinity": {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [_term({"app": "db"}, ZONE)]
                }
            },
        }
    if kind == "required-affinity-hostname":
        return ["requests", "required-pod-affinity-hostname"], {
            "containers": [_container(rng)],
            "affinity": {
                "podAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        _term({"app": "cache"}, HOSTNAME)
                    ]
                }
            },
        }
    if kind == "spread-zone-donotschedule":
        return ["requests", "spread-zone-DoNotSchedule"], {
            "containers": [_container(rng)],
            "topologySpreadConstraints": [_spread(app, ZONE, 1, "DoNotSchedule")],
        }
    if kind == "spread-hostname-scheduleanyway":
        return ["requests", "spread-hostname-ScheduleAnyway"], {
            "containers": [_container(rng)],
            "topologySpreadConstraints": [_spread(app, HOSTNAME, 1, "ScheduleAnyway")],
        }
    if kind == "spread-zone-soft-hostname-hard":
        return [
            "requests",
            "spread-zone-ScheduleAnyway",
            "spread-hostname-DoNotSchedule",
            "matchLabelKeys",
        ], {
            "containers": [_container(rng)],
            "topologySpreadConstraints": [
                _spread(app, ZONE, 2, "ScheduleAnyway"),
                _spread(app, HOSTNAME, 3, "DoNotSchedule", matchLabelKeys=["pod-template-hash"]),
            ],
        }
    if kind == "spread-zone-with-required-node-affinity":
        return ["requests", "spread-zone-DoNotSchedule", "required-node-affinity"], {
            "containers": [_container(rng)],
            "topologySpreadConstraints": [_spread(app, ZONE, 1, "DoNotSchedule")],
            "nodeSelector": {"disktype": "ssd"},
        }
    if kind == "tolerations-preferred-affinity-soft-anti":
        return [
            "requests",
            "toleration-prefernoschedule",
            "preferred-node-affinity",
            "preferred-pod-anti-affinity-hostname",
        ], {
            "containers": [_container(rng)],
            "tolerations": [
                {"key": "spot", "operator": "Equal", "value": "true", "effect": "PreferNoSchedule"}
            ],
            "affinity": {
                "nodeAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {
                            "weight": 40,
                            "preference": {
                                "matchExpressions": [
                                    {"key": "pool", "operator": "In", "values": ["spot"]}
                                ]
                            },
                        }
                    ]
                },
                "podAntiAffinity": {
                    "preferredDuringSchedulingIgnoredDuringExecution": [
                        {"weight": 50, "podAffinityTerm": _term(own, HOSTNAME)}
                    ]
                },
            },
        }
    raise ValueError(f"unknown pod kind {kind}")


@dataclass
class PodPlan:
    """One pod to create, and what kind of pod it is (for the differences' readers)."""

    name: str
    app: App
    constraints: list[str]
    manifest: Raw
    # The pod's WaitForFirstConsumer claim, created just before it; None: no claim.
    claim: Raw | None = None


def make_claim_pods(run: AgreementRun, rng: random.Random) -> list[PodPlan]:
    """``run.wffc_pods`` StatefulSet-like pods, each with its own claim of the local class
    (``data-<pod>``, as a volumeClaimTemplate names it)."""
    weights = [app.weight for app in CLAIM_APPS]
    replicas: Counter[str] = Counter()
    plans = []
    for _ in range(run.wffc_pods):
        app = rng.choices(CLAIM_APPS, weights)[0]
        name = f"{app.name}-{replicas[app.name]}"
        replicas[app.name] += 1
        constraints, spec = _shape(app.kind, app.name, rng)
        size = rng.choices(CLAIM_SIZES_GIB, CLAIM_SIZE_WEIGHTS)[0]
        claim_name = f"data-{name}"
        spec["terminationGracePeriodSeconds"] = 0
        spec["volumes"] = [{"name": "data", "persistentVolumeClaim": {"claimName": claim_name}}]
        for container in spec["containers"]:
            container["volumeMounts"] = [{"name": "data", "mountPath": "/data"}]
        labels = {
            "app": app.name,
            "controller-revision-hash": f"{app.name}-6c5d8f",
            "statefulset.kubernetes.io/pod-name": name,
        }
        constraints = [*constraints, f"wffc-claim-{size}Gi"]
        if app.owner != "none":
            constraints.append(f"default-spreading-via-{app.owner}")
        plans.append(
            PodPlan(
                name=name,
                app=app,
                constraints=constraints,
                manifest={
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
                    "spec": spec,
                },
                claim={
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "metadata": {
                        "name": claim_name,
                        "namespace": NAMESPACE,
                        "labels": {"app": app.name},
                    },
                    "spec": {
                        "accessModes": ["ReadWriteOnce"],
                        "storageClassName": STORAGE_CLASS,
                        "volumeMode": "Filesystem",
                        "resources": {"requests": {"storage": f"{size}Gi"}},
                    },
                },
            )
        )
    return plans


def make_pods(
    run: AgreementRun, rng: random.Random, claim_stream: random.Random | None = None
) -> list[PodPlan]:
    """The pods in creation order: each pod's app drawn by weight, its shape from the app;
    ``run.wffc_pods`` of them claim pods (drawn from ``claim_stream``) at places drawn
    from it too."""
    claim_stream = claim_stream or claim_rng(run)
    wffc = max(0, min(run.wffc_pods, run.pods))
    plans = make_other_pods(run.pods - wffc, rng)
    if not wffc:
        return plans
    claim_plans = make_claim_pods(run, claim_stream)
    places = set(claim_stream.sample(range(run.pods), wffc))
    others, claims = iter(plans), iter(claim_plans)
    return [next(claims) if index in places else next(others) for index in range(run.pods)]


def make_other_pods(count: int, rng: random.Random) -> list[PodPlan]:
    """The pods without claims, in creation order."""
    weights = [app.weight for app in APPS]
    replicas: Counter[str] = Counter()
    plans = []
    for _ in range(count):
        app = rng.choices(APPS, weights)[0]
        number = replicas[app.name]
        replicas[app.name] += 1
        constraints, spec = _shape(app.kind, app.name, rng)
        spec["terminationGracePeriodSeconds"] = 0  # nothing runs them
        name = f"{app.name}-{number:04d}"
        labels = {"app": app.name, "pod-template-hash": f"{app.name}-7d9f"}
        if app.owner != "none":
            constraints = [*constraints, f"default-spreading-via-{app.owner}"]
        plans.append(
            PodPlan(
                name=name,
                app=app,
                constraints=constraints,
                manifest={
                    "apiVersion": "v1",
                    "kind": "Pod",
                    "metadata": {"name": name, "namespace": NAMESPACE, "labels": labels},
                    "spec": spec,
                },
            )
        )
    return plans


def _pod_requests(manifest: Raw) -> Raw:
    """The pod's containers' requests, as written (for the differences' readers)."""
    spec = manifest["spec"]
    found: Raw = {}
    for group in ("initContainers", "containers"):
        for container in spec.get(group, []):
            requests = container.get("resources", {}).get("requests")
            found[f"{group[:-1]}/{container['name']}"] = requests or "none"
    return found


# --------------------------------------------------------------------------- the cluster


def create_namespace(cp: ControlPlane) -> None:
    """The namespace and its ``default`` ServiceAccount: no ServiceAccount controller runs,
    and pod admission refuses a pod whose account does not exist."""
    cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
    cp.request(
        "POST",
        f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts",
        {"metadata": {"name": "default"}},
    )


def create_node(cp: ControlPlane, node: Raw) -> None:
    """A Node as the recorder creates one: status patched in, then the exact taints, which
    drops the ``node.kubernetes.io/not-ready`` taint admission added (no node lifecycle
    controller runs to lift it)."""
    body = {key: value for key, value in node.items() if key != "status"}
    cp.request("POST", "/api/v1/nodes", body)
    path = f"/api/v1/nodes/{node['metadata']['name']}"
    cp.request("PATCH", path + "/status", {"status": node["status"]}, content_type=MERGE)
    taints = node["spec"]["taints"] or None
    cp.request("PATCH", path, {"spec": {"taints": taints}}, content_type=MERGE)


def create_owners(cp: ControlPlane, apps: Sequence[App] = APPS) -> dict[str, Raw]:
    """A Service, a ReplicaSet or a StatefulSet (of zero replicas: no controller would act
    on more) for the apps that have one, so that kube-scheduler's default topology
    spreading, which takes its selector from them, applies to those pods. Returns each
    ReplicaSet's and StatefulSet's ownerReference."""
    references: dict[str, Raw] = {}
    for app in apps:
        selector = {"app": app.name}
        if app.owner == "service":
            cp.request(
                "POST",
                f"/api/v1/namespaces/{NAMESPACE}/services",
                {
                    "metadata": {"name": app.name},
                    "spec": {"clusterIP": "None", "selector": selector, "ports": [{"port": 80}]},
                },
            )
        elif app.owner == "replicaset":
            labels = {**selector, "pod-template-hash": f"{app.name}-7d9f"}
            references[app.name] = _empty_owner(
                cp, "ReplicaSet", f"{app.name}-7d9f", labels, {"matchLabels": labels}, {}
            )
        elif app.owner == "statefulset":
            labels = {**selector, "controller-revision-hash": f"{app.name}-6c5d8f"}
            references[app.name] = _empty_owner(
                cp,
                "StatefulSet",
                app.name,
                labels,
                {"matchLabels": selector},
                {"serviceName": app.name},
            )
    return references


def _empty_owner(
    cp: ControlPlane,
    kind: str,
    name: str,
    labels: Raw,
    selector: Raw,
    spec: Raw,
) -> Raw:
    """A zero-replica ReplicaSet or StatefulSet for pods to name as their owner (the
    default spreading reads its selector); its owner reference."""
    plural = kind.lower() + "s"
    created = cp.request(
        "POST",
        f"/apis/apps/v1/namespaces/{NAMESPACE}/{plural}",
        {
            "metadata": {"name": name},
            "spec": {
                "replicas": 0,
                **spec,
                "selector": selector,
                "template": {
                    "metadata": {"labels": labels},
                    "spec": {"containers": [{"name": "main", "image": PAUSE}]},
                },
            },
        },
    )
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "name": created["metadata"]["name"],
        "uid": created["metadata"]["uid"],
        "controller": True,
        "blockOwnerDeletion": False,
    }


def create_volumes(
    cp: ControlPlane, volumes: Sequence[Raw], timeout: float = 120.0
) -> dict[str, int]:
    """The local StorageClass and the PVs, then a wait until the PV binder has made every
    PV ``Available`` (it creates them ``Pending``), as kube-scheduler must find them.
    Returns PV name -> capacity in bytes."""
    if not volumes:
        return {}
    cp.request("POST", "/apis/storage.k8s.io/v1/storageclasses", make_storage_class())
    for volume in volumes:
        cp.request("POST", "/api/v1/persistentvolumes", volume)
    names = {volume["metadata"]["name"] for volume in volumes}
    deadline = time.monotonic() + timeout
    while True:
        phases = {
            pv["metadata"]["name"]: (pv.get("status") or {}).get("phase")
            for pv in list_all(cp, "/api/v1/persistentvolumes")
        }
        waiting = sorted(n for n in names if phases.get(n) != "Available")
        if not waiting:
            break
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"{len(waiting)} PVs not Available after {timeout:g} s (e.g. {waiting[:3]}); "
                "see the kube-controller-manager log"
            )
        time.sleep(0.5)
    return {
        volume["metadata"]["name"]: quantity_bytes(volume["spec"]["capacity"]["storage"])
        for volume in volumes
    }


def list_all(cp: ControlPlane, path: str) -> list[Raw]:
    """Every item of a collection, page by page (a 1,000-pod list is one big answer)."""
    items: list[Raw] = []
    token = ""
    while True:
        separator = "&" if "?" in path else "?"
        page = cp.get(f"{path}{separator}limit=500" + (f"&continue={token}" if token else ""))
        items += page["items"]
        token = page["metadata"].get("continue") or ""
        if not token:
            return items


def failed_scheduling(cp: ControlPlane) -> dict[str, str]:
    """Pod name -> the latest FailedScheduling message kube-scheduler wrote for it."""
    events = list_all(
        cp, f"/api/v1/namespaces/{NAMESPACE}/events?fieldSelector=reason%3DFailedScheduling"
    )
    events.sort(key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
    return {e["involvedObject"]["name"]: e.get("message", "") for e in events}


# --------------------------------------------------------------------------- volsched


class ShadowProcess:
    """``volsched run --shadow`` as a child process, with its report.

    Its config file holds volsched's own keys (a database in the work directory, HTTP on
    loopback without authentication, which volsched allows only there) and, after ``---``,
    the same KubeSchedulerConfiguration kube-scheduler runs with. Leader election is off
    through that document's ``leaderElection.leaderElect: false``; volsched refuses the
    same setting given twice, so its own ``leaderElection`` key is left out (a shadow
    never elects anyway). With ``configuration`` None the file holds volsched's own keys
    only — volsched decides with its own default profile — and leader election is off
    through its own ``leaderElection.enabled: false``.
    """

    def __init__(
        self,
        workdir: Path,
        kubeconfig: Path,
        configuration: Raw | None = SCHEDULER_CONFIGURATION,
    ) -> None:
        self.workdir = workdir
        self.kubeconfig = kubeconfig
        self.port = free_port()
        self.address = f"127.0.0.1:{self.port}"
        self.config = workdir / "volsched-shadow.yaml"
        self.log_path = workdir / "volsched-shadow.log"
        self.process: subprocess.Popen[bytes] | None = None
        own: Raw = {
            "database": {"path": str(workdir / "volsched-shadow.db")},
            "http": {"address": self.address, "authentication": {"enabled": False}},
        }
        if configuration is None:
            own["leaderElection"] = {"enabled": False}
            self.config.write_text(yaml.safe_dump(own, sort_keys=False))
        else:
            self.config.write_text(
                yaml.safe_dump(own, sort_keys=False)
                + "---\n"
                + yaml.safe_dump(configuration, sort_keys=False)
            )

    @property
    def command(self) -> list[str]:
        return [
            sys.executable,
            "-m",
            "volsched",
            "run",
            "--shadow",
            "--config",
            str(self.config),
            "--kubeconfig",
            str(self.kubeconfig),
            "--http-address",
            self.address,
        ]

    @property
    def base(self) -> str:
        return f"http://{self.address}"

    def start(self, timeout: float = 300.0) -> float:
        """Start it and wait for ``/readyz``; seconds until ready."""
        started = time.monotonic()
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                self.command,
                cwd=ROOT,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # our stop is orderly; a terminal Ctrl-C must not race it
            )
        while time.monotonic() - started < timeout:
            self.check_alive()
            with (
                contextlib.suppress(OSError),
                urllib.request.urlopen(self.base + "/readyz", timeout=5) as response,
            ):
                if response.status == 200:
                    return time.monotonic() - started
            time.sleep(0.2)
        raise TimeoutError(f"volsched --shadow not ready in {timeout:g} s; see {self.log_path}")

    def check_alive(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            tail = self.log_path.read_text(errors="replace").splitlines()[-15:]
            raise RuntimeError(
                f"volsched --shadow exited with {self.process.returncode}; see {self.log_path}:\n"
                + "\n".join(tail)
            )

    def report(self) -> Raw:
        """``GET /shadow/report``."""
        self.check_alive()
        with urllib.request.urlopen(self.base + "/shadow/report", timeout=30) as response:
            report: Raw = json.loads(response.read())
            return report

    def stop(self) -> None:
        """SIGTERM (it drains and closes its database), SIGKILL after 30 s."""
        process, self.process = self.process, None
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)


# --------------------------------------------------------------------------- the run


@dataclass
class Observed:
    """What the run saw while waiting: the shadow's differences merged by pod across report
    reads (the report keeps only the latest 100), and the last report."""

    differences: dict[str, Raw] = field(default_factory=dict)
    report: Raw = field(default_factory=dict)

    def take(self, report: Raw) -> None:
        self.report = report
        for difference in report.get("differences", []):
            self.differences[difference["pod"]] = difference


def create_pods(
    cp: ControlPlane,
    shadow: ShadowProcess,
    plans: Sequence[PodPlan],
    owners: dict[str, Raw],
    run: AgreementRun,
    observed: Observed,
) -> float:
    """Create the pods evenly spaced at ``run.rate`` a second, reading the report between
    them; returns the seconds it took."""
    started = time.monotonic()
    next_poll = started + POLL_SECONDS
    for number, plan in enumerate(plans):
        due = started + number / run.rate
        while (now := time.monotonic()) < due:
            if now >= next_poll:
                observed.take(shadow.report())
                next_poll = time.monotonic() + POLL_SECONDS
            else:
                time.sleep(min(due - now, 0.05))
        if plan.claim is not None:
            cp.request("POST", f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims", plan.claim)
        manifest = plan.manifest
        if plan.app.name in owners:
            manifest = json.loads(json.dumps(manifest))
            manifest["metadata"]["ownerReferences"] = [owners[plan.app.name]]
        cp.request("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", manifest)
    return time.monotonic() - started


def wait_until_settled(
    cp: ControlPlane,
    shadow: ShadowProcess,
    plans: Sequence[PodPlan],
    run: AgreementRun,
    observed: Observed,
) -> tuple[dict[str, str], dict[str, str], bool]:
    """Wait until every pod is bound or has a FailedScheduling event, and neither the number
    bound nor the shadow's compared count has changed for ``run.settle_seconds``.

    Returns (pod -> node for bound pods, pod -> message for pods left pending, timed out).
    A pending pod may still be bound later (kube-scheduler retries it on cluster events),
    which is why settling waits for both counts to stand still rather than for a total.
    """
    names = {plan.name for plan in plans}
    deadline = time.monotonic() + run.timeout_seconds
    last: tuple[int, int] | None = None
    still_since = time.monotonic()
    while True:
        pods = list_all(cp, f"/api/v1/namespaces/{NAMESPACE}/pods")
        bound = {
            p["metadata"]["name"]: p["spec"]["nodeName"] for p in pods if p["spec"].get("nodeName")
        }
        failed = failed_scheduling(cp)
        observed.take(shadow.report())
        state = (len(bound), int(observed.report["compared"]))
        if state != last:
            last, still_since = state, time.monotonic()
        accounted = all(name in bound or name in failed for name in names)
        if accounted and time.monotonic() - still_since >= run.settle_seconds:
            return bound, {n: m for n, m in failed.items() if n not in bound}, False
        if time.monotonic() > deadline:
            return bound, {n: m for n, m in failed.items() if n not in bound}, True
        time.sleep(1.0)


def volsched_writes(cp: ControlPlane) -> Raw:
    """Evidence that the shadow wrote nothing: Events it reported, and fields it manages
    (server-side apply records every writer's field manager) on any object the run made."""
    events = list_all(cp, "/api/v1/events")
    by_volsched = [
        f"{e['metadata']['namespace']}/{e['metadata']['name']}"
        for e in events
        if "volsched"
        in " ".join(
            str(x)
            for x in (
                e.get("reportingComponent"),
                e.get("reportingController"),
                (e.get("source") or {}).get("component"),
            )
        ).lower()
    ]
    managers: Counter[str] = Counter()
    for path in (
        f"/api/v1/namespaces/{NAMESPACE}/pods",
        "/api/v1/nodes",
        f"/api/v1/namespaces/{NAMESPACE}/services",
        f"/apis/apps/v1/namespaces/{NAMESPACE}/replicasets",
        "/apis/coordination.k8s.io/v1/leases",
        "/api/v1/persistentvolumes",
        f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims",
        f"/apis/apps/v1/namespaces/{NAMESPACE}/statefulsets",
    ):
        for obj in list_all(cp, path):
            for entry in obj["metadata"].get("managedFields") or []:
                managers[f"{entry.get('manager')} {entry.get('operation')}"] += 1
    volsched_managers = {k: v for k, v in managers.items() if "volsched" in k.lower()}
    return {
        "events_by_volsched": by_volsched,
        "events_total": len(events),
        "field_managers": dict(sorted(managers.items())),
        "volsched_field_managers": volsched_managers,
        "wrote_nothing": not by_volsched and not volsched_managers,
    }


def explain_pending(
    shadow: ShadowProcess, pending: dict[str, str], limit: int = 40
) -> dict[str, Raw]:
    """volsched's verdict, from ``volsched explain`` on the final cluster, for pods
    kube-scheduler left pending. The report only counts the pending pods volsched would
    place; this names them. The final cluster is the one kube-scheduler last tried them
    against, unless a binding came after its last attempt."""
    verdicts: dict[str, Raw] = {}
    for name in sorted(pending)[:limit]:
        command = [
            sys.executable,
            "-m",
            "volsched",
            "explain",
            f"{NAMESPACE}/{name}",
            "--config",
            str(shadow.config),
            "--kubeconfig",
            str(shadow.kubeconfig),
            "-o",
            "json",
        ]
        try:
            done = subprocess.run(
                command, cwd=ROOT, capture_output=True, timeout=120, stdin=subprocess.DEVNULL
            )
            answer = json.loads(done.stdout)
        except (subprocess.TimeoutExpired, json.JSONDecodeError) as exc:
            verdicts[name] = {"error": str(exc)[:300]}
            continue
        verdicts[name] = {
            "node": answer.get("node"),
            "message": answer.get("message"),
        }
    return verdicts


def scheduler_log_facts(cp: ControlPlane) -> dict[str, Raw]:
    """Pod -> what kube-scheduler's ``-v=2`` log says about its binding and failures."""
    path = cp.log_path("kube-scheduler")
    facts: dict[str, Raw] = {}
    if not path.exists():
        return facts
    for key, attempt in parse_scheduler_log(path.read_text(errors="replace")).items():
        facts[key] = {
            "feasible_nodes": attempt.feasible,
            "first_failure": attempt.first_failure,
        }
    return facts


def run_benchmark(run: AgreementRun, assets: Path, workdir: Path) -> Raw:
    """Run the whole benchmark in ``workdir``; returns the result (without ``command``)."""
    started = time.monotonic()
    rng = random.Random(run.seed)
    claim_stream = claim_rng(run)
    nodes = make_nodes(run, rng)
    volumes = make_volumes(run, nodes, claim_stream)
    plans = make_pods(run, rng, claim_stream)
    by_pod = {plan.name: plan for plan in plans}
    node_info = {node["metadata"]["name"]: describe_node(node) for node in nodes}
    workdir.mkdir(parents=True, exist_ok=True)
    with ControlPlane(assets, workdir / "controlplane") as cp:
        create_namespace(cp)
        for node in nodes:
            create_node(cp, node)
        owners = create_owners(cp, APPS + (CLAIM_APPS if run.wffc_pods > 0 else ()))
        # The PVs exist and are Available before either scheduler starts.
        pv_bytes = create_volumes(cp, volumes)
        # kube-scheduler starts after the nodes exist, as the recorder starts it.
        cp.start_scheduler(SCHEDULER_CONFIGURATION, verbosity=run.scheduler_verbosity)
        shadow = ShadowProcess(workdir, cp.kubeconfig, run.shadow_configuration())
        try:
            ready = shadow.start()
            observed = Observed()
            creating = create_pods(cp, shadow, plans, owners, run, observed)
            bound, pending, timed_out = wait_until_settled(cp, shadow, plans, run, observed)
            observed.take(shadow.report())
            writes = volsched_writes(cp)
            claims = bound_claims(cp) if run.wffc_pods > 0 else {}
            # Only the pods volsched would place are disagreements; the report counts
            # them but does not name them, so only then is each pending pod explained.
            placeable = int(observed.report["pending"]["placeable"])
            explained = explain_pending(shadow, pending) if placeable else {}
        finally:
            shadow.stop()
        log_facts = scheduler_log_facts(cp)
        # Claims and PVs are left as they are (their protection finalizers would hold a
        # delete): the control plane is torn down, etcd's data with it.

    report = observed.report
    outcomes: dict[str, int] = report["outcomes"]
    compared = int(report["compared"])
    agreeing = sum(outcomes.get(o, 0) for o in AGREEING)
    differences = []
    for pod_key, difference in sorted(observed.differences.items()):
        name = pod_key.split("/", 1)[1]
        plan = by_pod.get(name)
        differences.append(
            {
                **difference,
                "cause": difference.get("cause"),
                "differingPlugins": difference.get("differingPlugins"),
                **(claim_sizes(plan, difference, claims, pv_bytes) if plan and plan.claim else {}),
                "kind": plan.app.kind if plan else None,
                "constraints": plan.constraints if plan else None,
                "requests": _pod_requests(plan.manifest) if plan else None,
                "theirNodeInfo": node_info.get(difference["theirNode"]),
                "ourNodeInfo": node_info.get(difference["ourNode"] or ""),
                "kubeScheduler": log_facts.get(pod_key, {}),
            }
        )
    # Newer reports also list the latest pending verdicts (``pending.pods``); use them
    # where they are given.
    verdicts = {v["pod"]: v for v in (report.get("pending") or {}).get("pods", [])}
    pending_pods = [
        {
            "pod": f"{NAMESPACE}/{name}",
            "kind": by_pod[name].app.kind,
            "constraints": by_pod[name].constraints,
            "kube_scheduler_message": message,
            "volsched_report_verdict": verdicts.get(f"{NAMESPACE}/{name}"),
            "volsched_explain": explained.get(name, "not run: volsched places none"),
        }
        for name, message in sorted(pending.items())
    ]
    kinds = Counter(plan.app.kind for plan in plans)
    claim_pods = claim_pod_outcomes(plans, bound, pending, differences, compared, report)
    return {
        # The shadow's own last report, as /shadow/report served it (volsched
        # shadow-report --file reads it back).
        "report": report,
        "benchmark": "shadow-agreement",
        "kube_scheduler": f"v1.36.2 (default profile, -v={run.scheduler_verbosity})",
        "nodes": run.nodes,
        "pods": run.pods,
        "seed": run.seed,
        "rate_pods_per_second": run.rate,
        "same_configuration": run.volsched_configuration is None and run.volsched_profile == "kube",
        "volsched_profile": run.volsched_profile
        if run.volsched_configuration is None
        else "custom",
        "wffc_pods": run.wffc_pods,
        "bound": len(bound),
        "left_pending": len(pending),
        "compared": compared,
        "every_bound_pod_compared": compared == len(bound),
        "outcomes": outcomes,
        "causes": report.get("causes"),
        "agreement_ratio": round(agreeing / compared, 4) if compared else None,
        "report_agreement_ratio": report.get("agreementRatio"),
        "rejection_reasons": report.get("rejectionReasons"),
        "score_gap": report.get("scoreGap"),
        "storage": report.get("storage"),
        "claim_pods": claim_pods,
        "pending_verdicts": report.get("pending"),
        "differences": differences,
        "differences_listed": len(differences),
        "differences_counted": compared - agreeing,
        "pending_pods": pending_pods,
        "timed_out": timed_out,
        "volsched_ready_seconds": round(ready, 2),
        "pod_creation_seconds": round(creating, 2),
        "duration_seconds": round(time.monotonic() - started, 1),
        "volsched_writes": writes,
        "workload": {
            "kinds": dict(sorted(kinds.items())),
            "apps": len(APPS) + (len(CLAIM_APPS) if run.wffc_pods > 0 else 0),
            "claim_pods": sum(1 for plan in plans if plan.claim),
            "pvs": len(volumes),
            "pv_sizes": dict(
                sorted(Counter(v["spec"]["capacity"]["storage"] for v in volumes).items())
            ),
        },
        "node_table": node_info,
        "machine": {"cpus": os.cpu_count()},
    }


def bound_claims(cp: ControlPlane) -> dict[str, Raw]:
    """Claim name -> its phase and the PV bound to it (``spec.volumeName``), if any."""
    return {
        claim["metadata"]["name"]: {
            "phase": (claim.get("status") or {}).get("phase"),
            "volume": claim["spec"].get("volumeName"),
        }
        for claim in list_all(cp, f"/api/v1/namespaces/{NAMESPACE}/persistentvolumeclaims")
    }


def claim_sizes(
    plan: PodPlan, difference: Raw, claims: dict[str, Raw], pv_bytes: dict[str, int]
) -> Raw:
    """A claim pod's claim and both PVs' sizes: theirs is the PV bound to the claim now,
    ours what the difference's ``strandedBytes`` (the excess of volsched's PV over the
    claim) gives, when it gives one."""
    assert plan.claim is not None
    name = plan.claim["metadata"]["name"]
    requested = quantity_bytes(plan.claim["spec"]["resources"]["requests"]["storage"])
    their_pv = claims.get(name, {}).get("volume")
    sizes: Raw = {
        "claim": name,
        "claimGiB": requested / GIB,
        "theirPv": their_pv,
        "theirPvGiB": pv_bytes[their_pv] / GIB if their_pv in pv_bytes else None,
    }
    stranded = difference.get("strandedBytes")
    if isinstance(stranded, dict) and stranded.get("ours") is not None:
        sizes["ourPvGiB"] = (requested + int(stranded["ours"])) / GIB
    for key in ("ourVolumes", "ourPvs", "ourPV", "ourVolume"):
        if key in difference:
            sizes["ourPvFromReport"] = difference[key]
    return sizes


def claim_pod_outcomes(
    plans: Sequence[PodPlan],
    bound: dict[str, str],
    pending: dict[str, str],
    differences: Sequence[Raw],
    compared: int,
    report: Raw,
) -> Raw:
    """How the claim pods came out: bound, pending, compared (every bound pod is compared
    when the report's count equals the bound count: the report names only differences),
    and the differences among them by outcome and cause."""
    names = {plan.name for plan in plans if plan.claim}
    bound_claim = sum(1 for name in names if name in bound)
    theirs = [d for d in differences if d["pod"].split("/", 1)[1] in names]
    storage = report.get("storage") or {}
    return {
        "created": len(names),
        "bound": bound_claim,
        "left_pending": sum(1 for name in names if name in pending),
        "compared": bound_claim if compared == len(bound) else None,
        "storage_section_claim_pods": storage.get("claimPods")
        if isinstance(storage, dict)
        else None,
        "differences": len(theirs),
        "agreed_or_tied": bound_claim - len(theirs) if compared == len(bound) else None,
        "difference_outcomes": dict(Counter(d["outcome"] for d in theirs)),
        "difference_causes": dict(Counter(d.get("cause") for d in theirs)),
    }


def summary_line(result: Raw) -> str:
    """The one line a terminal or CI log shows."""
    outcomes = ", ".join(f"{k} {v}" for k, v in result["outcomes"].items() if v)
    causes = ", ".join(f"{k} {v}" for k, v in (result.get("causes") or {}).items() if v)
    ratio = result["agreement_ratio"]
    shown = f"{ratio:.2%}" if ratio is not None else "n/a"
    claims = result.get("claim_pods") or {}
    with_claims = (
        f" ({claims['bound']} bound claim pods, {claims['differences']} differing)"
        if claims.get("created")
        else ""
    )
    return (
        f"shadow agreement {shown} ({outcomes}; causes: {causes or 'n/a'}) over "
        f"{result['compared']} compared of {result['bound']} bound{with_claims}, "
        f"{result['left_pending']} left pending; {result['nodes']} nodes, {result['pods']} "
        f"pods, {result.get('wffc_pods', 0)} with WFFC claims, volsched profile "
        f"{result.get('volsched_profile', 'kube')}, seed {result['seed']}, "
        f"{result['duration_seconds']} s"
    )


@contextlib.contextmanager
def _sigterm_as_interrupt() -> Iterator[None]:
    """A SIGTERM unwinds like Ctrl-C, so the ``finally`` blocks stop every process."""

    def interrupt(signum: int, frame: FrameType | None) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench.oracle.shadow_agreement",
        description="How often volsched --shadow agrees with the real kube-scheduler.",
    )
    parser.add_argument("--nodes", type=int, default=60)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--rate", type=float, default=20.0, help="pods created per second")
    parser.add_argument(
        "--wffc-pods",
        type=int,
        default=0,
        help="how many of the pods have a WaitForFirstConsumer claim of local PVs",
    )
    parser.add_argument(
        "--volsched-profile",
        choices=("kube", "own"),
        default="kube",
        help="kube: volsched gets kube-scheduler's KubeSchedulerConfiguration; "
        "own: none (volsched's own default profile)",
    )
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="result JSON file")
    parser.add_argument(
        "--keep-logs", type=Path, default=None, help="keep the work dir (every log) here"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    assets = assets_dir()
    if assets is None:
        print(
            f"set {ASSETS_ENV} to a directory holding etcd, kube-apiserver, "
            "kube-controller-manager and kube-scheduler",
            file=sys.stderr,
        )
        return 2
    if not 0 <= args.wffc_pods <= args.pods:
        print("--wffc-pods must be between 0 and --pods", file=sys.stderr)
        return 2
    run = AgreementRun(
        nodes=args.nodes,
        pods=args.pods,
        seed=args.seed,
        rate=args.rate,
        wffc_pods=args.wffc_pods,
        volsched_profile=args.volsched_profile,
    )
    workdir = args.keep_logs or Path(tempfile.mkdtemp(prefix="volsched-shadow-agreement-"))
    ok = False
    try:
        with _sigterm_as_interrupt():
            result = run_benchmark(run, assets, workdir)
        ok = True
    except KeyboardInterrupt:
        print("interrupted; everything started was stopped", file=sys.stderr)
        return 130
    finally:
        if not ok or args.keep_logs:
            print(f"logs kept in {workdir}", file=sys.stderr)
        else:
            shutil.rmtree(workdir, ignore_errors=True)
    given = list(sys.argv[1:] if argv is None else argv)
    if "--out" in given:  # where this machine wrote it says nothing of the run
        at = given.index("--out")
        given = given[:at] + given[at + 2 :]
    result["command"] = " ".join(
        [
            f"{ASSETS_ENV}=<dir of the binaries>",
            shlex.join(["python", "-m", "bench.oracle.shadow_agreement", *given]),
        ]
    )
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(summary_line(result))
    return 0 if result["every_bound_pod_compared"] and not result["timed_out"] else 1


if __name__ == "__main__":
    sys.exit(main())
