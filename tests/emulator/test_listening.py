"""The emulator's listening socket takes a burst of new connections as kube-apiserver's
does: a scheduler reporting on hundreds of pods at once opens hundreds of connections.
(The kernel caps the backlog at net.core.somaxconn, 4096 since Linux 5.4.)"""

from __future__ import annotations

import socket

from volsched.emulator import ApiServer

BURST = 400


async def test_a_burst_of_connections_waits_in_the_backlog_not_for_a_retransmit(
    server: ApiServer,
) -> None:
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    opened: list[socket.socket] = []
    try:
        # The event loop is not running meanwhile, so nothing is accepted: every
        # connection must fit in the kernel's backlog. One past it has its SYN dropped
        # and its connect waits a second for the retransmit, longer than the timeout.
        for _ in range(BURST):
            opened.append(socket.create_connection((host, int(port)), timeout=0.5))
    except TimeoutError:
        pass
    finally:
        for connection in opened:
            connection.close()
    assert len(opened) == BURST, f"connection {len(opened) + 1} was not taken in 0.5 s"
