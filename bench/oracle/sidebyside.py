"""volsched and the real kube-scheduler 1.36.2, each alone and cold, on one real control plane.

    VOLSCHED_KUBE_ASSETS=/path/to/bin python -m bench.oracle.sidebyside \\
        [--nodes 300] [--pods 1000] [--shape none|wffc] [--rounds 3] [--out FILE.json]

The comparison a platform team makes before trusting volsched with pods: the same pods,
the same nodes, the same API server, one scheduler at a time. A
:class:`~bench.oracle.controlplane.ControlPlane` (etcd, kube-apiserver, the PV binder) is
started once, with ``--nodes`` fake nodes (``bench.cluster`` makes them as it does for any
cluster). Then, per round and in both orders (kube-scheduler first, then volsched first):

1. ``--pods`` pods (and for ``wffc`` a claim each, over local PVs made for the trial) are
   created pending, naming a scheduler no one runs yet;
2. the scheduler under test is started cold — kube-scheduler with a profile of that name,
   volsched with an empty database — pinned to CPU 0, the control plane's processes to
   CPU 1; volsched is then started once more on the database its clean stop kept (warm);
3. a watch records when each binding arrives; the trial ends at the last one. The
   scheduler's CPU is read from ``/proc/PID/stat`` (user + system) at the first binding and
   at the last, so CPU per pod is both *whole* (start-up included, over all pods) and
   *binding* (from the first binding to the last, over the pods bound in between);
4. the scheduler is stopped and the trial's pods, claims and PVs are deleted (grace 0,
   protection finalizers taken off: no kubelet or protection controller would).

Reported per scheduler: throughput from the first binding to the last, CPU per pod, the
first binding after the process started, each trial and the medians over the rounds and
orders. Everything started is stopped on exit, on error and on Ctrl-C or SIGTERM. Both
clients talk to the API server as they do by default, but kube-scheduler is
given a client rate limit (``clientConnection.qps``/``burst``) no lower than volsched's
own unlimited client would meet, so neither waits on its own limiter.
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
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from bench.cluster import (
    ClusterRun,
    _create_all,
    claim,
    ensure_default_service_account,
    keep_nodes_alive,
    local_pv,
    measured_pod,
    set_up,
    storage_class,
    watch_bindings,
)
from bench.e2e import ROOT, compile_daemon_modules, free_port, installed_python_environment
from bench.oracle.controlplane import ControlPlane, assets_dir
from volsched.cache.errors import NotFound
from volsched.daemon.kube.client import KubeClient

Raw = dict[str, Any]
RESULTS = ROOT / "bench" / "results" / "oracle"
SCHEDULER_CPU = 0
CONTROL_PLANE_CPU = 1
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
KUBE_QPS = 5000
SCHEDULERS = ("kube-scheduler", "volsched")
PATH_OPTIONS = ("--out", "--keep", "--py-spy")


def process_cpu_seconds(pid: int) -> float:
    """User + system CPU of ``pid`` so far (its threads included)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def stolen_seconds(stat: str) -> dict[int, float]:
    """Per CPU, the time the hypervisor ran something else while this machine wanted
    to run (the ``steal`` column of ``/proc/stat``): a trial with much of it was measured
    on a slower machine than the others."""
    stolen = {}
    for line in stat.splitlines():
        name, *columns = line.split()
        if name.startswith("cpu") and name[3:].isdigit() and len(columns) > 7:
            stolen[int(name[3:])] = int(columns[7]) / CLOCK_TICKS
    return stolen


def pin(pid: int, cpu: int) -> None:
    """Keep every thread of ``pid`` on ``cpu``. An affinity is a thread's own: a Go
    binary's runtime threads, started before the process is pinned, would otherwise go
    on running on any CPU (threads started later inherit it)."""
    cpus = {cpu % (os.cpu_count() or 1)}
    try:
        threads = [int(task) for task in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        threads = [pid]
    for thread in threads:
        with contextlib.suppress(OSError):
            os.sched_setaffinity(thread, cpus)


@dataclass
class Trial:
    scheduler: str
    order: str
    round: int
    start: str = "cold"
    bound: int = 0
    first_binding_seconds: float | None = None
    first_to_last_seconds: float | None = None
    pods_per_second: float | None = None
    cpu_seconds: float = 0.0
    cpu_ms_per_pod_whole: float | None = None
    cpu_ms_per_pod_binding: float | None = None
    error: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


class Schedulers:
    """How each scheduler under test is started against the control plane."""

    def __init__(self, cp: ControlPlane, workdir: Path, py_spy: Path | None = None) -> None:
        self.cp = cp
        self.workdir = workdir
        self.py_spy = py_spy

    def profiler(self, scheduler: str, pid: int, label: str) -> subprocess.Popen[bytes] | None:
        """py-spy sampling volsched from outside, on the control plane's core so the
        scheduler's own core and CPU figure are left alone (py-spy pauses the process
        for each sample, which costs the scheduler a little wall time, not CPU)."""
        if self.py_spy is None or scheduler != "volsched":
            return None
        self.py_spy.mkdir(parents=True, exist_ok=True)
        profiler = subprocess.Popen(
            [
                "py-spy",
                "record",
                "--pid",
                str(pid),
                "--rate",
                "250",
                "--format",
                "speedscope",
                "--output",
                str(self.py_spy / f"{label}.speedscope.json"),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
        )
        pin(profiler.pid, CONTROL_PLANE_CPU)
        return profiler

    def command(self, scheduler: str, name: str, database: Path) -> list[str]:
        if scheduler == "kube-scheduler":
            config = {
                "apiVersion": "kubescheduler.config.k8s.io/v1",
                "kind": "KubeSchedulerConfiguration",
                "clientConnection": {
                    "kubeconfig": str(self.cp.kubeconfig),
                    "qps": KUBE_QPS,
                    "burst": KUBE_QPS,
                },
                "leaderElection": {"leaderElect": False},
                "profiles": [{"schedulerName": name}],
            }
            path = self.workdir / f"kube-scheduler-{name}.yaml"
            path.write_text(yaml.safe_dump(config, sort_keys=False))
            return [
                str(self.cp.assets / "kube-scheduler"),
                f"--config={path}",
                f"--authentication-kubeconfig={self.cp.kubeconfig}",
                f"--authorization-kubeconfig={self.cp.kubeconfig}",
                "--bind-address=127.0.0.1",
                f"--secure-port={free_port()}",
                "-v=1",
            ]
        return [
            sys.executable,
            "-m",
            "volsched",
            "run",
            "--kubeconfig",
            str(self.cp.kubeconfig),
            "--http-address",
            f"127.0.0.1:{free_port()}",
            "--database",
            str(database),
            "--scheduler-name",
            name,
            "--leader-elect=false",
        ]


Bound = dict[str, tuple[float, float, float]]


def binding_recorder(
    pid_box: list[int], control_plane: list[int], bound_at: Bound
) -> Callable[[str], None]:
    """Each pod's first binding: (monotonic time, the scheduler's CPU then, the control
    plane's CPU then)."""

    def bound(name: str) -> None:
        if name in bound_at:
            return
        cpu = 0.0
        if pid_box:
            with contextlib.suppress(OSError):
                cpu = process_cpu_seconds(pid_box[0])
        bound_at[name] = (time.monotonic(), cpu, control_plane_cpu_seconds(control_plane))

    return bound


def apiserver_requests(metrics: str) -> Counter[str]:
    """kube-apiserver's ``apiserver_request_total`` by verb and resource (summed over
    codes and scopes), from its /metrics text."""
    counts: Counter[str] = Counter()
    for line in metrics.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels_text, _, value = line.rpartition(" ")
        labels = dict(
            part.split("=", 1)
            for part in labels_text[len("apiserver_request_total{") : -1].split(",")
        )
        resource = labels.get("resource", '""').strip('"')
        subresource = labels.get("subresource", '""').strip('"')
        name = f"{labels.get('verb', '').strip(chr(34))} {resource}"
        counts[f"{name}/{subresource}" if subresource else name] += int(float(value))
    return counts


def control_plane_cpu_seconds(pids: list[int]) -> float:
    total = 0.0
    for pid in pids:
        with contextlib.suppress(OSError):
            total += process_cpu_seconds(pid)
    return total


async def run_trial(
    client: KubeClient,
    schedulers: Schedulers,
    base: ClusterRun,
    trial: Trial,
    number: int,
    database: Path,
    timeout: float,
) -> None:
    run = replace(base, run_id=f"{base.run_id}-t{number:02d}")
    namespace = run.namespace
    await client.create(
        "Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
    )
    await ensure_default_service_account(client, run)
    if base.shape == "wffc":
        await client.create("StorageClass", storage_class(run))
        volumes = []
        for index in range(base.nodes):
            for slot in range(base.pvs_per_node):
                size = (5, 10, 20)[(index + slot) % 3]
                volumes.append(local_pv(run, index, slot, size, base.node_name(index)))
        await _create_all(client, "PersistentVolume", volumes)
        await _create_all(client, "PersistentVolumeClaim", [claim(run, n) for n in range(run.pods)])
    await _create_all(client, "Pod", [measured_pod(run, n) for n in range(run.pods)])
    _, version = await client.list("Pod", namespace)
    bound_at: Bound = {}
    pid_box: list[int] = []
    control_plane = [process.pid for process in schedulers.cp._procs.values()]
    requests_before = apiserver_requests(await asyncio.to_thread(schedulers.cp.metrics_text))
    recorder = binding_recorder(pid_box, control_plane, bound_at)
    watcher = asyncio.create_task(watch_bindings(client, namespace, version, recorder))
    log_path = schedulers.workdir / f"{trial.scheduler}-{number:02d}.log"
    log = log_path.open("wb")
    stolen_before = stolen_seconds(Path("/proc/stat").read_text())
    started = time.monotonic()
    process = subprocess.Popen(
        schedulers.command(trial.scheduler, run.scheduler_name, database),
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        cwd=ROOT,
        env=installed_python_environment(),
        start_new_session=True,
    )
    pin(process.pid, SCHEDULER_CPU)
    pid_box.append(process.pid)
    profiler = schedulers.profiler(
        trial.scheduler, process.pid, f"{trial.scheduler}-{number:02d}-{trial.start}"
    )
    try:
        while len(bound_at) < run.pods and time.monotonic() - started < timeout:
            if process.poll() is not None:
                trial.error = f"{trial.scheduler} exited with {process.returncode}"
                break
            await asyncio.sleep(0.05)
        with contextlib.suppress(OSError):
            trial.cpu_seconds = round(process_cpu_seconds(process.pid), 3)
        # What the API server was asked while the scheduler ran (this harness's watch
        # and the nodes' heartbeats included, the same for both schedulers), per pod.
        requests = apiserver_requests(await asyncio.to_thread(schedulers.cp.metrics_text))
        requests.subtract(requests_before)
        stolen = stolen_seconds(Path("/proc/stat").read_text())
        elapsed = time.monotonic() - started
        trial.extra["stolen_share"] = {
            role: round((stolen.get(cpu, 0.0) - stolen_before.get(cpu, 0.0)) / elapsed, 3)
            for role, cpu in (("scheduler", SCHEDULER_CPU), ("control_plane", CONTROL_PLANE_CPU))
        }
        trial.extra["apiserver_requests_per_pod"] = {
            name: round(count / run.pods, 3)
            for name, count in sorted(requests.items(), key=lambda item: -item[1])
            if count > 0
        }
    finally:
        process.terminate()
        try:
            await asyncio.to_thread(process.wait, 60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()
        if profiler is not None:
            await asyncio.to_thread(profiler.wait, 60)
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
    summarise(trial, started, bound_at, run.pods)
    if trial.scheduler == "volsched":
        trial.extra["startup_seconds"] = startup_milestones(log_path.read_text(errors="replace"))
    await clean_up(client, schedulers.cp, run)


def startup_milestones(log: str) -> dict[str, float]:
    """volsched's own start-up milestones (seconds after its process started) from the
    ``start-up:`` and ``first pod bound`` lines of its log."""
    found: dict[str, float] = {}
    for line in log.splitlines():
        if "start-up: " in line:
            for part in line.split("start-up: ", 1)[1].split(", "):
                name, seconds, *_ = part.split()
                found[name] = float(seconds)
        elif "first pod bound " in line:
            found["first_binding"] = float(line.split("first pod bound ", 1)[1].split()[0])
    return found


def summarise(trial: Trial, started: float, bound_at: Bound, pods: int) -> None:
    trial.bound = len(bound_at)
    if not bound_at:
        trial.error = trial.error or "no pod was bound"
        return
    times = sorted(bound_at.values())
    (first, first_cpu, first_cp), (last, last_cpu, last_cp) = times[0], times[-1]
    trial.first_binding_seconds = round(first - started, 3)
    trial.first_to_last_seconds = round(last - first, 3)
    if len(times) > 1 and last > first:
        trial.pods_per_second = round((len(times) - 1) / (last - first), 1)
        trial.cpu_ms_per_pod_binding = round((last_cpu - first_cpu) * 1000 / (len(times) - 1), 3)
        # The API server's side of the same pods (kube-apiserver, etcd and the controller
        # manager, on a core of their own): how busy that core was while they were bound.
        trial.extra["control_plane_cpu_ms_per_pod"] = round(
            (last_cp - first_cp) * 1000 / (len(times) - 1), 3
        )
        trial.extra["control_plane_core_busy"] = round((last_cp - first_cp) / (last - first), 2)
    trial.cpu_ms_per_pod_whole = round(last_cpu * 1000 / len(times), 3)
    if trial.bound < pods and not trial.error:
        trial.error = f"{trial.bound} of {pods} pods bound"


async def clean_up(client: KubeClient, cp: ControlPlane, run: ClusterRun) -> None:
    """Delete the trial's pods at once (no kubelet), its claims and PVs without their
    protection finalizers, then its namespace."""
    namespace = run.namespace

    def delete_collection(path: str) -> None:
        with contextlib.suppress(Exception):
            cp.request("DELETE", path, {"kind": "DeleteOptions", "gracePeriodSeconds": 0})

    await asyncio.to_thread(delete_collection, f"/api/v1/namespaces/{namespace}/pods")
    if run.shape == "wffc":
        for kind, listed_in in (("PersistentVolumeClaim", namespace), ("PersistentVolume", None)):
            objects, _ = await client.list(kind, listed_in)
            mine = [
                o
                for o in objects
                if kind == "PersistentVolumeClaim"
                or o["metadata"]["name"].startswith(f"bench-{run.run_id}-pv-")
            ]
            for obj in mine:
                name = obj["metadata"]["name"]
                with contextlib.suppress(NotFound):
                    await client.delete(kind, name, listed_in)
                with contextlib.suppress(NotFound):
                    patch = {"metadata": {"finalizers": None}}
                    await client.patch(kind, name, patch, listed_in)
        with contextlib.suppress(NotFound):
            await client.delete("StorageClass", f"bench-local-{run.run_id}")
    with contextlib.suppress(NotFound):
        await client.delete("Namespace", namespace)


def median(values: list[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return round(statistics.median(present), 3) if present else None


def medians(trials: list[Trial]) -> dict[str, Any]:
    by: dict[str, list[Trial]] = {}
    for trial in trials:
        by.setdefault(f"{trial.scheduler} ({trial.start})", []).append(trial)
    return {
        name: {
            "trials": len(group),
            "pods_per_second": median([t.pods_per_second for t in group]),
            "cpu_ms_per_pod_whole": median([t.cpu_ms_per_pod_whole for t in group]),
            "cpu_ms_per_pod_binding": median([t.cpu_ms_per_pod_binding for t in group]),
            "control_plane_cpu_ms_per_pod": median(
                [t.extra.get("control_plane_cpu_ms_per_pod") for t in group]
            ),
            "control_plane_core_busy": median(
                [t.extra.get("control_plane_core_busy") for t in group]
            ),
            "first_binding_seconds": median([t.first_binding_seconds for t in group]),
            "errors": [t.error for t in group if t.error],
        }
        for name, group in by.items()
    }


async def benchmark(args: argparse.Namespace, assets: Path, workdir: Path) -> dict[str, Any]:
    compile_daemon_modules()
    base = ClusterRun(
        kubeconfig="",
        shape=args.shape,
        nodes=args.nodes,
        pods=args.pods,
        pvs_per_node=args.pvs_per_node,
        allow_foreign_nodes=True,
        run_id="side",
    )
    cp = ControlPlane(assets, workdir / "control-plane")
    cp.start()
    try:
        for process in cp._procs.values():
            pin(process.pid, CONTROL_PLANE_CPU)
        client = await KubeClient.connect(str(cp.kubeconfig))
        base = replace(base, kubeconfig=str(cp.kubeconfig))
        await set_up(client, base)
        alive = asyncio.create_task(keep_nodes_alive(client, base))
        schedulers = Schedulers(cp, workdir, args.py_spy)
        trials: list[Trial] = []
        number = 0
        try:
            for round_number in range(1, args.rounds + 1):
                for order in (("kube-scheduler", "volsched"), ("volsched", "kube-scheduler")):
                    order_name = f"{order[0]} first"
                    for scheduler in (name for name in order if name in args.schedulers):
                        starts = ("cold", "warm") if scheduler == "volsched" else ("cold",)
                        database = workdir / f"volsched-{round_number}-{order[0]}.db"
                        for start in starts:
                            number += 1
                            trial = Trial(scheduler, order_name, round_number, start)
                            await run_trial(
                                client, schedulers, base, trial, number, database, args.timeout
                            )
                            trials.append(trial)
                            print(json.dumps(trial.__dict__), file=sys.stderr, flush=True)
        finally:
            alive.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await alive
            await client.close()
    finally:
        cp.stop()
    return {
        "workload": f"side by side, {args.shape} shape",
        "kube_scheduler": "v1.36.2",
        "nodes": args.nodes,
        "pods": args.pods,
        "shape": args.shape,
        "rounds": args.rounds,
        "kube_scheduler_client_qps": KUBE_QPS,
        "medians": medians(trials),
        "trials": [trial.__dict__ for trial in trials],
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()},
        "command": "python -m bench.oracle.sidebyside " + " ".join(recorded_arguments()),
    }


def recorded_arguments() -> list[str]:
    """The command line as the result records it: without the paths of where its files
    went (the result, the kept run, the profiles), which are the recorder's machine's."""
    recorded: list[str] = []
    arguments = iter(sys.argv[1:])
    for argument in arguments:
        if argument in PATH_OPTIONS:
            next(arguments, None)
        elif not argument.startswith(tuple(f"{option}=" for option in PATH_OPTIONS)):
            recorded.append(argument)
    return recorded


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.oracle.sidebyside")
    parser.add_argument("--nodes", type=int, default=300)
    parser.add_argument("--pods", type=int, default=1000)
    parser.add_argument("--shape", choices=("none", "wffc"), default="none")
    parser.add_argument("--pvs-per-node", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--timeout", type=float, default=300.0)
    parser.add_argument("--out", type=Path, default=None)
    parser.add_argument(
        "--schedulers",
        default=",".join(SCHEDULERS),
        help="which schedulers to run, comma-separated (default: both)",
    )
    parser.add_argument(
        "--py-spy",
        type=Path,
        default=None,
        metavar="DIR",
        help="profile each volsched trial with py-spy (speedscope files written to DIR)",
    )
    parser.add_argument(
        "--keep",
        type=Path,
        default=None,
        metavar="DIR",
        help="keep the run's files (each scheduler's log, configs, databases) under DIR",
    )
    args = parser.parse_args(argv)
    chosen = [name.strip() for name in args.schedulers.split(",") if name.strip()]
    unknown = sorted(set(chosen) - set(SCHEDULERS))
    if unknown or not chosen:
        parser.error(f"--schedulers: choose among {', '.join(SCHEDULERS)}")
    args.schedulers = chosen
    if args.py_spy is not None and shutil.which("py-spy") is None:
        parser.error("--py-spy: py-spy is not installed (pip install -e '.[bench]')")
    assets = assets_dir()
    if assets is None:
        print("sidebyside: set VOLSCHED_KUBE_ASSETS to the Kubernetes binaries", file=sys.stderr)
        return 2
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
    workdir = Path(tempfile.mkdtemp(prefix="volsched-sidebyside-", dir=args.keep))
    # A SIGTERM unwinds like Ctrl-C, so the control plane and the scheduler under test
    # are stopped (they run in sessions of their own and would outlive us).
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))
    try:
        result = asyncio.run(benchmark(args, assets, workdir))
    finally:
        if args.keep is None:
            shutil.rmtree(workdir, ignore_errors=True)
    write_result(args.out or RESULTS / f"sidebyside-{args.shape}.json", result)
    print(json.dumps(result["medians"], indent=2))
    return 0


def write_result(out: Path, result: dict[str, Any]) -> None:
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(result, indent=2) + "\n")


if __name__ == "__main__":
    raise SystemExit(main())
