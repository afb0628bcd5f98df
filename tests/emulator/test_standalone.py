"""``python -m volsched.emulator`` serves a loaded file until interrupted."""

from __future__ import annotations

import asyncio
import signal
import sys
from pathlib import Path

import aiohttp

ROOT = Path(__file__).resolve().parents[2]


async def test_python_m_emulator_serves_the_example_cluster(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "volsched.emulator",
        "--port",
        "0",
        "--load",
        str(ROOT / "examples" / "cluster.yaml"),
        "--kubeconfig",
        str(kubeconfig),
        cwd=ROOT,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    try:
        assert process.stdout is not None
        line = (await asyncio.wait_for(process.stdout.readline(), 20)).decode()
        url = line.split("serving on ", 1)[1].split()[0]
        assert url in kubeconfig.read_text()
        async with aiohttp.ClientSession(url) as session, session.get("/api/v1/nodes") as response:
            nodes = await response.json()
        assert {n["metadata"]["name"] for n in nodes["items"]} == {"node-a1", "node-b1", "node-b2"}
    finally:
        process.send_signal(signal.SIGINT)
        assert await asyncio.wait_for(process.wait(), 10) == 0
