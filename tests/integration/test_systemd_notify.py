"""Under systemd: READY once the cache is warm, WATCHDOG pings while the loop is healthy,
STOPPING on SIGTERM — received on a notify socket the test binds."""

from __future__ import annotations

import asyncio
import signal
import socket

from tests.integration.conftest import Cluster
from tests.integration.objects import node


async def test_ready_watchdog_and_stopping(cluster: Cluster) -> None:
    cluster.server.load([node("node-1")])
    path = cluster.workdir / "notify.sock"
    receiver = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    receiver.bind(str(path))
    receiver.setblocking(False)
    loop = asyncio.get_running_loop()
    messages: list[str] = []

    async def receive_until(needle: str, timeout: float) -> None:
        deadline = loop.time() + timeout
        while not any(needle in m for m in messages):
            remaining = deadline - loop.time()
            assert remaining > 0, f"no {needle!r} in {messages}"
            data = await asyncio.wait_for(loop.sock_recv(receiver, 4096), remaining)
            messages.append(data.decode())

    process = await cluster.subprocess_daemon(
        env={"NOTIFY_SOCKET": str(path), "WATCHDOG_USEC": "400000"}
    )
    try:
        await receive_until("READY=1", 20)
        await receive_until("WATCHDOG=1", 5)
        process.send_signal(signal.SIGTERM)
        await receive_until("STOPPING=1", 10)
        assert await asyncio.wait_for(process.wait(), 15) == 0
    finally:
        receiver.close()
        if process.returncode is None:
            process.kill()
            await process.wait()
    ready = next(m for m in messages if "READY=1" in m)
    assert "STATUS=" in ready
