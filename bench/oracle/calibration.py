"""What a scheduler's client gets from the realistic embedded cluster, next to what a real
kube-apiserver 1.36.2 sends for the same pods.

    VOLSCHED_KUBE_ASSETS=/path/to/bin python -m bench.oracle.calibration \\
        [--nodes 100] [--pods 500] [--out FILE.json]

The embedded benchmarks (``python -m bench e2e-plain`` and the rest) measure volsched
against the emulator's realistic mode; the side-by-side run measures it against the real
server, where it spends more per pod. This run names the difference in what reaches the
client: the same workload — ``--nodes`` nodes, ``--pods`` pods created one at a time,
each bound through ``pods/binding`` and given a ``Scheduled`` event as volsched writes
it — against each server in turn, each on a CPU of its own (the real control plane and
the emulator, a subprocess, on CPU 1; this client on CPU 0). Recorded per server:

- the pod watch: events per pod by type, and the bytes of each event's object (compact
  JSON, as both servers send it);
- a list of the pods: seconds and bytes per pod;
- the round trip of each request kind (create a pod, bind it, write its event): median
  and 90th percentile, one request at a time;
- this client's CPU per pod for those three requests and the two watch events.

The result holds both servers' figures and, per figure, the real server's over the
embedded one's.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import platform
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.cluster import ClusterRun, measured_pod, set_up
from bench.e2e import ROOT, free_port, installed_python_environment
from bench.oracle.controlplane import ControlPlane, assets_dir
from bench.oracle.sidebyside import CONTROL_PLANE_CPU, SCHEDULER_CPU, pin, write_result
from volsched.daemon.kube.client import KubeClient

Raw = dict[str, Any]
RESULTS = ROOT / "bench" / "results" / "oracle"


def compact_size(obj: Any) -> int:
    """The bytes of ``obj`` as compact JSON: what either server puts on the wire for it."""
    return len(json.dumps(obj, separators=(",", ":")).encode())


@dataclass
class PodWatchTally:
    """Events of one namespace's pod watch: how many of each type, and their sizes."""

    events: Counter[str] = field(default_factory=Counter)
    sizes: dict[str, list[int]] = field(default_factory=dict)
    bound: set[str] = field(default_factory=set)

    def seen(self, event: Raw) -> None:
        kind = str(event.get("type"))
        obj = event.get("object") or {}
        self.events[kind] += 1
        self.sizes.setdefault(kind, []).append(compact_size(obj))
        if (obj.get("spec") or {}).get("nodeName"):
            self.bound.add(str((obj.get("metadata") or {}).get("name")))

    def summary(self, pods: int) -> Raw:
        return {
            "events_per_pod": {kind: round(n / pods, 3) for kind, n in sorted(self.events.items())},
            "bytes_per_event": {
                kind: round(statistics.mean(sizes)) for kind, sizes in sorted(self.sizes.items())
            },
        }


def latency_summary(seconds: list[float]) -> Raw:
    ordered = sorted(seconds)
    return {
        "requests": len(ordered),
        "median_ms": round(statistics.median(ordered) * 1000, 3),
        "p90_ms": round(ordered[int(0.9 * (len(ordered) - 1))] * 1000, 3),
    }


async def timed(request: Awaitable[Any], into: list[float]) -> Any:
    """``request``'s result; its round trip appended to ``into`` (a coroutine does
    nothing until awaited, so the time is the request's own)."""
    started = time.perf_counter()
    result = await request
    into.append(time.perf_counter() - started)
    return result


def scheduled_event(namespace: str, pod: str, node: str) -> Raw:
    """The event volsched writes for a bound pod (events.k8s.io/v1)."""
    now = time.strftime("%Y-%m-%dT%H:%M:%S.000000Z", time.gmtime())
    return {
        "apiVersion": "events.k8s.io/v1",
        "kind": "Event",
        # Named as client-go names events: the object's name and a unique suffix.
        "metadata": {"name": f"{pod}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
        "eventTime": now,
        "reportingController": "volsched",
        "reportingInstance": "volsched-calibration",
        "action": "Binding",
        "reason": "Scheduled",
        "type": "Normal",
        "note": f"Successfully assigned {namespace}/{pod} to {node}",
        "regarding": {"apiVersion": "v1", "kind": "Pod", "namespace": namespace, "name": pod},
    }


async def measure_server(kubeconfig: str, nodes: int, pods: int) -> Raw:
    """The workload against the server of ``kubeconfig``; its figures."""
    run = ClusterRun(
        kubeconfig=kubeconfig,
        shape="none",
        nodes=nodes,
        pods=pods,
        allow_foreign_nodes=True,
        run_id="calibration",
    )
    client = await KubeClient.connect(kubeconfig)
    try:
        await set_up(client, run)
        namespace = run.namespace
        _, version = await client.list("Pod", namespace)
        tally = PodWatchTally()
        watching = asyncio.create_task(_watch(client, namespace, version, tally))
        latencies: dict[str, list[float]] = {"create pod": [], "bind": [], "event": []}
        cpu_before = time.process_time()
        for number in range(pods):
            pod = measured_pod(run, number)
            created = await timed(client.create("Pod", pod, namespace), latencies["create pod"])
            name, uid = created["metadata"]["name"], created["metadata"]["uid"]
            node = run.node_name(number % nodes)
            await timed(client.bind_pod(namespace, name, uid, node), latencies["bind"])
            event = scheduled_event(namespace, name, node)
            await timed(client.create("Event", event, namespace, reply=False), latencies["event"])
        deadline = time.monotonic() + 30
        while len(tally.bound) < pods and time.monotonic() < deadline:
            await asyncio.sleep(0.1)
        # What comes after a binding (a status change, say) comes within a second.
        await asyncio.sleep(1.0)
        client_cpu = time.process_time() - cpu_before
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
        started = time.perf_counter()
        items, _ = await client.list("Pod", namespace)
        list_seconds = time.perf_counter() - started
        return {
            "pod_watch": tally.summary(pods),
            "pods_bound_seen": len(tally.bound),
            "list": {
                "pods": len(items),
                "ms_per_pod": round(list_seconds * 1000 / max(1, len(items)), 4),
                "bytes_per_pod": round(
                    sum(compact_size(item) for item in items) / max(1, len(items))
                ),
            },
            "requests": {kind: latency_summary(times) for kind, times in latencies.items()},
            # This client's CPU per pod for its three requests and the watch's two events:
            # what the same work costs a client against each server.
            "client_cpu_ms_per_pod": round(client_cpu * 1000 / pods, 3),
        }
    finally:
        await client.close()


async def _watch(client: KubeClient, namespace: str, version: str, tally: PodWatchTally) -> None:
    selector = f"metadata.namespace={namespace}"
    while True:
        async for event in client.watch("Pod", version, 300, 30, field_selector=selector):
            if isinstance(event, dict) and event.get("type") != "BOOKMARK":
                tally.seen(event)
                meta = (event.get("object") or {}).get("metadata") or {}
                version = str(meta.get("resourceVersion") or version)


async def against_emulator(workdir: Path, nodes: int, pods: int) -> Raw:
    """The workload against the realistic emulator, a process of its own on CPU 1."""
    kubeconfig = workdir / "emulator.kubeconfig"
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "volsched.emulator",
            "--realistic",
            "--port",
            str(free_port()),
            "--kubeconfig",
            str(kubeconfig),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        cwd=ROOT,
        env=installed_python_environment(),
        start_new_session=True,
    )
    try:
        pin(process.pid, CONTROL_PLANE_CPU)
        assert process.stdout is not None
        output = b""
        for _ in range(50):
            line = await asyncio.to_thread(process.stdout.readline)
            output += line
            if b"serving on" in line or not line:
                break
        if b"serving on" not in output:
            raise RuntimeError(f"the emulator did not start: {output.decode(errors='replace')}")
        return await measure_server(str(kubeconfig), nodes, pods)
    finally:
        process.terminate()
        await asyncio.to_thread(process.wait, 30)


async def against_control_plane(assets: Path, workdir: Path, nodes: int, pods: int) -> Raw:
    cp = ControlPlane(assets, workdir / "control-plane")
    cp.start()
    try:
        for process in cp._procs.values():
            pin(process.pid, CONTROL_PLANE_CPU)
        return await measure_server(str(cp.kubeconfig), nodes, pods)
    finally:
        cp.stop()


def ratios(real: Any, embedded: Any) -> Any:
    """Every number of ``real`` over the same one of ``embedded`` (where both have it)."""
    if isinstance(real, dict) and isinstance(embedded, dict):
        return {key: ratios(real[key], embedded[key]) for key in real if key in embedded}
    if isinstance(real, int | float) and isinstance(embedded, int | float) and embedded:
        return round(real / embedded, 2)
    return None


async def calibrate(args: argparse.Namespace, assets: Path, workdir: Path) -> Raw:
    pin(os.getpid(), SCHEDULER_CPU)
    real = await against_control_plane(assets, workdir, args.nodes, args.pods)
    embedded = await against_emulator(workdir, args.nodes, args.pods)
    return {
        "workload": "pods created, bound and given an event one at a time, watched",
        "nodes": args.nodes,
        "pods": args.pods,
        "kube_apiserver": real,
        "embedded_realistic": embedded,
        "real_over_embedded": ratios(real, embedded),
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "command": "python -m bench.oracle.calibration "
        + " ".join(f"--{k} {getattr(args, k)}" for k in ("nodes", "pods")),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.oracle.calibration")
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pods", type=int, default=500)
    parser.add_argument("--out", type=Path, default=None)
    args = parser.parse_args(argv)
    assets = assets_dir()
    if assets is None:
        print("calibration: set VOLSCHED_KUBE_ASSETS to the Kubernetes binaries", file=sys.stderr)
        return 2
    workdir = Path(tempfile.mkdtemp(prefix="volsched-calibration-"))
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        result = asyncio.run(calibrate(args, assets, workdir))
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    write_result(args.out or RESULTS / "calibration.json", result)
    print(json.dumps(result["real_over_embedded"], indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
