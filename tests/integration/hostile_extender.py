"""An extender that answers badly on purpose, served from a thread of its own (the
standard library's HTTP server), so what it sends competes with the daemon for nothing
but the CPU: answers larger than any limit (streamed, or announced by Content-Length),
nested too deep, not JSON, of the wrong shape, an error status, a body sent a byte at a
time, a 3 MB ``Error``. Its first path segment picks the behaviour; ``sent`` counts the
bytes of body written per behaviour, ``requests`` the requests."""

from __future__ import annotations

import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MIB = 1024 * 1024
STREAM_CHUNK = b'"node-1", ' * 6_554  # 64 KiB of a node-name list

# behaviour → (status, headers, body chunks)
Answer = tuple[int, dict[str, str], Iterator[bytes]]


def _streamed(total: int) -> Iterator[bytes]:
    yield b'{"NodeNames": ['
    sent = 0
    while sent < total:
        yield STREAM_CHUNK
        sent += len(STREAM_CHUNK)
    yield b'"node-1"]}'


def _trickle() -> Iterator[bytes]:
    for _ in range(600):
        yield b" "
        time.sleep(0.1)


def answers(stream_bytes: int) -> dict[str, Callable[[Any], Answer]]:
    """Each behaviour from the request body it was sent."""
    json_type = {"Content-Type": "application/json"}
    return {
        "huge": lambda _: (200, json_type, _streamed(stream_bytes)),
        "declared": lambda _: (
            200,
            {**json_type, "Content-Length": str(10 * 1024 * MIB)},
            iter([b'{"NodeNames": [' + STREAM_CHUNK]),
        ),
        "deep": lambda _: (200, json_type, iter([b"[" * 100_000 + b"]" * 100_000])),
        "malformed": lambda _: (200, json_type, iter([b'{"NodeNames": ["node-1",'])),
        "shape": lambda _: (200, json_type, iter([b'{"NodeNames": 5}'])),
        "status": lambda _: (500, json_type, iter([b'{"Error": "broken"}'])),
        "trickle": lambda _: (200, json_type, _trickle()),
        "big-error": lambda _: (
            200,
            json_type,
            iter([json.dumps({"Error": "x" * 3_000_000}).encode()]),
        ),
        "ok": lambda body: (
            200,
            json_type,
            iter([json.dumps({"NodeNames": body["NodeNames"]}).encode()]),
        ),
    }


class HostileExtender:
    def __init__(self, stream_bytes: int = 64 * MIB) -> None:
        self.sent: Counter[str] = Counter()
        self.requests: Counter[str] = Counter()
        behaviours = answers(stream_bytes)
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                behaviour = self.path.strip("/").split("/")[0]
                owner.requests[behaviour] += 1
                status, headers, chunks = behaviours[behaviour](body)
                self.send_response(status)
                chunked = "Content-Length" not in headers
                for name, value in headers.items():
                    self.send_header(name, value)
                if chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                self.send_header("Connection", "close")
                self.end_headers()
                try:
                    for chunk in chunks:
                        data = b"%x\r\n%s\r\n" % (len(chunk), chunk) if chunked else chunk
                        self.wfile.write(data)
                        self.wfile.flush()
                        owner.sent[behaviour] += len(chunk)
                    if chunked:
                        self.wfile.write(b"0\r\n\r\n")
                except OSError:
                    pass  # the client stopped reading: what it is meant to do
                self.close_connection = True

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> HostileExtender:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def url(self, behaviour: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{behaviour}"
