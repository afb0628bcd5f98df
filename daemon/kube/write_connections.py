"""Kept-alive HTTP/1.1 connections for the API writes sent for every pod.

Each placed pod costs two small writes, its Binding and its ``Scheduled`` Event. Through
aiohttp's client session one such request costs about twice the CPU of the socket and
TLS work it does (its request object, URL building, header merging, timers, the
response's stream reader), and on a machine where the scheduler shares cores with the
API server CPU per pod is throughput. Here a request is one buffer written to a
connection kept open, and the reply is parsed by httptools (the C parser uvicorn uses),
which also reads chunked replies and says whether the server keeps the connection.

Only requests with a body known up front and a reply read whole go this way; lists and
watches stay on aiohttp. A connection closed by the server while idle is dropped from
the pool when the close arrives; one that fails mid-request fails that request (as
aiohttp's would: a write is not sent twice behind the caller's back).
"""

from __future__ import annotations

import asyncio
import ssl
import time
from collections.abc import Iterable
from dataclasses import dataclass

import httptools

from volsched.cache.errors import ApiError

# A connection idle longer than this is closed rather than reused: servers close idle
# connections (kube-apiserver after 90 s, proxies sooner), and a request written onto
# one that is closing fails.
IDLE_SECONDS = 30.0
# Connections kept idle at most; more may be open while that many requests are.
MAX_IDLE = 32


@dataclass(frozen=True, slots=True)
class Endpoint:
    """Where the API server listens, and how to reach it."""

    host: str
    port: int
    tls: ssl.SSLContext | None
    server_hostname: str | None = None

    @property
    def authority(self) -> bytes:
        default = 443 if self.tls is not None else 80
        name = f"[{self.host}]" if ":" in self.host else self.host
        return (name if self.port == default else f"{name}:{self.port}").encode("ascii")


class _Connection(asyncio.Protocol):
    """One connection; one request at a time on it."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.parser = httptools.HttpResponseParser(self)
        self.waiter: asyncio.Future[tuple[int, bytes]] | None = None
        self.chunks: list[bytes] = []
        self.closed = False
        self.reusable = False
        self.idle_since = 0.0

    # -- asyncio.Protocol ------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if self.waiter is None:
            # Nothing was asked: a server that talks out of turn is not reused.
            self.close()
            return
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(ConnectionError(f"unreadable reply from the API server: {exc}"))
            self.close()

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._fail(ConnectionError(f"the API server closed the connection: {exc or 'EOF'}"))

    # -- httptools callbacks ---------------------------------------------------------

    def on_body(self, body: bytes) -> None:
        self.chunks.append(body)

    def on_message_complete(self) -> None:
        waiter, self.waiter = self.waiter, None
        self.reusable = self.parser.should_keep_alive()
        body = b"".join(self.chunks)
        self.chunks = []
        if waiter is not None and not waiter.done():
            waiter.set_result((self.parser.get_status_code(), body))

    # --------------------------------------------------------------------------------

    def send(self, request: bytes) -> asyncio.Future[tuple[int, bytes]]:
        assert self.transport is not None
        self.waiter = asyncio.get_running_loop().create_future()
        self.reusable = False
        self.transport.write(request)
        return self.waiter

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()

    def _fail(self, error: ConnectionError) -> None:
        waiter, self.waiter = self.waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_exception(error)


class KeepAlivePool:
    """Requests to one endpoint over connections kept open between them."""

    def __init__(self, endpoint: Endpoint) -> None:
        self.endpoint = endpoint
        self._idle: list[_Connection] = []
        self._closing = False
        # How many connections were opened: what a test of reuse reads.
        self.opened = 0

    async def request(
        self,
        method: str,
        target: str,
        headers: Iterable[tuple[str, str]],
        body: bytes | None,
        timeout_seconds: float,
    ) -> tuple[int, bytes]:
        """The reply's status and whole body; ``ApiError(0, …)`` when no reply came."""
        if self._closing:
            raise ApiError(0, f"{method} {target}: the client is closed")
        request = self._encode(method, target, headers, body)
        try:
            async with asyncio.timeout(timeout_seconds):
                connection = await self._connection()
                try:
                    status, reply = await connection.send(request)
                except BaseException:
                    connection.close()
                    raise
        except TimeoutError:
            raise ApiError(0, f"{method} {target}: timed out") from None
        except OSError as exc:  # ConnectionError from the connection, or the connect's own
            raise ApiError(0, f"{method} {target}: {exc}") from None
        self._release(connection)
        return status, reply

    async def close(self) -> None:
        self._closing = True
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()

    def _encode(
        self, method: str, target: str, headers: Iterable[tuple[str, str]], body: bytes | None
    ) -> bytes:
        try:
            lines = [
                f"{method} {target} HTTP/1.1".encode("ascii"),
                b"Host: " + self.endpoint.authority,
            ]
            for name, value in headers:
                if "\r" in value or "\n" in value or "\r" in name or "\n" in name:
                    raise ApiError(0, f"{method} {target}: a header holds a line break")
                lines.append(f"{name}: {value}".encode("latin-1"))
        except UnicodeEncodeError as exc:
            raise ApiError(0, f"{method} {target}: not sendable in HTTP/1.1: {exc}") from None
        lines.append(b"Content-Length: %d" % (len(body) if body else 0))
        return b"\r\n".join(lines) + b"\r\n\r\n" + (body or b"")

    async def _connection(self) -> _Connection:
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()
            if not connection.closed and now - connection.idle_since < IDLE_SECONDS:
                return connection
            connection.close()
        endpoint = self.endpoint
        loop = asyncio.get_running_loop()
        _, connection = await loop.create_connection(
            _Connection,
            endpoint.host,
            endpoint.port,
            ssl=endpoint.tls,
            server_hostname=(endpoint.server_hostname or endpoint.host) if endpoint.tls else None,
        )
        self.opened += 1
        return connection

    def _release(self, connection: _Connection) -> None:
        if self._closing or connection.closed or not connection.reusable:
            connection.close()
            return
        if len(self._idle) >= MAX_IDLE:
            connection.close()
            return
        connection.idle_since = time.monotonic()
        self._idle.append(connection)
