"""The daemon against the embedded cluster: an emulated API server over real HTTP, the
real daemon (in-process or as a subprocess) and a real SQLite file."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.emulator.support import eventually as _eventually
from volsched.daemon.config.settings import (
    AuthSettings,
    DatabaseSettings,
    HttpSettings,
    LeaderElectionSettings,
    Settings,
    default_identity,
)
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.runtime.app import Daemon, DaemonOptions, open_daemon
from volsched.daemon.watch.watching import WatchSettings
from volsched.emulator import ApiServer, ControllerSettings, write_kubeconfig

ROOT = Path(__file__).resolve().parents[2]
Raw = dict[str, Any]
# Leader election as deployed, with timings short enough for tests.
SHORT_LEASE = LeaderElectionSettings(
    lease_duration_seconds=1.5, renew_deadline_seconds=1.0, retry_period_seconds=0.2
)
FAST = ControllerSettings(
    pv_bind_delay_seconds=0.05, provision_delay_seconds=0.05, replica_sync_delay_seconds=0.05
)


@pytest.fixture(autouse=True)
async def no_leaked_tasks() -> AsyncIterator[None]:
    yield
    await asyncio.sleep(0)
    current = asyncio.current_task()
    leaked = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
    assert not leaked, f"tasks left running: {leaked}"


def crds() -> list[Raw]:
    objects = []
    for path in sorted((ROOT / "deploy" / "crds").glob("*.yaml")):
        objects.extend(doc for doc in yaml.safe_load_all(path.read_text()) if doc)
    return objects


async def eventually(check: Callable[[], Any], timeout: float = 10.0, what: str = "") -> Any:
    """The emulator tests' poller, with a longer default: a daemon is in the loop."""
    return await _eventually(check, timeout, what)


class Cluster:
    """The emulator plus what it takes to run daemons against it."""

    def __init__(self, server: ApiServer, workdir: Path) -> None:
        self.server = server
        self.workdir = workdir
        self.kubeconfig = write_kubeconfig(workdir / "kubeconfig", server.url)
        self.db_path = workdir / "volsched.db"
        self._daemons: list[tuple[Daemon, KubeClient]] = []

    def settings(self, **changes: Any) -> Settings:
        base = Settings(
            database=DatabaseSettings(str(self.db_path)),
            http=HttpSettings("127.0.0.1:0", AuthSettings(enabled=False)),
            bind_timeout_seconds=20,
            # Each daemon is its own candidate, as separate replicas are.
            leader_election=replace(SHORT_LEASE, identity=default_identity()),
        )
        return replace(base, **changes)

    async def start_daemon(
        self, settings: Settings | None = None, lead: bool = True, **watch: Any
    ) -> Daemon:
        client = await KubeClient.connect(str(self.kubeconfig))
        options = DaemonOptions(
            # ``watch`` overrides WatchSettings' fields (a test's short watch timeouts).
            watch=WatchSettings(
                **{"backoff_initial_seconds": 0.05, "backoff_max_seconds": 0.5, **watch}
            ),
            grace_seconds=5,
            seed=1,
        )
        daemon = await open_daemon(settings or self.settings(), client, options)
        self._daemons.append((daemon, client))
        await daemon.start()
        if lead:
            await asyncio.wait_for(daemon.leading.wait(), timeout=10)
        return daemon

    def live_daemons(self) -> list[Daemon]:
        """The daemons started (or starting) and not stopped yet."""
        return [daemon for daemon, _ in self._daemons]

    async def stop_daemon(self, daemon: Daemon) -> None:
        for index, (running, client) in enumerate(self._daemons):
            if running is daemon:
                await daemon.stop()
                await client.close()
                del self._daemons[index]
                return

    async def close(self) -> None:
        for daemon, client in list(self._daemons):
            await daemon.stop()
            await client.close()
        self._daemons.clear()

    def pod(self, name: str, namespace: str = "default") -> Raw:
        found = self.server.get("Pod", name, namespace)
        assert found is not None, f"pod {namespace}/{name} not found"
        return found

    def node_of(self, name: str, namespace: str = "default") -> str | None:
        found = self.server.get("Pod", name, namespace)
        return None if found is None else (found.get("spec") or {}).get("nodeName")

    def selected_node(self, claim: str, namespace: str = "default") -> str | None:
        """The node a binding cycle asked the claim's provisioner for, if any."""
        found = self.server.get("PersistentVolumeClaim", claim, namespace) or {}
        annotations = found.get("metadata", {}).get("annotations") or {}
        return annotations.get("volume.kubernetes.io/selected-node")

    def events_for(self, name: str, namespace: str = "default") -> list[Raw]:
        """The events.k8s.io/v1 Events about the pod ``name`` (its ``note`` is the message)."""
        return [
            e
            for e in self.server.list("Event", namespace, api_version="events.k8s.io/v1")
            if (e.get("regarding") or {}).get("name") == name
        ]

    async def kill_daemon_once(
        self, objects: list[Raw], condition: Callable[[], Any], what: str
    ) -> None:
        """Run the daemon as a process, load ``objects``, and SIGKILL it as soon as
        ``condition`` holds (a crash at a chosen point of its work)."""
        process = await self.subprocess_daemon()
        try:
            self.server.load(objects)
            await eventually(condition, timeout=20, what=what)
            process.send_signal(signal.SIGKILL)
            await process.wait()
        finally:
            if process.returncode is None:
                process.kill()
                await process.wait()

    async def subprocess_daemon(
        self, *extra: str, env: dict[str, str] | None = None
    ) -> asyncio.subprocess.Process:
        config = self.workdir / "config.yaml"
        config.write_text(
            yaml.safe_dump(
                {
                    "database": {"path": str(self.db_path)},
                    "http": {"address": "127.0.0.1:0", "authentication": {"enabled": False}},
                    "bindTimeoutSeconds": 30,
                    "leaderElection": {
                        "leaseDurationSeconds": SHORT_LEASE.lease_duration_seconds,
                        "renewDeadlineSeconds": SHORT_LEASE.renew_deadline_seconds,
                        "retryPeriodSeconds": SHORT_LEASE.retry_period_seconds,
                    },
                }
            )
        )
        return await asyncio.create_subprocess_exec(
            sys.executable,
            "-m",
            "volsched.daemon.cli.main",
            "run",
            "--kubeconfig",
            str(self.kubeconfig),
            "--config",
            str(config),
            *extra,
            cwd=str(ROOT),
            env={**os.environ, **(env or {})},
            stdout=asyncio.subprocess.DEVNULL,
            stderr=asyncio.subprocess.PIPE,
        )


@pytest.fixture
def controllers() -> ControllerSettings:
    return FAST


@pytest.fixture
async def cluster(tmp_path: Path, controllers: ControllerSettings) -> AsyncIterator[Cluster]:
    server = ApiServer(controllers=controllers, bookmark_interval_seconds=0.5)
    await server.start()
    server.load(crds())
    harness = Cluster(server, tmp_path)
    try:
        yield harness
    finally:
        await harness.close()
        await server.stop()
