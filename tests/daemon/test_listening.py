"""The bounded listener on its own: connections counted from accept, the one idle the
longest closed to make room, a busy one kept, and the limit lowered to what the
descriptor limit leaves room for."""

from __future__ import annotations

import asyncio
import logging
import resource

import pytest

from volsched.daemon.http.listening import BoundedListener, ConnectionLimits, listening_sockets
from volsched.daemon.http.server import descriptor_bound


class Echo(asyncio.Protocol):
    """Answers each request line with ``ok``; ``busy`` marks it as serving one, as
    aiohttp's handler does while a request is in progress."""

    def __init__(self) -> None:
        self._request_in_progress = False
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if b"busy" in data:
            self._request_in_progress = True
        if self.transport is not None and b"\n\n" in data:
            self.transport.write(b"ok")


async def listener(limits: ConnectionLimits) -> tuple[BoundedListener, int]:
    sockets = await listening_sockets("127.0.0.1", 0)
    server = BoundedListener(sockets, Echo, None, limits)
    await server.start_serving()
    return server, sockets[0].getsockname()[1]


async def closed(reader: asyncio.StreamReader) -> bool:
    try:
        return await asyncio.wait_for(reader.read(), 1) == b""
    except ConnectionError:
        return True


async def test_the_connection_idle_the_longest_makes_room() -> None:
    server, port = await listener(ConnectionLimits(max_connections=4))
    try:
        streams = []
        for _ in range(4):
            streams.append(await asyncio.open_connection("127.0.0.1", port))
            await asyncio.sleep(0.02)
        busy_reader, busy_writer = streams[0]
        busy_writer.write(b"busy\n\n")
        assert await busy_reader.readexactly(2) == b"ok"
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"probe\n\n")
        assert await asyncio.wait_for(reader.readexactly(2), 1) == b"ok"
        # The oldest idle one (the second) went; the busy one, older still, stays.
        assert await closed(streams[1][0])
        assert len(server.open) == 4
        busy_writer.write(b"again\n\n")
        assert await busy_reader.readexactly(2) == b"ok"
    finally:
        for _, stream_writer in [*streams, (reader, writer)]:
            stream_writer.close()
        server.close()
        await server.wait_closed()


async def test_every_connection_busy_waits_in_the_backlog() -> None:
    server, port = await listener(ConnectionLimits(max_connections=2))
    try:
        streams = [await asyncio.open_connection("127.0.0.1", port) for _ in range(2)]
        for reader, writer in streams:
            writer.write(b"busy\n\n")
            assert await reader.readexactly(2) == b"ok"
        waiting_reader, waiting_writer = await asyncio.open_connection("127.0.0.1", port)
        waiting_writer.write(b"probe\n\n")
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(waiting_reader.readexactly(2), 0.3)
        streams[0][1].close()  # one closes: the waiting one is taken in
        assert await asyncio.wait_for(waiting_reader.readexactly(2), 1) == b"ok"
    finally:
        for _, writer in [*streams, (waiting_reader, waiting_writer)]:
            writer.close()
        server.close()
        await server.wait_closed()


async def test_headers_not_sent_in_time_close_the_connection() -> None:
    server, port = await listener(ConnectionLimits(header_timeout_seconds=0.2))
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"GET / HTTP/1.1\r\n")
        assert await closed(reader)
        assert not server.open
    finally:
        writer.close()
        server.close()
        await server.wait_closed()


def test_the_limit_leaves_a_quarter_of_the_descriptors(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setattr(resource, "getrlimit", lambda _: (1024, 524288))
    assert descriptor_bound(ConnectionLimits(max_connections=256)).max_connections == 256
    with caplog.at_level(logging.WARNING, logger="volsched.http"):
        assert descriptor_bound(ConnectionLimits(max_connections=4000)).max_connections == 768
    assert caplog.messages == [
        "http.maxConnections is 4000 but the process may open 1024 descriptors: "
        "serving at most 768 connections"
    ]
