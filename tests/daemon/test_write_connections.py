"""Writes over kept-alive connections: one connection for a run of writes, every way a
server may frame or end a reply read right, and no reply turned into an ApiError.

The server here is a plain asyncio TLS server the test controls byte for byte (the CA
and serving certificate made as the emulator makes them), so chunked replies, closes
and silences happen exactly where each test puts them.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest

from volsched.cache.errors import ApiError
from volsched.daemon.kube import sending
from volsched.daemon.kube.connection import Connection
from volsched.daemon.kube.credentials import Credentials
from volsched.daemon.kube.write_connections import Endpoint, KeepAlivePool
from volsched.emulator.certificates import make_serving_certificates

Reply = Callable[[bytes, bytes], bytes | None]


def plain(status: int = 201, extra: str = "") -> Reply:
    def reply(head: bytes, body: bytes) -> bytes:
        text = b'{"seen":%d,"path":"%s"}' % (len(body), head.split(b" ")[1])
        return (
            f"HTTP/1.1 {status} X\r\nContent-Type: application/json\r\n{extra}"
            f"Content-Length: {len(text)}\r\n\r\n"
        ).encode() + text

    return reply


@dataclass
class Server:
    reply: Reply
    connections: int = 0
    requests: list[bytes] = field(default_factory=list)
    close_after_reply: bool = False
    writers: list[asyncio.StreamWriter] = field(default_factory=list)

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                body = await reader.readexactly(length)
                self.requests.append(head + body)
                answer = self.reply(head, body)
                if answer is None:  # silence: never answer
                    await asyncio.sleep(3600)
                    return
                writer.write(answer)
                await writer.drain()
                if self.close_after_reply:
                    break
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


@pytest.fixture
async def tls() -> AsyncIterator[tuple[ssl.SSLContext, ssl.SSLContext]]:
    certificates = make_serving_certificates()
    client = ssl.create_default_context(cadata=certificates.authority_pem.decode())
    yield certificates.server_context(), client


async def serve(
    server: Server, contexts: tuple[ssl.SSLContext, ssl.SSLContext]
) -> tuple[asyncio.Server, KeepAlivePool]:
    listening = await asyncio.start_server(server.handle, "127.0.0.1", 0, ssl=contexts[0])
    port = listening.sockets[0].getsockname()[1]
    return listening, KeepAlivePool(Endpoint("127.0.0.1", port, contexts[1]))


HEADERS = [("Content-Type", "application/json"), ("Authorization", "Bearer t0ken")]


async def test_a_run_of_writes_shares_one_connection(tls: Any) -> None:
    server = Server(plain())
    listening, pool = await serve(server, tls)
    async with listening:
        for index in range(20):
            status, body = await pool.request(
                "POST", f"/api/v1/pods/p{index}/binding", HEADERS, b"x" * index, 5
            )
            assert status == 201
            assert body == b'{"seen":%d,"path":"/api/v1/pods/p%d/binding"}' % (index, index)
        await pool.close()
    assert (server.connections, pool.opened) == (1, 1)
    assert server.requests[3].startswith(
        b"POST /api/v1/pods/p3/binding HTTP/1.1\r\nHost: 127.0.0.1:"
    )
    assert b"\r\nAuthorization: Bearer t0ken\r\n" in server.requests[3]
    assert server.requests[3].endswith(b"\r\nContent-Length: 3\r\n\r\nxxx")


async def test_a_chunked_reply_is_read_whole(tls: Any) -> None:
    def chunked(head: bytes, body: bytes) -> bytes:
        return (
            b"HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n"
            b'5\r\n{"a":\r\n4\r\n 12}\r\n0\r\n\r\n'
        )

    server = Server(chunked)
    listening, pool = await serve(server, tls)
    async with listening:
        assert await pool.request("POST", "/e", HEADERS, b"{}", 5) == (201, b'{"a": 12}')
        assert await pool.request("POST", "/e", HEADERS, b"{}", 5) == (201, b'{"a": 12}')
        await pool.close()
    assert server.connections == 1


async def test_a_server_that_closes_after_each_reply_gets_a_new_connection(tls: Any) -> None:
    server = Server(plain(extra="Connection: close\r\n"), close_after_reply=True)
    listening, pool = await serve(server, tls)
    async with listening:
        for _ in range(3):
            status, _ = await pool.request("POST", "/e", HEADERS, b"{}", 5)
            assert status == 201
        await pool.close()
    assert server.connections == 3


async def test_an_idle_connection_the_server_closed_is_not_reused(tls: Any) -> None:
    server = Server(plain())
    listening, pool = await serve(server, tls)
    async with listening:
        assert (await pool.request("POST", "/e", HEADERS, b"{}", 5))[0] == 201
        server.writers[0].close()  # the server's idle timeout
        await asyncio.sleep(0.2)
        assert (await pool.request("POST", "/e", HEADERS, b"{}", 5))[0] == 201
        await pool.close()
    assert server.connections == 2


async def test_no_reply_in_time_is_an_api_error_and_the_connection_is_dropped(tls: Any) -> None:
    answers = iter([None, b""])

    def silent_once(head: bytes, body: bytes) -> bytes | None:
        return None if next(answers) is None else plain()(head, body)

    server = Server(silent_once)
    listening, pool = await serve(server, tls)
    async with listening:
        with pytest.raises(ApiError, match=r"^0: POST /slow: timed out$"):
            await pool.request("POST", "/slow", HEADERS, b"{}", 0.3)
        assert (await pool.request("POST", "/e", HEADERS, b"{}", 5))[0] == 201
        await pool.close()
    assert server.connections == 2


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        (
            b'HTTP/1.1 201 Created\r\nContent-Length: 50\r\n\r\n{"cut',
            r"^0: POST /e: the API server closed the connection",
        ),
        (b"HTTP/1.1 2x1 ???\r\n\r\n", r"^0: POST /e: unreadable reply from the API server"),
    ],
    ids=["cut-mid-reply", "garbled"],
)
async def test_a_reply_cut_short_or_garbled_is_an_api_error(
    tls: Any, reply: bytes, message: str
) -> None:
    server = Server(lambda head, body: reply, close_after_reply=True)
    listening, pool = await serve(server, tls)
    async with listening:
        with pytest.raises(ApiError, match=message):
            await pool.request("POST", "/e", HEADERS, b"{}", 5)
        await pool.close()


async def test_nobody_listening_is_an_api_error(tls: Any) -> None:
    listening = await asyncio.start_server(lambda r, w: None, "127.0.0.1", 0)
    port = listening.sockets[0].getsockname()[1]
    listening.close()
    await listening.wait_closed()
    pool = KeepAlivePool(Endpoint("127.0.0.1", port, tls[1]))
    with pytest.raises(ApiError, match=r"^0: POST /e: "):
        await pool.request("POST", "/e", HEADERS, b"{}", 5)


async def test_writes_at_once_each_get_a_connection_then_share_them(tls: Any) -> None:
    server = Server(plain())
    listening, pool = await serve(server, tls)
    async with listening:
        replies = await asyncio.gather(
            *(pool.request("POST", f"/p{i}", HEADERS, b"{}", 5) for i in range(8))
        )
        assert [status for status, _ in replies] == [201] * 8
        opened = pool.opened
        for i in range(8):
            await pool.request("POST", f"/q{i}", HEADERS, b"{}", 5)
        await pool.close()
    assert 1 <= opened <= 8
    assert pool.opened == opened  # the later run reused what the first opened


def test_a_header_with_a_line_break_is_refused_before_sending() -> None:
    pool = KeepAlivePool(Endpoint("127.0.0.1", 1, None))
    with pytest.raises(ApiError, match="a header holds a line break"):
        pool._encode("POST", "/e", [("Authorization", "Bearer x\r\nX-Evil: 1")], b"{}")
    with pytest.raises(ApiError, match=r"not sendable in HTTP/1\.1"):
        pool._encode("POST", "/e", [("User-Agent", "volsched ✓")], b"{}")


async def test_a_proxy_in_the_environment_keeps_writes_on_aiohttp(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Only aiohttp's session honours proxies (and netrc): with one about, the kept-alive
    pool is not used."""
    credentials = Credentials(
        "https://10.0.0.1:6443", ssl.create_default_context(), None, None, None
    )
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    connection = await Connection.open(credentials)
    assert sending.write_pool(connection) is None
    await connection.close()
    monkeypatch.delenv("HTTPS_PROXY")
    monkeypatch.setenv("NETRC", "/nonexistent")
    monkeypatch.setenv("HOME", "/nonexistent")
    connection = await Connection.open(credentials)
    pooled = sending.write_pool(connection)
    await connection.close()
    assert pooled is not None
    assert (pooled[0].endpoint.host, pooled[0].endpoint.port, pooled[1]) == ("10.0.0.1", 6443, "")
