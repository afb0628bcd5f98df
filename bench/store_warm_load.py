"""Warm start of the SQLite store: how long until a restarted daemon has its cache back.

    python -m bench.store_warm_load [--objects 50000] [--path DIR]

Writes N realistic objects (pods, persistent volumes and nodes of 1–2.5 KB of JSON each,
the mix a storage-heavy cluster has) through the store's write-behind queue, closes it,
reopens the file (integrity check and migration check included) and times ``load()``.
Prints the figures as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from volsched.cache.store import Store

Raw = dict[str, Any]


def _uid(rng: random.Random) -> str:
    return "%08x-%04x-%04x-%04x-%012x" % (  # noqa: UP031 - the uid layout reads best so
        rng.getrandbits(32),
        rng.getrandbits(16),
        rng.getrandbits(16),
        rng.getrandbits(16),
        rng.getrandbits(48),
    )


def pod(index: int, rng: random.Random) -> tuple[str, str, Raw]:
    namespace = f"team-{index % 40}"
    name = f"web-{index:06d}-{rng.getrandbits(20):05x}"
    raw: Raw = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": _uid(rng),
            "resourceVersion": str(100000 + index),
            "creationTimestamp": "2024-05-01T12:00:00Z",
            "labels": {"app": f"web-{index % 300}", "pod-template-hash": "7d9f8c6b5"},
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "StatefulSet",
                    "name": f"web-{index % 300}",
                    "uid": _uid(rng),
                    "controller": True,
                    "blockOwnerDeletion": True,
                }
            ],
        },
        "spec": {
            "schedulerName": "volsched",
            "nodeName": f"node-{index % 1000:04d}",
            "containers": [
                {
                    "name": "web",
                    "image": "registry.example.com/team/web:1.42.3",
                    "ports": [{"containerPort": 8080, "protocol": "TCP"}],
                    "resources": {
                        "requests": {"cpu": "250m", "memory": "256Mi"},
                        "limits": {"cpu": "1", "memory": "512Mi"},
                    },
                    "volumeMounts": [
                        {"name": "data", "mountPath": "/var/lib/web"},
                        {
                            "name": "kube-api-access",
                            "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
                            "readOnly": True,
                        },
                    ],
                    "env": [{"name": "LOG_LEVEL", "value": "info"}],
                }
            ],
            "volumes": [
                {"name": "data", "persistentVolumeClaim": {"claimName": f"data-{name}"}},
                {
                    "name": "kube-api-access",
                    "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]},
                },
            ],
            "tolerations": [
                {
                    "key": "node.kubernetes.io/not-ready",
                    "operator": "Exists",
                    "effect": "NoExecute",
                    "tolerationSeconds": 300,
                }
            ],
        },
        "status": {
            "phase": "Running",
            "qosClass": "Burstable",
            "podIP": f"10.{index % 250}.{index // 250 % 250}.{index % 7}",
            "conditions": [
                {"type": "PodScheduled", "status": "True"},
                {"type": "Ready", "status": "True"},
            ],
        },
    }
    return "Pod", f"{namespace}/{name}", raw


def persistent_volume(index: int, rng: random.Random) -> tuple[str, str, Raw]:
    name = f"pvc-{_uid(rng)}"
    raw: Raw = {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {
            "name": name,
            "uid": _uid(rng),
            "resourceVersion": str(200000 + index),
            "annotations": {"pv.kubernetes.io/provisioned-by": "driver.longhorn.io"},
            "finalizers": ["kubernetes.io/pv-protection"],
        },
        "spec": {
            "capacity": {"storage": f"{rng.choice([1, 5, 10, 20, 50])}Gi"},
            "accessModes": ["ReadWriteOnce"],
            "persistentVolumeReclaimPolicy": "Delete",
            "storageClassName": "longhorn",
            "volumeMode": "Filesystem",
            "csi": {
                "driver": "driver.longhorn.io",
                "volumeHandle": name,
                "fsType": "ext4",
                "volumeAttributes": {"numberOfReplicas": "3", "staleReplicaTimeout": "30"},
            },
            "claimRef": {
                "kind": "PersistentVolumeClaim",
                "namespace": f"team-{index % 40}",
                "name": f"data-web-{index:06d}",
                "uid": _uid(rng),
            },
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "topology.kubernetes.io/zone",
                                    "operator": "In",
                                    "values": [f"zone-{index % 3}"],
                                }
                            ]
                        }
                    ]
                }
            },
        },
        "status": {"phase": "Bound"},
    }
    return "PersistentVolume", name, raw


def node(index: int, rng: random.Random) -> tuple[str, str, Raw]:
    name = f"node-{index:05d}"
    raw: Raw = {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "uid": _uid(rng),
            "resourceVersion": str(300000 + index),
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "kubernetes.io/arch": "amd64",
                "node.kubernetes.io/instance-type": "m6i.2xlarge",
                "topology.kubernetes.io/region": "eu-west-1",
                "topology.kubernetes.io/zone": f"zone-{index % 3}",
                "node.longhorn.io/create-default-disk": "true",
            },
            "annotations": {
                "csi.volume.kubernetes.io/nodeid": json.dumps({"driver.longhorn.io": name}),
                "node.alpha.kubernetes.io/ttl": "0",
            },
        },
        "spec": {"podCIDR": f"10.{index % 250}.0.0/24", "providerID": f"aws:///{name}"},
        "status": {
            "capacity": {"cpu": "8", "memory": "32Gi", "pods": "110", "ephemeral-storage": "200Gi"},
            "allocatable": {
                "cpu": "7910m",
                "memory": "31Gi",
                "pods": "110",
                "ephemeral-storage": "180Gi",
            },
            "conditions": [
                {
                    "type": condition,
                    "status": "False" if condition != "Ready" else "True",
                    "lastHeartbeatTime": "2024-05-01T12:00:00Z",
                    "lastTransitionTime": "2024-04-01T08:00:00Z",
                    "reason": f"Kubelet{condition}",
                    "message": f"kubelet reports {condition}",
                }
                for condition in ("MemoryPressure", "DiskPressure", "PIDPressure", "Ready")
            ],
            "addresses": [
                {"type": "InternalIP", "address": f"192.168.{index % 250}.{index % 200}"},
                {"type": "Hostname", "address": name},
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.30.2",
                "containerRuntimeVersion": "containerd://1.7.18",
                "osImage": "Ubuntu 22.04.4 LTS",
            },
        },
    }
    return "Node", name, raw


def generate(count: int, seed: int) -> list[tuple[str, str, Raw]]:
    """70 % pods, 25 % persistent volumes, 5 % nodes."""
    rng = random.Random(seed)
    made: list[tuple[str, str, Raw]] = []
    for index in range(count):
        share = index % 20
        maker = pod if share < 14 else persistent_volume if share < 19 else node
        made.append(maker(index, rng))
    return made


async def write(path: Path, count: int, seed: int) -> dict[str, Any]:
    items = generate(count, seed)
    body_bytes = sum(len(json.dumps(raw, separators=(",", ":"))) for _, _, raw in items)
    store, _ = await Store.open(str(path))
    started = time.perf_counter()
    for kind, key, raw in items:
        store.put_object(kind, key, raw)
    for kind in ("Pod", "PersistentVolume", "Node"):
        store.set_resume_point(kind, "999999")
    await store.flush()
    write_seconds = time.perf_counter() - started
    flushes = store.stats.flushes
    await store.close()
    return {
        "objects": count,
        "mean_body_bytes": round(body_bytes / count),
        "file_mb": round(path.stat().st_size / 1e6, 1),
        "write_seconds": round(write_seconds, 3),
        "write_flushes": flushes,
    }


async def warm_start(path: Path) -> dict[str, Any]:
    """Open and load, as a restarted daemon does (run in a fresh process)."""
    started = time.perf_counter()
    store, opened = await Store.open(str(path))
    open_seconds = time.perf_counter() - started
    started = time.perf_counter()
    state = await store.load()
    load_seconds = time.perf_counter() - started
    await store.close()
    return {
        "reopen_state": opened.state,
        "loaded": sum(len(by_key) for by_key in state.objects.values()),
        "open_seconds": round(open_seconds, 3),
        "load_seconds": round(load_seconds, 3),
        "warm_start_seconds": round(open_seconds + load_seconds, 3),
    }


def measure(directory: Path, count: int, seed: int) -> dict[str, Any]:
    path = directory / "store.db"
    result = asyncio.run(write(path, count, seed))
    # A restarted daemon is a fresh process with a small heap: time the warm start in one.
    child = subprocess.run(
        [sys.executable, "-m", "bench.store_warm_load", "--warm-start-only", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    warm = json.loads(child.stdout)
    if warm["loaded"] != count:
        raise SystemExit(f"loaded {warm['loaded']} objects, wrote {count}")
    return {**result, **warm}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--objects", type=int, default=50_000)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--path", type=Path, help="directory for the store file (default: a temp dir)"
    )
    parser.add_argument("--warm-start-only", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.warm_start_only is not None:
        json.dump(asyncio.run(warm_start(args.warm_start_only)), sys.stdout)
        return 0
    with tempfile.TemporaryDirectory(dir=args.path) as directory:
        result = measure(Path(directory), args.objects, args.seed)
    report = {
        "benchmark": "store_warm_load",
        "cpus": os.cpu_count(),
        "python": platform.python_version(),
        "results": [result],
    }
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
