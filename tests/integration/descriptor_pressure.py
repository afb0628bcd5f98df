"""The daemon's HTTP server with its descriptors nearly used up by something else, run
as its own process (``python -m tests.integration.descriptor_pressure FREE``): a
1,024 descriptor limit, the health endpoints served by ``serve``, then every descriptor
but FREE taken by open files. Prints the port, then serves until killed; logs go to
stderr.
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
import sys

from volsched.daemon.http.server import Check, HealthChecks, bound_port, health_app, serve

LIMIT = 1024


async def serve_pressed(free: int) -> None:
    checks = HealthChecks([Check("ping", lambda: None)], [], lambda: b"")
    runner = await serve(health_app(checks), "127.0.0.1:0")
    taken = []
    while True:
        try:
            taken.append(os.open(os.devnull, os.O_RDONLY))
        except OSError:
            break
    for descriptor in taken[:free]:
        os.close(descriptor)
    print(bound_port(runner), flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        await runner.cleanup()


if __name__ == "__main__":
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, hard))
    logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(levelname)s %(message)s")
    asyncio.run(serve_pressed(int(sys.argv[1])))
