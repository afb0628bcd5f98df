"""TCP keepalive for the long-lived connections of watches.

A watch waits, often for minutes, for a byte that may never come: a kind nobody writes
sends nothing until the server ends the stream. If the peer is gone meanwhile (its host
down, the network cut), nothing arrives to say so — not even the end of the stream.
Keepalive probes make the kernel find out and reset the connection, which the watch
then sees as an error. client-go gets the same from its HTTP/2 health check (a ping
after 30 s without a frame, which must be answered within 15 s); aiohttp speaks HTTP/1.1
and leaves keepalive off on client connections.
"""

from __future__ import annotations

import socket
from typing import Any

# TCP keepalive on a watch's connection: the first probe after this long without a byte,
# then one every interval; that many unanswered, and the kernel resets the connection
# (about 45 s from the last byte).
KEEPALIVE_IDLE_SECONDS = 30
KEEPALIVE_INTERVAL_SECONDS = 5
KEEPALIVE_PROBES = 3


def keep_alive(sock: Any) -> bool:
    """Turn on TCP keepalive with the timings above; False when the socket or the
    platform does not allow it (the watch's own deadline still applies)."""
    options = [(socket.SOL_SOCKET, socket.SO_KEEPALIVE, 1)]
    for name, value in (
        ("TCP_KEEPIDLE", KEEPALIVE_IDLE_SECONDS),
        ("TCP_KEEPINTVL", KEEPALIVE_INTERVAL_SECONDS),
        ("TCP_KEEPCNT", KEEPALIVE_PROBES),
    ):
        if hasattr(socket, name):
            options.append((socket.IPPROTO_TCP, getattr(socket, name), value))
    try:
        for level, option, value in options:
            sock.setsockopt(level, option, value)
    except (OSError, AttributeError):
        return False
    return True
