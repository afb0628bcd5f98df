"""Running the daemon as a service: until SIGTERM, with systemd's readiness and watchdog."""

from __future__ import annotations

import asyncio
import logging

from volsched.daemon.runtime.app import Daemon
from volsched.daemon.runtime.sd_notify import Notifier

log = logging.getLogger("volsched")


async def _watchdog(daemon: Daemon, notifier: Notifier, period: float) -> None:
    """Ping systemd's watchdog only while every liveness check passes, so a stuck loop
    gets the service restarted."""
    checks = daemon.health().live
    while True:
        if all(check.probe() is None for check in checks):
            notifier.watchdog()
        await asyncio.sleep(period)


async def run_until_signalled(
    daemon: Daemon, stop: asyncio.Event, notifier: Notifier | None = None
) -> None:
    # SIGTERM counts in every phase: a cold start against an API server that cannot be
    # reached waits for its first list forever, and must still stop when told to.
    starting = asyncio.create_task(daemon.start(), name="start")
    stopping = asyncio.create_task(stop.wait(), name="stop signal")
    await asyncio.wait({starting, stopping}, return_when=asyncio.FIRST_COMPLETED)
    if not starting.done():
        log.info("stopped while starting")
        starting.cancel()
        await asyncio.gather(starting, return_exceptions=True)
        await daemon.stop()
        return
    stopping.cancel()
    await asyncio.gather(stopping, return_exceptions=True)
    starting.result()
    log.info(
        "volsched ready: scheduler %r, http on %s",
        daemon.settings.scheduler_name,
        daemon.settings.http.address,
    )
    watchdog: asyncio.Task[None] | None = None
    if notifier is not None:
        notifier.ready("caches warm; scheduling as leader or waiting as standby")
        period = notifier.watchdog_ping_seconds()
        if period is not None:
            watchdog = asyncio.create_task(_watchdog(daemon, notifier, period), name="watchdog")
    await stop.wait()
    log.info("shutting down")
    if notifier is not None:
        notifier.stopping("finishing binding cycles")
    if watchdog is not None:
        watchdog.cancel()
        await asyncio.gather(watchdog, return_exceptions=True)
    await daemon.stop()
