"""A fair event loop: a relist of 50,000 objects is applied page by page and never holds
the loop long enough to miss a lease renewal or a health probe (a ticker measures the
longest stall while the daemon lists everything cold)."""

from __future__ import annotations

import asyncio
import time

from tests.integration.conftest import Cluster
from tests.integration.objects import local_pv, node


async def test_a_cold_relist_of_fifty_thousand_objects_never_blocks_the_loop_for_a_second(
    cluster: Cluster,
) -> None:
    server = cluster.server
    server.load([node(f"node-{i}") for i in range(50)])
    server.load([local_pv(f"pv-{i:05d}", f"node-{i % 50}") for i in range(50_000)])
    longest = 0.0
    stop = asyncio.Event()

    def relisted() -> bool:
        daemons = cluster.live_daemons()
        return bool(daemons) and bool(daemons[0].sync.watchers) and daemons[0].sync.synced()

    async def ticker() -> None:
        """The longest gap between ticks until every kind has been listed."""
        nonlocal longest
        last = time.monotonic()
        while not stop.is_set() and not relisted():
            await asyncio.sleep(0.02)
            now = time.monotonic()
            longest = max(longest, now - last)
            last = now

    ticking = asyncio.create_task(ticker())
    try:
        daemon = await cluster.start_daemon()
        assert len(daemon.cluster.pvs) == 50_000
    finally:
        stop.set()
        await ticking
    # The emulator serves the pages on this same loop, so its work counts here too.
    assert longest < 1.0, f"the event loop stalled for {longest:.2f}s"
