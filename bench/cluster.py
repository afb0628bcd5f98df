"""Throughput against a real control plane: the embedded workloads on any test cluster.

    python -m bench cluster --kubeconfig FILE [--shape none|wffc] [--nodes 300]
        [--pods 1000] [--pvs-per-node 2] [--i-understand-this-creates-nodes] [--out DIR]

What it does, in order: creates a namespace and its ``default`` ServiceAccount (the API
server refuses pods without one, and a bare control plane has no ServiceAccount
controller to make it), fake nodes (labelled ``volsched.io/bench`` with the run's id,
kept Ready by renewing their node Leases as a kubelet would, so the node lifecycle
controller does not taint them, and freed of the ``node.kubernetes.io/not-ready`` taint
the API server puts on every new node, which only that controller would lift), and for
``wffc`` a WaitForFirstConsumer StorageClass with local PVs pinned to the fake nodes;
it says in one line what it made that way; starts ``volsched run`` on this
machine with a scheduler name of its own; creates the measured pods (that scheduler
name, one claim each for ``wffc``) and samples once a second how many are bound, as the
embedded benchmarks and scheduler_perf do; then restarts volsched twice against the
same cluster, warm (the database and snapshot its clean stop kept) and cold (an empty
database), timing each to ``/readyz``; then deletes everything it created, also when
interrupted. The cluster's own PV controller binds the claims, so the figure includes
its real latency. The warm start catches up with the API server through resumed
watches, most kinds unchanged, so it shows how soon this control plane's bookmarks
prove an unchanged kind caught up (``catch_up_relists`` counts the kinds that had to be
relisted instead).

Fake nodes are real Node objects: other schedulers and controllers see them. So the
benchmark refuses a cluster holding nodes it did not create (a cluster in use) unless
told ``--i-understand-this-creates-nodes``. The pods name only the bench's scheduler,
and nothing runs them (there is no kubelet behind the fake nodes).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import itertools
import json
import os
import random
import secrets
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import aiohttp

from bench.e2e import (
    ROOT,
    compile_daemon_modules,
    free_port,
    installed_python_environment,
    summary,
)
from bench.local_volumes import local_pv_manifest
from bench.restart import disk_load
from volsched.cache.errors import ApiError, Conflict, NotFound
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.watch.watching import CATCH_UP_RELIST

Raw = dict[str, Any]
LABEL = "volsched.io/bench"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
HOSTNAME = "kubernetes.io/hostname"
ZONE = "topology.kubernetes.io/zone"
NODE_LEASE_NAMESPACE = "kube-node-lease"
RESULTS = ROOT / "bench" / "results"


class Refused(Exception):
    """The cluster is not one the benchmark may change."""


@dataclass(frozen=True)
class ClusterRun:
    kubeconfig: str
    shape: str = "none"
    nodes: int = 300
    pods: int = 1000
    pvs_per_node: int = 2
    zones: int = 3
    allow_foreign_nodes: bool = False
    timeout_seconds: float = 600.0
    lease_renew_seconds: float = 10.0
    run_id: str = ""

    @property
    def namespace(self) -> str:
        return f"volsched-bench-{self.run_id}"

    @property
    def scheduler_name(self) -> str:
        return f"volsched-bench-{self.run_id}"

    def node_name(self, index: int) -> str:
        return f"bench-{self.run_id}-node-{index:04d}"


def _labels(run: ClusterRun) -> dict[str, str]:
    return {LABEL: run.run_id}


def fake_node(run: ClusterRun, index: int) -> Raw:
    name = run.node_name(index)
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {**_labels(run), HOSTNAME: name, ZONE: f"bench-zone-{index % run.zones}"},
        },
        "spec": {},
        # A Node may be created with its status (a kubelet registers this way).
        "status": {
            "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110"},
            "allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110"},
            "conditions": [_ready_condition()],
        },
    }


def _now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_now() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _ready_condition() -> Raw:
    now = _now()
    return {
        "type": "Ready",
        "status": "True",
        "reason": "KubeletReady",
        "message": "fake node of the volsched benchmark",
        "lastHeartbeatTime": now,
        "lastTransitionTime": now,
    }


def node_lease(run: ClusterRun, index: int) -> Raw:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {
            "name": run.node_name(index),
            "namespace": NODE_LEASE_NAMESPACE,
            "labels": _labels(run),
        },
        "spec": {
            "holderIdentity": run.node_name(index),
            "leaseDurationSeconds": 40,
            "renewTime": _micro_now(),
        },
    }


def storage_class(run: ClusterRun) -> Raw:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": f"bench-local-{run.run_id}", "labels": _labels(run)},
        "provisioner": "kubernetes.io/no-provisioner",
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def local_pv(run: ClusterRun, index: int, slot: int, size_gi: int, node: str = "") -> Raw:
    """The run's ``slot``-th local PV on node ``index`` (or on ``node``, when given)."""
    return local_pv_manifest(
        f"bench-{run.run_id}-pv-{index:04d}-{slot:02d}",
        node or run.node_name(index),
        size_gi,
        f"bench-local-{run.run_id}",
        f"/mnt/bench/{slot}",
        _labels(run),
    )


def claim(run: ClusterRun, number: int) -> Raw:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": f"data-{number:05d}", "namespace": run.namespace},
        "spec": {
            "accessModes": ["ReadWriteOnce"],
            "storageClassName": f"bench-local-{run.run_id}",
            "resources": {"requests": {"storage": "5Gi"}},
        },
    }


def measured_pod(run: ClusterRun, number: int) -> Raw:
    spec: Raw = {
        "schedulerName": run.scheduler_name,
        "containers": [
            {
                "name": "main",
                "image": "registry.k8s.io/pause:3.10",
                "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}},
            }
        ],
        # Nothing runs these pods; let a deletion finish at once.
        "terminationGracePeriodSeconds": 0,
    }
    if run.shape == "wffc":
        spec["volumes"] = [
            {"name": "data", "persistentVolumeClaim": {"claimName": f"data-{number:05d}"}}
        ]
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": f"pod-{number:05d}", "namespace": run.namespace},
        "spec": spec,
    }


async def check_cluster(client: KubeClient, run: ClusterRun) -> int:
    """The nodes the cluster already has; refuses when some are not the benchmark's."""
    nodes, _ = await client.list("Node")
    foreign = [n for n in nodes if LABEL not in ((n.get("metadata") or {}).get("labels") or {})]
    if foreign and not run.allow_foreign_nodes:
        raise Refused(
            f"this cluster has {len(foreign)} node(s) the benchmark did not create "
            f"(e.g. {foreign[0]['metadata']['name']}); it would add {run.nodes} fake Node "
            "objects beside them. Use a throwaway test cluster, or pass "
            "--i-understand-this-creates-nodes"
        )
    return len(nodes)


async def _create_all(
    client: KubeClient, kind: str, objects: list[Raw], batch: int = 50
) -> list[Raw]:
    """Create the objects; returns them as the API server stored them."""
    created: list[Raw] = []
    for start in range(0, len(objects), batch):
        created += await asyncio.gather(
            *(
                client.create(kind, obj, (obj.get("metadata") or {}).get("namespace"))
                for obj in objects[start : start + batch]
            )
        )
    return created


def default_service_account(run: ClusterRun) -> Raw:
    return {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "default", "namespace": run.namespace},
    }


async def ensure_default_service_account(client: KubeClient, run: ClusterRun) -> bool:
    """The namespace's ``default`` ServiceAccount, which every pod runs as: the
    ServiceAccount admission refuses a pod whose account does not exist (403), and only
    kube-controller-manager's ServiceAccount controller makes it. True when made here."""
    try:
        await client.create("ServiceAccount", default_service_account(run), run.namespace)
    except Conflict:  # AlreadyExists: the cluster's controller was first
        return False
    return True


def _is_not_ready_taint(taint: Raw) -> bool:
    return taint.get("key") == NOT_READY_TAINT and taint.get("effect") == "NoSchedule"


async def lift_not_ready_taints(client: KubeClient, nodes: list[Raw], batch: int = 50) -> int:
    """Remove ``node.kubernetes.io/not-ready:NoSchedule`` from the fake nodes.

    The API server's TaintNodesByCondition admission puts it on every new node, and the
    node lifecycle controller lifts it once the node is Ready; without that controller
    no pod would ever be scheduled on them. Returns how many nodes had it."""
    tainted = [
        node
        for node in nodes
        if any(_is_not_ready_taint(t) for t in (node.get("spec") or {}).get("taints") or [])
    ]

    async def lift(node: Raw) -> None:
        kept = [t for t in node["spec"]["taints"] if not _is_not_ready_taint(t)]
        with contextlib.suppress(NotFound):
            await client.patch("Node", node["metadata"]["name"], {"spec": {"taints": kept}})

    for start in range(0, len(tainted), batch):
        await asyncio.gather(*(lift(node) for node in tainted[start : start + batch]))
    return len(tainted)


async def keep_nodes_alive(client: KubeClient, run: ClusterRun) -> None:
    """Renew each fake node's Lease, as a kubelet does: every node once per
    ``lease_renew_seconds``, spread evenly over them as independent kubelets are (a
    burst of 5,000 renewals would load the API server in some measured windows and
    not in others)."""
    loop = asyncio.get_running_loop()
    gap = run.lease_renew_seconds / max(1, run.nodes)
    while True:
        started = loop.time()
        for index in range(run.nodes):
            await asyncio.sleep(max(0.0, started + index * gap - loop.time()))
            with contextlib.suppress(ApiError):
                await client.patch(
                    "Lease",
                    run.node_name(index),
                    {"spec": {"renewTime": _micro_now()}},
                    NODE_LEASE_NAMESPACE,
                )


async def set_up(client: KubeClient, run: ClusterRun) -> dict[str, Any]:
    """Create what the run needs; returns what it made in place of the cluster's
    controllers (and says so in one line)."""
    await client.create(
        "Namespace",
        {
            "apiVersion": "v1",
            "kind": "Namespace",
            "metadata": {"name": run.namespace, "labels": _labels(run)},
        },
    )
    account = await ensure_default_service_account(client, run)
    nodes = await _create_all(client, "Node", [fake_node(run, i) for i in range(run.nodes)])
    untainted = await lift_not_ready_taints(client, nodes)
    await _create_all(client, "Lease", [node_lease(run, i) for i in range(run.nodes)])
    made = {
        "service_account": f"{run.namespace}/default" if account else None,
        "untainted_nodes": untainted,
    }
    said = []
    if account:
        said.append(f"created ServiceAccount {run.namespace}/default")
    if untainted:
        said.append(f"removed the {NOT_READY_TAINT} taint from {untainted} node(s)")
    if said:
        print(
            f"bench cluster: {'; '.join(said)} (the cluster's controllers had not)",
            file=sys.stderr,
            flush=True,
        )
    if run.shape == "wffc":
        await client.create("StorageClass", storage_class(run))
        rng = random.Random(1)
        pvs = [
            local_pv(run, index, slot, rng.choice((5, 10, 20)))
            for index in range(run.nodes)
            for slot in range(run.pvs_per_node)
        ]
        await _create_all(client, "PersistentVolume", pvs)
    return made


async def tear_down(client: KubeClient, run: ClusterRun) -> dict[str, int]:
    """Delete what the run created; counts per kind. Safe to call after a partial set-up."""
    deleted: dict[str, int] = {}
    selector = f"{LABEL}={run.run_id}"

    async def delete(kind: str, name: str, namespace: str | None = None) -> None:
        with contextlib.suppress(NotFound):
            await client.delete(kind, name, namespace)
            deleted[kind] = deleted.get(kind, 0) + 1

    async def release(kind: str, obj: Raw, namespace: str | None = None) -> None:
        """Take the protection finalizers off: on a control plane without
        kube-controller-manager's protection controllers nothing else would, and the
        claim or PV would stay Terminating."""
        if obj["metadata"].get("finalizers"):
            with contextlib.suppress(NotFound):
                patch = {"metadata": {"finalizers": None}}
                await client.patch(kind, obj["metadata"]["name"], patch, namespace)

    for kind in ("Pod", "PersistentVolumeClaim"):
        with contextlib.suppress(NotFound):
            objects, _ = await client.list(kind, run.namespace)
            for start in range(0, len(objects), 50):
                batch = objects[start : start + 50]
                await asyncio.gather(*(release(kind, o, run.namespace) for o in batch))
                await asyncio.gather(
                    *(delete(kind, o["metadata"]["name"], run.namespace) for o in batch)
                )
    await delete("Namespace", run.namespace)
    for kind, namespace in (
        ("PersistentVolume", None),
        ("Lease", NODE_LEASE_NAMESPACE),
        ("Node", None),
        ("StorageClass", None),
    ):
        objects, _ = await client.list(kind, namespace, label_selector=selector)
        for start in range(0, len(objects), 50):
            await asyncio.gather(
                *(release(kind, o, namespace) for o in objects[start : start + 50])
            )
            await asyncio.gather(
                *(
                    delete(kind, o["metadata"]["name"], namespace)
                    for o in objects[start : start + 50]
                )
            )
    return deleted


class Daemon:
    """``volsched run`` against the cluster, configured by flags, its own scheduler name."""

    def __init__(self, run: ClusterRun, workdir: Path, name: str = "daemon") -> None:
        self.run = run
        self.port = free_port()
        self.database = workdir / f"bench-{run.run_id}.db"
        self.log_path = workdir / f"bench-{run.run_id}-{name}.log"
        self.process: asyncio.subprocess.Process | None = None

    async def start(self, timeout: float = 300.0) -> float:
        compile_daemon_modules()
        started = time.monotonic()
        with self.log_path.open("wb") as log:
            self.process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "volsched",
                "run",
                "--kubeconfig",
                self.run.kubeconfig,
                "--http-address",
                f"127.0.0.1:{self.port}",
                "--database",
                str(self.database),
                "--scheduler-name",
                self.run.scheduler_name,
                "--leader-elect=false",
                cwd=str(ROOT),
                env=installed_python_environment(),
                stdout=asyncio.subprocess.DEVNULL,
                stderr=log,
            )
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
            while time.monotonic() - started < timeout:
                if self.process.returncode is not None:
                    raise RuntimeError(f"volsched exited early; see {self.log_path}")
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    # Its own self-signed HTTPS pair: a local probe needs no trust.
                    url = f"https://127.0.0.1:{self.port}/readyz"
                    async with session.get(url, ssl=False) as response:
                        if response.status == 200:
                            return time.monotonic() - started
                await asyncio.sleep(0.01)
        raise RuntimeError(f"volsched was not ready within {timeout:g}s; see {self.log_path}")

    async def stop(self) -> None:
        if self.process is None or self.process.returncode is not None:
            return
        self.process.terminate()
        try:
            await asyncio.wait_for(self.process.wait(), timeout=60)
        except TimeoutError:
            self.process.kill()
            await self.process.wait()


async def measure(client: KubeClient, run: ClusterRun) -> dict[str, Any]:
    """Create the measured pods and sample, once a second, how many are bound; a watch
    records when each binding arrives, for a throughput when the samples are too coarse."""
    if run.shape == "wffc":
        await _create_all(client, "PersistentVolumeClaim", [claim(run, n) for n in range(run.pods)])
    _, version = await client.list("Pod", run.namespace)
    started = time.monotonic()
    bound_at: dict[str, float] = {}
    watcher = asyncio.create_task(
        watch_bindings(
            client,
            run.namespace,
            version,
            lambda name: bound_at.setdefault(name, time.monotonic() - started),
        )
    )
    try:
        await _create_all(client, "Pod", [measured_pod(run, n) for n in range(run.pods)])
        samples: list[tuple[float, int]] = []
        bound = 0
        while bound < run.pods and time.monotonic() - started < run.timeout_seconds:
            await asyncio.sleep(1.0)
            pods, _ = await client.list("Pod", run.namespace)
            bound = sum(1 for p in pods if (p.get("spec") or {}).get("nodeName"))
            samples.append((time.monotonic() - started, bound))
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    elapsed = samples[-1][0] if samples else 0.0
    # scheduler_perf's way: per-second rates, the first (pod creation) interval left out.
    rates = [
        (later[1] - earlier[1]) / (later[0] - earlier[0])
        for earlier, later in itertools.pairwise(samples[1:])
        if later[1] > earlier[1]
    ]
    span = binding_span_rate(list(bound_at.values()))
    throughput = summary(rates, 1) if rates else (summary([span], 1) if span else None)
    return {
        "bound": bound,
        "measured_pods": run.pods,
        "seconds": round(elapsed, 2),
        "overall_pods_per_second": round(bound / elapsed, 1) if elapsed else None,
        "throughput_pods_per_second": throughput,
        # Every pod bound before the second sample leaves no rate to take: the first to
        # the last binding as the watch saw them measures the scheduler, not the creator.
        "throughput_from": "samples" if rates else "first to last binding",
        "binding_span_pods_per_second": span,
        "timeline": [[round(t, 2), n] for t, n in samples],
    }


def binding_span_rate(times: list[float]) -> float | None:
    """Pods per second from the first binding to the last (None with fewer than two)."""
    if len(times) < 2 or max(times) <= min(times):
        return None
    return round((len(times) - 1) / (max(times) - min(times)), 1)


async def watch_bindings(
    client: KubeClient, namespace: str, version: str, bound: Callable[[str], object]
) -> None:
    """Call ``bound`` with each pod of ``namespace`` whose binding reaches a watch (at
    every event of a bound pod: the caller keeps the first); until cancelled."""
    selector = f"metadata.namespace={namespace}"
    while True:
        with contextlib.suppress(ApiError):
            async for event in client.watch("Pod", version, 300, 30, field_selector=selector):
                if not isinstance(event, dict):
                    continue  # a line that could not be decoded
                obj = event.get("object") or {}
                meta = obj.get("metadata") or {}
                version = str(meta.get("resourceVersion") or version)
                if (obj.get("spec") or {}).get("nodeName") and meta.get("name"):
                    bound(meta["name"])
        await asyncio.sleep(0.1)


async def measure_restart(daemon: Daemon, run: ClusterRun, workdir: Path) -> dict[str, Any]:
    """Stop ``daemon`` cleanly, then time a warm start on its database and a cold start on
    an empty one, against the cluster as the measurement left it.  A failure here is
    reported in the result rather than losing the throughput already measured."""
    await daemon.stop()
    warm = Daemon(run, workdir, "warm")
    cold = Daemon(run, workdir, "cold")
    cold.database = workdir / f"bench-{run.run_id}-cold.db"
    try:
        try:
            warm_ready = await warm.start()
        finally:
            await warm.stop()
        try:
            cold_ready = await cold.start()
        finally:
            await cold.stop()
    except (RuntimeError, OSError) as exc:
        return {"error": str(exc)}
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{cold.database}{suffix}").unlink(missing_ok=True)
    loaded = disk_load(warm.log_path)
    return {
        "warm_ready_seconds": round(warm_ready, 2),
        "cold_ready_seconds": round(cold_ready, 2),
        "speedup": round(cold_ready / warm_ready, 2) if warm_ready else None,
        "warm_objects_loaded": loaded.get("objects"),
        "warm_from_snapshot": loaded.get("from_snapshot"),
        "warm_ready_after_load_seconds": loaded.get("ready_after_load_seconds"),
        "catch_up_relists": warm.log_path.read_text(errors="replace").count(CATCH_UP_RELIST),
    }


async def run_benchmark(run: ClusterRun, workdir: Path) -> dict[str, Any]:
    client = await KubeClient.connect(run.kubeconfig)
    daemon = Daemon(run, workdir)
    heartbeat: asyncio.Task[None] | None = None
    try:
        existing = await check_cluster(client, run)
        try:
            made = await set_up(client, run)
            heartbeat = asyncio.create_task(keep_nodes_alive(client, run))
            ready = await daemon.start()
            result = await measure(client, run)
            result["restart"] = await measure_restart(daemon, run, workdir)
        finally:
            if heartbeat is not None:
                heartbeat.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await heartbeat
            await daemon.stop()
            deleted = await tear_down(client, run)
        return {
            "benchmark": "cluster",
            "shape": run.shape,
            "nodes": run.nodes,
            "pvs": run.nodes * run.pvs_per_node if run.shape == "wffc" else 0,
            "nodes_before": existing,
            "made_for_the_cluster": made,
            "daemon_ready_seconds": round(ready, 2),
            "deleted": deleted,
            **result,
        }
    finally:
        await client.close()


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(
        prog="python -m bench cluster", description=__doc__.split("\n\n")[0]
    )
    parser.add_argument("--kubeconfig", required=True, help="kubeconfig of a test cluster")
    parser.add_argument("--shape", choices=("none", "wffc"), default="none")
    parser.add_argument("--nodes", type=int, default=300)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--pvs-per-node", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=600.0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument(
        "--i-understand-this-creates-nodes",
        dest="allow_foreign_nodes",
        action="store_true",
        help="run on a cluster that has nodes of its own (fake nodes are added beside them)",
    )
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    import tempfile

    args = parse_args(argv)
    run = ClusterRun(
        kubeconfig=args.kubeconfig,
        shape=args.shape,
        nodes=args.nodes,
        pods=args.pods,
        pvs_per_node=args.pvs_per_node,
        allow_foreign_nodes=args.allow_foreign_nodes,
        timeout_seconds=args.timeout,
        run_id=secrets.token_hex(3),
    )
    with tempfile.TemporaryDirectory(prefix="volsched-bench-") as scratch:
        workdir = args.workdir or Path(scratch)
        try:
            result = asyncio.run(run_benchmark(run, workdir))
        except Refused as refusal:
            print(f"bench cluster: {refusal}", file=sys.stderr)
            return 2
    given = list(argv if argv is not None else sys.argv[2:])
    shown = ["FILE" if given[i - 1 : i] == ["--kubeconfig"] else a for i, a in enumerate(given)]
    result["command"] = " ".join(["python -m bench cluster", *shown])
    result["machine"] = {"cpus": os.cpu_count()}
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / f"cluster-{run.shape}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "timeline"}, indent=2))
    return 0 if result["bound"] == run.pods else 1


if __name__ == "__main__":
    raise SystemExit(main())
