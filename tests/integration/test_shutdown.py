"""SIGTERM ends the daemon within seconds whatever it is doing: bindings still waiting
on storage are left to recovery (their intents are in the journal and in the objects),
not undone, and the next start recovers them; a database locked by another process or a
full disk does not hold the exit either."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import claim, node, pod, storage_class
from tests.store.small_disk import small_disk
from volsched.emulator import ControllerSettings

STUCK = "stuck.example.com"
LOCK_AND_WAIT = """
import sqlite3, sys, time
connection = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=30)
connection.execute("BEGIN EXCLUSIVE")
print("locked", flush=True)
time.sleep(60)
"""


async def leading(cluster: Cluster) -> None:
    await eventually(
        lambda: (
            (cluster.server.get("Lease", "volsched", "kube-system") or {})
            .get("spec", {})
            .get("holderIdentity")
        ),
        timeout=30,
        what="the daemon leading",
    )


async def kill(process: asyncio.subprocess.Process) -> None:
    if process.returncode is None:
        process.kill()
        await process.wait()


async def stop_and_check(process: asyncio.subprocess.Process) -> str:
    """SIGTERM; the daemon exits 0, in under 10 s, without a traceback. Its stderr."""
    try:
        started = time.monotonic()
        process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), timeout=20)
        took = time.monotonic() - started
    finally:
        await kill(process)
    assert process.stderr is not None
    stderr = (await process.stderr.read()).decode()
    assert code == 0, stderr
    assert took < 10, stderr
    assert "Traceback" not in stderr
    return stderr


@pytest.mark.parametrize(
    "controllers", [ControllerSettings(pv_bind_delay_seconds=0.05, silent_provisioners=(STUCK,))]
)
async def test_sigterm_with_bindings_waiting_exits_within_seconds(
    cluster: Cluster, controllers: ControllerSettings
) -> None:
    cluster.server.load(
        [node("node-1"), storage_class("stuck", provisioner=STUCK)]
        + [claim(f"c{i}", "stuck") for i in range(5)]
        + [pod(f"p{i}", (f"c{i}",)) for i in range(5)]
    )
    process = await cluster.subprocess_daemon()
    try:
        await eventually(
            lambda: all(cluster.selected_node(f"c{i}") for i in range(5)),
            timeout=30,
            what="five bindings waiting on their provisioner",
        )
    except BaseException:
        await kill(process)
        raise
    stderr = await stop_and_check(process)
    # Nothing was undone on the way out: recovery's to resolve.
    assert all(cluster.selected_node(f"c{i}") for i in range(5))
    assert "left to recovery by shutdown" in stderr

    # The next start recovers every open intent (the provisioner never answered, so
    # they are rolled back) before it decides anything, and the pods are decided again.
    daemon = await cluster.start_daemon()
    assert daemon.recovered is not None and daemon.recovered.failed == 0
    await eventually(
        lambda: all(cluster.selected_node(f"c{i}") for i in range(5)),
        what="the pods decided again",
    )


async def test_sigterm_with_the_database_locked_elsewhere_exits_within_seconds(
    cluster: Cluster,
) -> None:
    """Another process holds the database's write lock (a backup, an operator's sqlite3
    shell): the last flush cannot happen, and the daemon still goes, saying so."""
    cluster.server.load([node("node-1")])
    process = await cluster.subprocess_daemon()
    locker: subprocess.Popen[str] | None = None
    try:
        await leading(cluster)
        cluster.server.load([pod(f"p{i}") for i in range(20)])
        locker = subprocess.Popen(
            [sys.executable, "-c", LOCK_AND_WAIT, str(cluster.db_path)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert locker.stdout is not None and locker.stdout.readline().strip() == "locked"
        await stop_and_check(process)
    finally:
        await kill(process)
        if locker is not None:
            locker.kill()
            locker.wait()
            assert locker.stdout is not None
            locker.stdout.close()


async def test_sigterm_with_the_disk_full_exits_cleanly(cluster: Cluster, tmp_path: Path) -> None:
    """The last flush finds no room: the daemon says so and exits 0, as any other stop
    (what was not written is relisted at the next start)."""
    with small_disk(tmp_path / "disk") as disk:
        cluster.db_path = disk.path / "volsched.db"
        cluster.server.load([node("node-1")])
        process = await cluster.subprocess_daemon()
        try:
            await leading(cluster)
            disk.fill()
            cluster.server.load([pod(f"p{i}") for i in range(20)])
        except BaseException:
            await kill(process)
            raise
        await stop_and_check(process)
