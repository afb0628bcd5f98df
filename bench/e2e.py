"""End-to-end throughput: the real daemon against the embedded API emulator over HTTP.

The way kube-scheduler's scheduler_perf measures it: the cluster (nodes, storage
classes, PVs, claims, running pods) is loaded first and the daemon is started and
ready; then the measured pods are created at the start of the window and a collector
samples, once a second, how many of them are bound.  Throughput is reported as
scheduler_perf's ``SchedulingThroughput`` is: the per-second samples (the first one,
which overlaps pod creation, skipped; an interval in which nothing was bound merged into
the next), as their average and 50th/90th/95th/99th percentiles.

The daemon is the real one with its real SQLite file and talks HTTP to the emulator.
By default the emulator runs in its realistic mode (``emulator="realistic"``): HTTPS with
its own CA, and objects as kube-apiserver returns them, every defaulted field and
``managedFields`` included, so the daemon pays for TLS and for decoding what a real
server sends. ``emulator="zero-cost"`` (plain HTTP, objects as loaded) is kept as a
comparison: the difference between the two is what the emulator used to hide.
It runs either as a subprocess (``python -m volsched.daemon.cli.main run``; the default, and what the
published figures use: on a 2-core machine the emulator gets one core and the daemon
the other) or in the bench process, sharing one event loop with the emulator (both on
one core; it also lets the bench time every scheduling cycle exactly).

Claims are bound by an event-driven stand-in for the PV controller (``PvBinder``) that
runs the emulator's own binding step for each PV a prebind touched.  The emulator's
controller rescans every PV and claim on every change of any object, which is right for
tests and costs ~0.14 s per change at 50,000 PVs; kube-controller-manager syncs per
object, so the bench does too (``pv_binder="emulator"`` measures with the rescanning
controller).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import math
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any

import aiohttp
import yaml
from prometheus_client.parser import text_string_to_metric_families

from bench.memory import peak_rss_mb
from bench.scenario import Scenario, generate, is_measured_pod, object_counts
from volsched.emulator import ApiServer, ControllerSettings, write_kubeconfig
from volsched.emulator.pv_controller import PersistentVolumeController, claim_ref_matches
from volsched.emulator.store import Change

ROOT = Path(__file__).resolve().parent.parent
Raw = dict[str, Any]
PODS = ("", "pods")
PVS = ("", "persistentvolumes")
CLAIMS = ("", "persistentvolumeclaims")
SAMPLE_SECONDS = 1.0


@dataclass(frozen=True)
class E2eOptions:
    mode: str = "subprocess"  # or "inprocess"
    emulator: str = "realistic"  # or "zero-cost": plain HTTP, objects as loaded
    parallelism: int = 16  # the daemon's default binding concurrency
    pv_binder: str = "incremental"  # or "emulator": the emulator's rescanning controller
    pv_bind_delay_seconds: float = 0.0
    provision_delay_seconds: float = 0.0
    timeout_seconds: float = 600.0
    stall_seconds: float = 30.0
    pod_batch: int = 100
    # Record the daemon with py-spy during the measured window (needs py-spy on PATH or
    # beside the interpreter) and add the top functions to the result.
    profile: bool = False


# -- statistics --------------------------------------------------------------------


def percentile(samples: list[float], fraction: float) -> float:
    """scheduler_perf's pick: the ceil(n·p)-th smallest sample."""
    ordered = sorted(samples)
    return ordered[max(0, math.ceil(len(ordered) * fraction) - 1)]


def summary(samples: list[float], digits: int = 3) -> dict[str, float]:
    if not samples:
        return {}
    return {
        "average": round(statistics.fmean(samples), digits),
        "p50": round(percentile(samples, 0.50), digits),
        "p90": round(percentile(samples, 0.90), digits),
        "p95": round(percentile(samples, 0.95), digits),
        "p99": round(percentile(samples, 0.99), digits),
    }


def histogram_summary(metrics_text: str, name: str, labels: dict[str, str]) -> dict[str, float]:
    """Percentiles (ms) of a Prometheus histogram, interpolated in buckets as
    ``histogram_quantile`` and scheduler_perf's metrics collector do."""
    buckets: list[tuple[float, float]] = []
    total = count = 0.0
    for family in text_string_to_metric_families(metrics_text):
        if family.name != name:
            continue
        for sample in family.samples:
            if any(sample.labels.get(k) != v for k, v in labels.items()):
                continue
            if sample.name.endswith("_bucket"):
                buckets.append((float(sample.labels["le"]), sample.value))
            elif sample.name.endswith("_sum"):
                total = sample.value
            elif sample.name.endswith("_count"):
                count = sample.value
    if not count:
        return {}
    buckets.sort()

    def quantile(q: float) -> float:
        rank = q * count
        lower_bound = lower_count = 0.0
        for bound, cumulative in buckets:
            if cumulative >= rank:
                if math.isinf(bound):
                    return lower_bound
                width = cumulative - lower_count
                share = (rank - lower_count) / width if width else 1.0
                return lower_bound + (bound - lower_bound) * share
            lower_bound, lower_count = bound, cumulative
        return lower_bound

    result = {"average": round(total / count * 1000, 3), "count": int(count)}
    for q in (0.5, 0.9, 0.99):
        result[f"p{round(q * 100)}"] = round(quantile(q) * 1000, 3)
    return result


def counter_by_label(metrics_text: str, name: str, label: str) -> dict[str, int]:
    """A Prometheus counter's values by one label (``scheduler_schedule_attempts`` by
    result: scheduled, unschedulable, error)."""
    values: dict[str, int] = {}
    for family in text_string_to_metric_families(metrics_text):
        if family.name != name:
            continue
        for sample in family.samples:
            if sample.name.endswith("_total"):
                key = sample.labels.get(label, "")
                values[key] = values.get(key, 0) + int(sample.value)
    return values


class ThroughputCollector:
    """scheduler_perf's throughputCollector over the emulator's own record of bindings."""

    def __init__(self, recorder: BindRecorder) -> None:
        self.recorder = recorder
        self.samples: list[float] = []
        self.timeline: list[tuple[float, float]] = []  # (seconds since start, pods/s)

    async def run(self, started: float) -> None:
        last_count, last_time, skipped, begun = 0, started, 0, False
        next_tick = started
        while True:
            next_tick += SAMPLE_SECONDS
            await asyncio.sleep(max(0.0, next_tick - time.monotonic()))
            now, scheduled = time.monotonic(), self.recorder.bound
            if scheduled == 0:
                continue
            if not begun:
                # The first sample overlaps pod creation: an outlier, as upstream skips it.
                begun, last_count, last_time = True, scheduled, now
                continue
            if scheduled == last_count:
                skipped += 1
                continue
            rate = (scheduled - last_count) / (now - last_time)
            self.samples.extend([rate] * (skipped + 1))
            self.timeline.append((round(now - started, 3), round(rate, 2)))
            last_count, last_time, skipped = scheduled, now, 0


class BindRecorder:
    """Watches the emulator's store for measured pods being created and bound."""

    def __init__(self, server: ApiServer, measured: Iterable[str]) -> None:
        self.waiting = set(measured)
        self.expected = len(self.waiting)
        self.created: dict[str, float] = {}
        self.bound_at: dict[str, float] = {}
        self.server = server
        server.store.listeners.append(self._notify)

    @property
    def bound(self) -> int:
        return len(self.bound_at)

    def _notify(self, key: tuple[str, str], change: Change) -> None:
        if key != PODS:
            return
        name = change.object["metadata"]["name"]
        if name not in self.waiting:
            return
        if change.type == "ADDED":
            self.created[name] = time.monotonic()
        elif (change.object.get("spec") or {}).get("nodeName") and name not in self.bound_at:
            self.bound_at[name] = time.monotonic()

    def close(self) -> None:
        with contextlib.suppress(ValueError):
            self.server.store.listeners.remove(self._notify)

    def rate_timeline(self, started: float, bin_seconds: float) -> list[tuple[float, float]]:
        """Pods bound per second in consecutive bins (for plots; exact bind times)."""
        if not self.bound_at:
            return []
        last = max(self.bound_at.values()) - started
        counts = [0] * (int(last / bin_seconds) + 1)
        for at in self.bound_at.values():
            counts[max(0, int((at - started) / bin_seconds))] += 1
        return [
            (round((index + 1) * bin_seconds, 3), round(count / bin_seconds, 2))
            for index, count in enumerate(counts)
        ]

    def latencies_ms(self) -> list[float]:
        return [(at - self.created[name]) * 1000 for name, at in self.bound_at.items()]


class PvBinder:
    """The PV controller's binding step, run for each PV whose claimRef was just set.

    It reuses the emulator controller's own ``_bind`` (claimRef uid, PV Bound, claim
    volumeName and annotations, claim Bound) so the API writes are the same; only the
    trigger differs: one PV change instead of a scan of the whole cluster.
    """

    def __init__(self, server: ApiServer, delay_seconds: float) -> None:
        settings = replace(server.settings, pv_bind_delay_seconds=delay_seconds)
        self.controller = PersistentVolumeController(server.registry, settings)
        self.delay_seconds = delay_seconds
        self.server = server
        server.store.listeners.append(self._notify)

    def _notify(self, key: tuple[str, str], change: Change) -> None:
        if key != PVS or change.type == "DELETED":
            return
        pv = change.object
        ref = (pv.get("spec") or {}).get("claimRef")
        if not ref:
            return
        claim = self.server.store.get(CLAIMS, str(ref.get("namespace") or ""), str(ref["name"]))
        name = pv["metadata"]["name"]
        if claim is None or not claim_ref_matches(pv, claim):
            return
        if (claim.get("spec") or {}).get("volumeName") not in (None, "", name):
            return
        if self.controller._needs_binding(pv, claim):
            self.controller.later(f"bind/{name}", self.delay_seconds, self.controller._bind, name)

    async def close(self) -> None:
        with contextlib.suppress(ValueError):
            self.server.store.listeners.remove(self._notify)
        pending = list(self.controller._pending.values())
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)


# -- profiling -----------------------------------------------------------------------


def _py_spy() -> str | None:
    import shutil

    return shutil.which("py-spy", path=str(Path(sys.executable).parent)) or shutil.which("py-spy")


class Profiler:
    """py-spy recording one process (the daemon) as collapsed stacks."""

    def __init__(self, pid: int, output: Path) -> None:
        self.pid = pid
        self.output = output
        self.process: asyncio.subprocess.Process | None = None

    async def start(self) -> bool:
        tool = _py_spy()
        if tool is None:
            return False
        self.process = await asyncio.create_subprocess_exec(
            tool,
            "record",
            "--pid",
            str(self.pid),
            "--format",
            "raw",
            "--rate",
            "250",
            "--gil",
            "--output",
            str(self.output),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.DEVNULL,
        )
        await asyncio.sleep(0.3)
        return True

    async def stop(self) -> dict[str, Any]:
        if self.process is None:
            return {}
        self.process.send_signal(signal.SIGINT)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self.process.wait(), 30)
        if not self.output.exists():
            return {}
        return summarize_profile(self.output.read_text())


def _frame_name(frame: str) -> str:
    # py-spy raw frames look like "function (path/to/file.py:123)".
    name, _, where = frame.partition(" (")
    path = where.rstrip(")").rsplit(":", 1)[0]
    for marker in ("/site-packages/", f"{ROOT}/", "/lib/python3"):
        if marker in path:
            path = path.split(marker, 1)[1]
            break
    return f"{name} ({path})"


def summarize_profile(collapsed: str, top: int = 25) -> dict[str, Any]:
    """Top functions by own time and by inclusive time, as shares of all samples."""
    own: dict[str, int] = {}
    inclusive: dict[str, int] = {}
    total = 0
    for line in collapsed.splitlines():
        stack, _, count_text = line.rpartition(" ")
        if not stack or not count_text.isdigit():
            continue
        count = int(count_text)
        frames = [_frame_name(f) for f in stack.split(";") if f and not f.startswith("process ")]
        if not frames:
            continue
        total += count
        own[frames[-1]] = own.get(frames[-1], 0) + count
        for frame in set(frames):
            inclusive[frame] = inclusive.get(frame, 0) + count

    def shares(table: dict[str, int]) -> list[list[Any]]:
        ranked = sorted(table.items(), key=lambda item: -item[1])[:top]
        return [[name, round(100 * count / total, 1)] for name, count in ranked]

    return {"samples": total, "own_percent": shares(own), "inclusive_percent": shares(inclusive)}


# -- the emulated cluster and the daemon -----------------------------------------------


def crds() -> list[Raw]:
    objects: list[Raw] = []
    for path in sorted((ROOT / "deploy" / "crds").glob("*.yaml")):
        objects.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return objects


def controller_settings(scenario: Scenario, options: E2eOptions) -> ControllerSettings:
    return ControllerSettings(
        pv_controller=options.pv_binder == "emulator",
        pv_bind_delay_seconds=options.pv_bind_delay_seconds,
        provisioner=scenario.shape in ("dynamic", "replicated"),
        provision_delay_seconds=options.provision_delay_seconds,
        storage_agent=scenario.storage_disks > 0,
        replica_sync_delay_seconds=0.05,
        kubelet=False,
    )


async def start_emulator(
    scenario: Scenario,
    controllers: ControllerSettings,
    objects: list[Raw],
    bookmark_interval_seconds: float = 1.0,
    realistic: bool = False,
) -> tuple[ApiServer, float]:
    """The emulator on a loopback port holding ``objects``; and the seconds loading took."""
    server = ApiServer(
        controllers, bookmark_interval_seconds=bookmark_interval_seconds, realistic=realistic
    )
    await server.start()
    started = time.perf_counter()
    if scenario.storage_disks:
        server.load(crds())
    server.load(objects)
    return server, time.perf_counter() - started


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def write_daemon_config(
    workdir: Path,
    database: Path,
    port: int,
    parallelism: int,
    url: str,
    certificate_authority: bytes | None = None,
) -> tuple[Path, Path]:
    kubeconfig = write_kubeconfig(workdir / "kubeconfig", url, "default", certificate_authority)
    config = workdir / "volsched.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "database": {"path": str(database)},
                "http": {
                    "address": f"127.0.0.1:{port}",
                    "authentication": {"enabled": False},
                },
                "parallelism": parallelism,
                "bindTimeoutSeconds": 120,
            }
        )
    )
    return kubeconfig, config


def installed_python_environment() -> dict[str, str]:
    """The environment for a timed child interpreter, with its bytecode cached.

    An installed volsched (a wheel, a container image) has its modules compiled; a
    development tree run with ``PYTHONDONTWRITEBYTECODE`` recompiles every module at each
    start, which would add a fixed cost to every timed start.  In that case the bytecode
    goes under ``~/.cache`` rather than into the source tree; otherwise Python's usual
    ``__pycache__`` directories hold it.  ``compile_daemon_modules`` pays the compile
    once, before anything is timed.
    """
    env = dict(os.environ)
    if env.pop("PYTHONDONTWRITEBYTECODE", None) and "PYTHONPYCACHEPREFIX" not in env:
        env["PYTHONPYCACHEPREFIX"] = str(Path.home() / ".cache" / "volsched-bench" / "pycache")
    return env


@functools.cache
def compile_daemon_modules() -> None:
    """Compile, untimed, what a daemon start imports, so every timed start finds its
    bytecode: the daemon's modules, and what a cold start's schema creation loads later
    (alembic's migration path and the migration scripts), by migrating a scratch file."""
    env = installed_python_environment()
    with tempfile.TemporaryDirectory(prefix="volsched-compile-") as scratch:
        subprocess.run(
            [sys.executable, "-m", "volsched", "migrate", "--database", f"{scratch}/x.db"],
            cwd=ROOT,
            env=env,
            check=True,
            stdout=subprocess.DEVNULL,
        )
    subprocess.run(
        [sys.executable, "-c", "import volsched.daemon.cli.main, volsched.daemon.runtime.app"],
        cwd=ROOT,
        env=env,
        check=True,
    )


class DaemonProcess:
    """``python -m volsched.daemon.cli.main run`` as a child process, with its readiness and memory."""

    def __init__(
        self,
        workdir: Path,
        database: Path,
        url: str,
        parallelism: int = 16,
        certificate_authority: bytes | None = None,
    ) -> None:
        self.port = free_port()
        self.kubeconfig, self.config = write_daemon_config(
            workdir, database, self.port, parallelism, url, certificate_authority
        )
        self.log_path = workdir / f"daemon-{self.port}.log"
        self.process: asyncio.subprocess.Process | None = None
        self.started = 0.0

    @property
    def pid(self) -> int:
        assert self.process is not None
        return self.process.pid

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    async def start(self) -> None:
        compile_daemon_modules()
        log = self.log_path.open("wb")
        self.started = time.monotonic()
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "volsched.daemon.cli.main",
            "run",
            "--kubeconfig",
            str(self.kubeconfig),
            "--config",
            str(self.config),
            cwd=str(ROOT),
            env=installed_python_environment(),
            stdout=asyncio.subprocess.DEVNULL,
            stderr=log,
        )
        log.close()

    async def wait_ready(self, timeout: float = 300.0, poll_seconds: float = 0.01) -> float:
        """Seconds from process start to the first ``/readyz`` 200."""
        assert self.process is not None
        deadline = self.started + timeout
        async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=5)) as session:
            while time.monotonic() < deadline:
                if self.process.returncode is not None:
                    raise RuntimeError(f"the daemon exited early; see {self.log_path}")
                with contextlib.suppress(aiohttp.ClientError, TimeoutError):
                    async with session.get(self.base + "/readyz") as response:
                        if response.status == 200:
                            return time.monotonic() - self.started
                await asyncio.sleep(poll_seconds)
        raise RuntimeError(f"the daemon was not ready within {timeout:g}s; see {self.log_path}")

    async def metrics(self) -> str:
        async with (
            aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session,
            session.get(self.base + "/metrics") as response,
        ):
            return await response.text()

    async def pending_writes(self) -> float:
        for family in text_string_to_metric_families(await self.metrics()):
            if family.name == "volsched_database_pending_writes":
                return family.samples[0].value
        return 0.0

    def cpu_seconds(self) -> float:
        """User + system CPU time the daemon has used so far."""
        assert self.process is not None
        with contextlib.suppress(OSError, IndexError, ValueError):
            fields = Path(f"/proc/{self.process.pid}/stat").read_text().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        return 0.0

    def peak_rss_mb(self) -> float | None:
        assert self.process is not None
        return peak_rss_mb(self.process.pid)

    async def stop(self, timeout: float = 60.0) -> int:
        """SIGTERM (the daemon drains and flushes its database), then wait."""
        process = self.process
        if process is None:
            return 0
        if process.returncode is not None:
            return process.returncode
        process.send_signal(signal.SIGTERM)
        try:
            return await asyncio.wait_for(process.wait(), timeout)
        except TimeoutError:
            process.kill()
            return await process.wait()


class InProcessDaemon:
    """The daemon on the bench's own event loop; every scheduling cycle is timed."""

    def __init__(
        self,
        workdir: Path,
        database: Path,
        url: str,
        parallelism: int,
        certificate_authority: bytes | None = None,
    ) -> None:
        self.workdir, self.database, self.url = workdir, database, url
        self.parallelism = parallelism
        self.certificate_authority = certificate_authority
        self.cycle_ms: list[float] = []
        self.daemon: Any = None
        self.client: Any = None

    async def start(self) -> float:
        from volsched.daemon.config.settings import (
            AuthSettings,
            DatabaseSettings,
            HttpSettings,
            Settings,
        )
        from volsched.daemon.kube.client import KubeClient
        from volsched.daemon.runtime.app import DaemonOptions, open_daemon

        started = time.monotonic()
        kubeconfig = write_kubeconfig(
            self.workdir / "kubeconfig", self.url, "default", self.certificate_authority
        )
        settings = Settings(
            database=DatabaseSettings(str(self.database)),
            http=HttpSettings("127.0.0.1:0", AuthSettings(enabled=False)),
            parallelism=self.parallelism,
            bind_timeout_seconds=120,
        )
        self.client = await KubeClient.connect(str(kubeconfig))
        options = DaemonOptions(seed=1, grace_seconds=10)
        self.daemon = await open_daemon(settings, self.client, options)
        scheduler = self.daemon.scheduler
        decide = scheduler.schedule

        def timed(pod: Any) -> Any:
            begin = time.perf_counter()
            try:
                return decide(pod)
            finally:
                self.cycle_ms.append((time.perf_counter() - begin) * 1000)

        scheduler.schedule = timed
        await self.daemon.start(serve_http=False)
        return time.monotonic() - started

    async def metrics(self) -> str:
        return str(self.daemon.metrics.render().decode())

    async def pending_writes(self) -> float:
        return float(self.daemon.store.stats.pending)

    def cpu_seconds(self) -> float:
        return 0.0  # shares the bench process: counted there

    def peak_rss_mb(self) -> float | None:
        return peak_rss_mb()  # the bench process: emulator and daemon together

    async def stop(self) -> None:
        if self.daemon is not None:
            await self.daemon.stop()
        if self.client is not None:
            await self.client.close()


async def wait_for_settled_database(daemon: DaemonProcess | InProcessDaemon) -> float:
    """Wait until the daemon has written the listed objects to SQLite (not measured)."""
    started = time.monotonic()
    while time.monotonic() - started < 300:
        if await daemon.pending_writes() == 0:
            break
        await asyncio.sleep(0.2)
    await asyncio.sleep(0.5)
    return time.monotonic() - started


# -- one run ---------------------------------------------------------------------------


async def _create_pods(server: ApiServer, pods: list[Raw], batch: int) -> None:
    for start in range(0, len(pods), batch):
        server.load(pods[start : start + batch])
        await asyncio.sleep(0)


async def _wait_bound(recorder: BindRecorder, options: E2eOptions, started: float) -> str:
    last_count, last_change = -1, time.monotonic()
    while recorder.bound < recorder.expected:
        now = time.monotonic()
        if recorder.bound != last_count:
            last_count, last_change = recorder.bound, now
        if now - last_change > options.stall_seconds:
            return f"stalled: no pod bound for {options.stall_seconds:g}s"
        if now - started > options.timeout_seconds:
            return f"time limit of {options.timeout_seconds:g}s reached"
        await asyncio.sleep(0.05)
    return "all pods bound"


async def run_e2e(scenario: Scenario, options: E2eOptions, workdir: Path) -> dict[str, Any]:
    """One scenario end to end; the result is one JSON-ready dict."""
    objects = list(generate(scenario))
    pods = [raw for raw in objects if is_measured_pod(raw)]
    setup = [raw for raw in objects if not is_measured_pod(raw)]
    server, load_seconds = await start_emulator(
        scenario,
        controller_settings(scenario, options),
        setup,
        realistic=options.emulator == "realistic",
    )
    binder = (
        PvBinder(server, options.pv_bind_delay_seconds)
        if options.pv_binder == "incremental"
        else None
    )
    recorder = BindRecorder(server, (raw["metadata"]["name"] for raw in pods))
    # A fresh database per run: a file left by another run would make a warm start
    # against a different (emulated) cluster.
    database = workdir / f"e2e-{scenario.shape}-{scenario.nodes}n-{len(objects)}o-{os.getpid()}.db"
    for suffix in ("", "-wal", "-shm"):
        Path(f"{database}{suffix}").unlink(missing_ok=True)
    daemon: DaemonProcess | InProcessDaemon
    if options.mode == "subprocess":
        daemon = DaemonProcess(
            workdir, database, server.url, options.parallelism, server.certificate_authority
        )
    else:
        daemon = InProcessDaemon(
            workdir, database, server.url, options.parallelism, server.certificate_authority
        )
    try:
        if isinstance(daemon, DaemonProcess):
            await daemon.start()
            ready_seconds = await daemon.wait_ready()
        else:
            ready_seconds = await daemon.start()
        settle_seconds = await wait_for_settled_database(daemon)

        profiler: Profiler | None = None
        bench_profiler: Profiler | None = None
        if options.profile:
            label = f"{scenario.shape}-{scenario.nodes}n-{len(objects)}o"
            if isinstance(daemon, DaemonProcess):
                profiler = Profiler(daemon.pid, workdir / f"profile-daemon-{label}.txt")
                await profiler.start()
            # The bench process: the emulator and its controllers (and an in-process daemon).
            bench_profiler = Profiler(os.getpid(), workdir / f"profile-bench-{label}.txt")
            await bench_profiler.start()
        started = time.monotonic()
        bench_cpu, daemon_cpu = time.process_time(), daemon.cpu_seconds()
        collector = ThroughputCollector(recorder)
        sampling = asyncio.create_task(collector.run(started))
        await _create_pods(server, pods, options.pod_batch)
        created_seconds = time.monotonic() - started
        ending = await _wait_bound(recorder, options, started)
        sampling.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await sampling
        window = time.monotonic() - started
        bench_cpu = time.process_time() - bench_cpu
        daemon_cpu = daemon.cpu_seconds() - daemon_cpu
        profile = await profiler.stop() if profiler is not None else None
        bench_profile = await bench_profiler.stop() if bench_profiler is not None else None
        # The last binding cycles still write their event and close their journal entry
        # after the pod is bound: let them finish before reading the counters.
        await asyncio.sleep(1.0)
        metrics_text = await daemon.metrics()
        peak_rss = daemon.peak_rss_mb()
    finally:
        await daemon.stop()
        recorder.close()
        if binder is not None:
            await binder.close()
        await server.stop()

    last_bound = max(recorder.bound_at.values(), default=started)
    duration = last_bound - started
    result: dict[str, Any] = {
        "scenario": asdict(scenario),
        "objects": object_counts(objects),
        "pvs": sum(1 for raw in objects if raw["kind"] == "PersistentVolume"),
        "options": asdict(options),
        "emulator_load_seconds": round(load_seconds, 2),
        "daemon_ready_seconds": round(ready_seconds, 2),
        "database_settle_seconds": round(settle_seconds, 2),
        "pods_created_seconds": round(created_seconds, 3),
        "measured_pods": recorder.expected,
        "scheduled_pods": recorder.bound,
        "ending": ending,
        "duration_seconds": round(duration, 3),
        "throughput_pods_per_second": summary(collector.samples, 1),
        "overall_pods_per_second": round(recorder.bound / duration, 1) if duration > 0 else 0.0,
        "throughput_samples": [rate for _, rate in collector.timeline],
        "throughput_timeline": collector.timeline,
        # From the exact bind times, in 1 s bins (0.2 s for runs under 10 s): what the
        # plots draw, and the only timeline a run too short for two samples has.
        "bound_per_second_timeline": recorder.rate_timeline(
            started, 1.0 if duration >= 10 else 0.2
        ),
        "latency_create_to_bound_ms": summary(recorder.latencies_ms(), 1),
        "attempt_duration_ms": histogram_summary(
            metrics_text,
            "scheduler_scheduling_attempt_duration_seconds",
            {"result": "scheduled"},
        ),
        "schedule_attempts": counter_by_label(
            metrics_text, "scheduler_schedule_attempts", "result"
        ),
        "binding_duration_ms": histogram_summary(
            metrics_text, "volsched_binding_duration_seconds", {"result": "scheduled"}
        ),
        "cycle_duration_ms": histogram_summary(
            metrics_text, "scheduler_scheduling_algorithm_duration_seconds", {}
        ),
        "daemon_peak_rss_mb": peak_rss,
        # Busy share of one core during the window: the bench process (emulator, its
        # controllers, the collector; and the daemon too when in-process) and the daemon.
        "cpu_percent": {
            "bench_process": round(100 * bench_cpu / window, 1),
            "daemon_process": round(100 * daemon_cpu / window, 1),
        },
    }
    # scheduler_perf's average when the run gave samples, else (a run shorter than two
    # sample intervals) the overall rate.
    rate = result["throughput_pods_per_second"].get("average") or result["overall_pods_per_second"]
    result["pods_per_second"] = rate
    result["ms_per_pod"] = round(1000 / rate, 3) if rate else None
    # The daemon's CPU per pod bound, and the part of it spent outside the scheduling
    # cycle (binding, events, status, watch decoding, persistence): the cycle is
    # synchronous CPU work, so its wall time is its CPU time.
    if recorder.bound:
        cpu_ms = 1000 * daemon_cpu / recorder.bound
        cycle_ms = result["cycle_duration_ms"].get("average") or 0.0
        attempts = result["cycle_duration_ms"].get("count") or 0
        cycle_per_pod = cycle_ms * attempts / recorder.bound
        result["daemon_cpu_ms_per_pod"] = round(cpu_ms, 3)
        result["outside_cycle_cpu_ms_per_pod"] = round(cpu_ms - cycle_per_pod, 3)
    if isinstance(daemon, InProcessDaemon):
        result["cycle_ms"] = summary(daemon.cycle_ms, 3)
    if profile is not None:
        result["profile"] = profile
    if bench_profile is not None:
        result["bench_process_profile"] = bench_profile
    return result


def load_average() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def main(argv: list[str] | None = None) -> int:
    """One ad-hoc end-to-end run (any shape and size) printed as JSON, for diagnosis:

    python -m bench.e2e --shape prebound --nodes 100 --pods 1000 --parallelism 64
    """
    import argparse
    import json
    import tempfile

    from bench.scenario import SHAPES

    parser = argparse.ArgumentParser(description="one end-to-end run, printed as JSON")
    parser.add_argument("--shape", choices=SHAPES, default="prebound")
    parser.add_argument("--nodes", type=int, default=100)
    parser.add_argument("--pvs-per-node", type=int, default=10)
    parser.add_argument("--initial-pods", type=int, default=0)
    parser.add_argument("--pods", type=int, default=500)
    parser.add_argument("--parallelism", type=int, default=16)
    parser.add_argument("--mode", choices=("subprocess", "inprocess"), default="subprocess")
    parser.add_argument(
        "--emulator",
        choices=("realistic", "zero-cost"),
        default="realistic",
        help="the API emulator as a real server costs (HTTPS, full objects) or zero-cost",
    )
    parser.add_argument("--pv-binder", choices=("incremental", "emulator"), default="incremental")
    parser.add_argument(
        "--pv-bind-delay",
        type=float,
        default=0.0,
        help="seconds the PV controller takes to bind a prebound claim",
    )
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--workdir", type=Path)
    args = parser.parse_args(argv)
    scenario = Scenario(
        nodes=args.nodes,
        shape=args.shape,
        pvs_per_node=args.pvs_per_node,
        initial_pods=args.initial_pods,
        measured_pods=args.pods,
    )
    options = E2eOptions(
        mode=args.mode,
        emulator=args.emulator,
        parallelism=args.parallelism,
        pv_binder=args.pv_binder,
        pv_bind_delay_seconds=args.pv_bind_delay,
        profile=args.profile,
    )
    with tempfile.TemporaryDirectory(prefix="volsched-e2e-") as scratch:
        workdir = args.workdir or Path(scratch)
        workdir.mkdir(parents=True, exist_ok=True)
        result = asyncio.run(run_e2e(scenario, options, workdir))
    json.dump(result, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
