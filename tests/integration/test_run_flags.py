"""``volsched run`` configured by flags and environment alone, as a container runs it:
no config file, the address, database, scheduler name and leader election from the
command line or the environment, a flag winning over its variable."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from pathlib import Path

import aiohttp
import pytest

from tests.integration.conftest import ROOT, Cluster, eventually
from tests.integration.objects import node, pod
from volsched.emulator import write_kubeconfig


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


async def healthy(url: str) -> bool:
    # Served over HTTPS with the daemon's own self-signed pair: health needs no trust.
    try:
        async with aiohttp.ClientSession() as session, session.get(url, ssl=False) as response:
            return response.status == 200
    except aiohttp.ClientError:
        return False


async def test_flags_and_environment_configure_a_daemon_without_a_file(
    cluster: Cluster,
) -> None:
    port = free_port()
    database = cluster.workdir / "flags.db"
    workload = pod("p")
    workload["spec"]["schedulerName"] = "from-environment"
    cluster.server.load([node("node-1"), workload])
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "volsched",
        "run",
        "--kubeconfig",
        str(cluster.kubeconfig),
        "--http-address",
        f"127.0.0.1:{port}",
        "--database",
        str(database),
        "--leader-elect=false",
        cwd=str(ROOT),
        env={
            **os.environ,
            "VOLSCHED_SCHEDULER_NAME": "from-environment",
            # The flag wins over its variable.
            "VOLSCHED_HTTP_ADDRESS": "127.0.0.1:1",
        },
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        await eventually(lambda: cluster.node_of("p") == "node-1", timeout=30, what="pod placed")
        assert await healthy(f"https://127.0.0.1:{port}/healthz")
        assert database.exists()
        # Leader election is off: no Lease was taken.
        assert cluster.server.get("Lease", "volsched", "kube-system") is None
    finally:
        process.terminate()
        await asyncio.wait_for(process.wait(), timeout=15)
    assert process.stderr is not None
    log = (await process.stderr.read()).decode()
    assert "Traceback" not in log
    # Where the start went, from the process starting: imports, connecting, the database,
    # catching up, ready; then the first binding.
    (startup,) = [line for line in log.splitlines() if "start-up: imported" in line]
    assert all(
        f"{milestone} " in startup
        for milestone in ("imported", "connected", "database_open", "caught_up", "ready")
    )
    assert "first pod bound" in log


async def test_a_bad_flag_value_is_one_line(cluster: Cluster) -> None:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "volsched",
        "run",
        "--kubeconfig",
        str(cluster.kubeconfig),
        "--leader-elect=maybe",
        cwd=str(ROOT),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    _, stderr = await asyncio.wait_for(process.communicate(), timeout=30)
    assert process.returncode == 2
    lines = stderr.decode().strip().splitlines()
    assert lines == ["volsched: --leader-elect: must be true or false, not 'maybe'"]


async def _stop_a_cold_start(tmp_path: Path, delay: float, still_trying: bool) -> None:
    """Start ``volsched run`` against an address nothing answers at, SIGTERM it after
    ``delay`` seconds, and require a clean stop: status 0, no traceback."""
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", f"http://127.0.0.1:{free_port()}")
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "volsched",
        "run",
        "--kubeconfig",
        str(kubeconfig),
        "--http-address",
        f"127.0.0.1:{free_port()}",
        "--database",
        str(tmp_path / "volsched.db"),
        "--leader-elect=false",
        cwd=str(ROOT),
        stdout=asyncio.subprocess.DEVNULL,
        stderr=asyncio.subprocess.PIPE,
    )
    try:
        await asyncio.sleep(delay)
        if still_trying:
            assert process.returncode is None, "it should still be trying"
        process.send_signal(signal.SIGTERM)
        code = await asyncio.wait_for(process.wait(), timeout=15)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    assert process.stderr is not None
    stderr = (await process.stderr.read()).decode()
    assert code == 0, stderr
    assert "Traceback" not in stderr


async def test_sigterm_stops_a_cold_start_against_an_unreachable_api_server(
    tmp_path: Path,
) -> None:
    """Nothing answers at the kubeconfig's address: the first list never comes, and the
    daemon must still stop when told to."""
    await _stop_a_cold_start(tmp_path, 3, still_trying=True)


@pytest.mark.parametrize("delay", [0.4, 1.5])
async def test_sigterm_while_the_daemon_is_still_starting_exits_0(
    tmp_path: Path, delay: float
) -> None:
    """A stop asked for during the imports or the first connection is honoured with
    status 0, never by the default action (-15): the handler is installed first thing
    (once the interpreter itself runs: a signal during its own start-up cannot be
    caught)."""
    await _stop_a_cold_start(tmp_path, delay, still_trying=False)
