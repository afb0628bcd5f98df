"""Accepting connections with a bound, so a flood of them cannot take every descriptor.

asyncio's own server accepts whatever the kernel has queued and counts nothing until a
connection reaches the application, which for TLS is after the handshake: 3,000 idle
sockets took every descriptor of a process allowed 1,024, ``accept()`` then failed with
EMFILE and asyncio logged a traceback for each attempt, and probes timed out. Here the
listening sockets are read by volsched itself, and a connection is counted from the
``accept()`` that made its descriptor until that descriptor is closed:

- at most ``max_connections`` are open (and at most ``ROOM_BATCH`` more whose close has
  not landed yet); at the limit, when a connection waits in the kernel's backlog, the one
  idle the longest (still in its TLS handshake, still sending its headers, or between
  requests) is closed to make room, so the kubelet's next probe gets in; when every one
  is serving a request, newcomers wait in the backlog until one closes or falls idle;
- the TLS handshake and the first request's headers must arrive within
  ``header_timeout_seconds`` of the accept (later requests: aiohttp's keep-alive timeout);
- an ``accept()`` that fails (out of descriptors because of something else) closes a
  batch of idle connections to free descriptors and accepts again as they close (half a
  second later if none could be closed); it is logged once per interval with a count,
  not once per attempt.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import select
import socket
import ssl
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from itertools import islice
from typing import Any

log = logging.getLogger("volsched.http")

ACCEPT_BATCH = 64
ROOM_BATCH = 16
ACCEPT_RETRY_SECONDS = 0.5
BUSY_RETRY_SECONDS = 0.1
CLOSE_GRACE_SECONDS = 5.0
REPORT_INTERVAL_SECONDS = 10.0
SSL_SHUTDOWN_SECONDS = 5.0
# The kernel's answers to accept() that are about the one connection, not the process.
_TRANSIENT = {errno.ECONNABORTED, errno.EPROTO, errno.EPERM, errno.ENETDOWN, errno.EHOSTUNREACH}


@dataclass(frozen=True, slots=True)
class ConnectionLimits:
    max_connections: int = 256
    idle_timeout_seconds: float = 30.0
    header_timeout_seconds: float = 10.0


class _Tally:
    """Events counted and logged at most once per interval, with the count since."""

    def __init__(self, loop: asyncio.AbstractEventLoop, message: str) -> None:
        self._loop = loop
        self._message = message
        self._count = 0
        self._next = 0.0

    def add(self, count: int, *args: Any) -> None:
        self._count += count
        now = self._loop.time()
        if now >= self._next:
            log.warning(self._message, self._count, *args)
            self._count = 0
            self._next = now + REPORT_INTERVAL_SECONDS


class _Connection(asyncio.Protocol):
    """One accepted connection, in front of the HTTP protocol that serves it."""

    def __init__(self, listener: BoundedListener, inner: asyncio.Protocol) -> None:
        self.listener = listener
        self.inner = inner
        self.transport: asyncio.BaseTransport | None = None
        self.establishing: asyncio.Task[None] | None = None
        self.headers_seen = False
        self._tail = b""
        loop = listener.loop
        self._deadline: asyncio.TimerHandle | None = loop.call_later(
            listener.limits.header_timeout_seconds, self._headers_late
        )

    def busy(self) -> bool:
        """Serving a request (aiohttp's own flag); anything else may be closed."""
        return self.headers_seen and bool(getattr(self.inner, "_request_in_progress", False))

    def close(self) -> None:
        """Close at once: the descriptor is freed in the next turn of the loop."""
        if self.transport is not None:
            if isinstance(self.transport, asyncio.Transport):
                self.transport.abort()
            else:
                self.transport.close()
        elif self.establishing is not None:
            self.establishing.cancel()

    def _headers_late(self) -> None:
        self._deadline = None
        if not self.headers_seen:
            self.close()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport
        self.inner.connection_made(transport)

    def data_received(self, data: bytes) -> None:
        self.listener.touch(self)
        if not self.headers_seen:
            window = self._tail + data
            # The blank line that ends a request's headers (CRLF, or a bare LF).
            if b"\n\r\n" in window or b"\n\n" in window:
                self.headers_seen = True
                if self._deadline is not None:
                    self._deadline.cancel()
                    self._deadline = None
            self._tail = window[-3:]
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()

    def connection_lost(self, exc: Exception | None) -> None:
        try:
            self.inner.connection_lost(exc)
        finally:
            self.released()

    def released(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        self.listener.release(self)


class BoundedListener(asyncio.AbstractServer):
    """Listening sockets read by volsched, with every connection counted."""

    def __init__(
        self,
        sockets: list[socket.socket],
        protocol_factory: Callable[[], asyncio.Protocol],
        ssl_context: ssl.SSLContext | None,
        limits: ConnectionLimits,
    ) -> None:
        self.loop = asyncio.get_running_loop()
        self._sockets = sockets
        self._factory = protocol_factory
        self._ssl = ssl_context
        self.limits = limits
        # Open connections, the least recently active first, and those closed to make
        # room whose descriptors are not closed yet (since when): at most ROOM_BATCH.
        self.open: OrderedDict[_Connection, None] = OrderedDict()
        self._closing: dict[_Connection, float] = {}
        self._reading = False
        self._retry: asyncio.TimerHandle | None = None
        self._serving = False
        self._full = _Tally(
            self.loop,
            f"%d idle connection(s) closed since last said, to stay within "
            f"{limits.max_connections} open connections (http.maxConnections)",
        )
        self._accept_failed = _Tally(
            self.loop,
            "accepting a connection failed %d time(s) since last said: %s; "
            "closing idle connections to free descriptors",
        )

    # -- asyncio.AbstractServer ---------------------------------------------------------

    @property
    def sockets(self) -> tuple[socket.socket, ...]:
        return tuple(self._sockets)

    def get_loop(self) -> asyncio.AbstractEventLoop:
        return self.loop

    def is_serving(self) -> bool:
        return self._serving

    async def start_serving(self) -> None:
        self._serving = True
        self._read(True)

    async def serve_forever(self) -> None:
        await self.start_serving()
        await asyncio.Future()

    def close(self) -> None:
        self._serving = False
        self._pause()
        for sock in self._sockets:
            sock.close()
        for connection in [*self.open, *self._closing]:
            if connection.establishing is not None:
                connection.establishing.cancel()

    async def wait_closed(self) -> None:
        connections = [*self.open, *self._closing]
        pending = [c.establishing for c in connections if c.establishing is not None]
        await asyncio.gather(*pending, return_exceptions=True)

    # -- accepting ----------------------------------------------------------------------

    def _read(self, on: bool) -> None:
        if on == self._reading or (on and not self._serving):
            return
        self._reading = on
        for sock in self._sockets:
            if on:
                self.loop.add_reader(sock.fileno(), self._accept, sock)
            else:
                self.loop.remove_reader(sock.fileno())

    def _pause(self, retry_seconds: float | None = None) -> None:
        """Stop accepting until a connection is released, or ``retry_seconds`` pass."""
        self._read(False)
        if self._retry is not None:
            self._retry.cancel()
            self._retry = None
        if retry_seconds is not None:
            self._retry = self.loop.call_later(retry_seconds, self._read, True)

    def _closes_in_flight(self) -> int:
        """Connections closed to make room whose descriptors are not closed yet."""
        now = self.loop.time()
        # A close lands within a turn or two of the loop; one that never reports back
        # must not hold its place for ever.
        for connection, since in list(self._closing.items()):
            if now - since > CLOSE_GRACE_SECONDS:
                del self._closing[connection]
        return len(self._closing)

    def _waiting(self, listening: socket.socket) -> bool:
        """Whether a connection waits in the kernel's backlog to be accepted."""
        poller = select.poll()
        poller.register(listening, select.POLLIN)
        return bool(poller.poll(0))

    def _make_room(self, count: int) -> int:
        """Close up to ``count`` connections, idle the longest first; how many."""
        idle = list(islice((c for c in self.open if not c.busy()), count))
        for connection in idle:
            del self.open[connection]
            self._closing[connection] = self.loop.time()
            connection.close()
        return len(idle)

    def _accept(self, listening: socket.socket) -> None:
        for _ in range(ACCEPT_BATCH):
            if len(self.open) >= self.limits.max_connections:
                if not self._waiting(listening):
                    return  # nobody to make room for
                if self._closes_in_flight() >= ROOM_BATCH:
                    self._pause()  # until those land
                    return
                if not self._make_room(1):
                    # Every one is serving a request: newcomers wait in the kernel's
                    # backlog until one closes or, looked at shortly, is idle.
                    self._pause(BUSY_RETRY_SECONDS)
                    return
                self._full.add(1)
            try:
                sock, _ = listening.accept()
            except (BlockingIOError, InterruptedError):
                return
            except OSError as exc:
                if exc.errno in _TRANSIENT:
                    continue
                # Out of descriptors: free a batch, so the backlog (where the next probe
                # waits) drains at once, and resume as the closes land (release);
                # if nothing can be closed, try again a while later.
                self._accept_failed.add(1, exc.strerror or exc)
                freed = self._closing or self._make_room(ROOM_BATCH)
                self._pause(None if freed else ACCEPT_RETRY_SECONDS)
                return
            sock.setblocking(False)
            connection = _Connection(self, self._factory())
            self.open[connection] = None
            task = self.loop.create_task(self._establish(sock, connection))
            task.add_done_callback(partial(self._established, sock, connection))
            connection.establishing = task

    async def _establish(self, sock: socket.socket, connection: _Connection) -> None:
        await self.loop.connect_accepted_socket(
            lambda: connection,
            sock,
            ssl=self._ssl,
            ssl_handshake_timeout=self.limits.header_timeout_seconds if self._ssl else None,
            ssl_shutdown_timeout=SSL_SHUTDOWN_SECONDS if self._ssl else None,
        )

    def _established(
        self, sock: socket.socket, connection: _Connection, task: asyncio.Task[None]
    ) -> None:
        connection.establishing = None
        failure = asyncio.CancelledError() if task.cancelled() else task.exception()
        if failure is None:
            return
        # A failed or timed-out handshake, or closed to make room (perhaps before it
        # started): the socket is closed here unless a transport took it over.
        log.debug("connection dropped before it was established: %r", failure)
        if connection.transport is None:
            sock.close()
            connection.released()

    def touch(self, connection: _Connection) -> None:
        if connection in self.open:
            self.open.move_to_end(connection)

    def release(self, connection: _Connection) -> None:
        self.open.pop(connection, None)
        self._closing.pop(connection, None)
        self._read(True)


async def listening_sockets(host: str, port: int, backlog: int = 128) -> list[socket.socket]:
    """Bound, listening, non-blocking sockets for every address of ``host``."""
    loop = asyncio.get_running_loop()
    infos = await loop.getaddrinfo(
        host or None, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE
    )
    sockets: list[socket.socket] = []
    try:
        for family, kind, proto, _, address in dict.fromkeys(infos):
            sock = socket.socket(family, kind, proto)
            sockets.append(sock)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            if family == socket.AF_INET6:
                sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 1)
            sock.bind(address)
            sock.listen(backlog)
            sock.setblocking(False)
    except OSError:
        for sock in sockets:
            sock.close()
        raise
    return sockets
