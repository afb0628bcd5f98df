"""Reading a JSON request body with its cost bounded by its size.

The body is read a chunk at a time and refused as soon as it passes the limit (a
``Content-Length`` over it is refused before anything is read); a ``gzip`` or
``deflate`` body is inflated here, a chunk at a time with the output capped, so a small
compressed body cannot inflate past the limit, and bytes that are not what the header
says are one error line, not a 500. Decoding goes through the bounded JSON loader,
which refuses documents that would cost more memory than the limit allows.

The servers are started with aiohttp's own decompression off, so this is the only
place a body is inflated.
"""

from __future__ import annotations

import asyncio
import zlib
from typing import Any

from aiohttp import web

from volsched.cache.json_limits import MAX_DECODED_BYTES, JsonLimitError, loads_bounded

READ_CHUNK_BYTES = 64 * 1024


class BodyError(Exception):
    """A body that is not read: too big, too slow, wrongly encoded, or not JSON."""

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message)
        self.status = status


class _Inflater:
    """A ``Content-Encoding`` undone a chunk at a time, its output capped per chunk."""

    def __init__(self, encoding: str) -> None:
        self.encoding = encoding
        self._zlib: Any = None
        self._sniffed = encoding == "identity"

    def _start(self, chunk: bytes) -> None:
        if self.encoding in ("gzip", "x-gzip"):
            self._zlib = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif chunk[:1] and chunk[0] & 0x0F == 8:
            self._zlib = zlib.decompressobj(zlib.MAX_WBITS)  # RFC 1950, as it should be
        else:
            self._zlib = zlib.decompressobj(-zlib.MAX_WBITS)  # raw deflate, as some send
        self._sniffed = True

    def feed(self, chunk: bytes, room: int) -> bytes:
        """Up to ``room + 1`` bytes of output: one more than fits says "too big"."""
        if not self._sniffed:
            self._start(chunk)
        if self._zlib is None:
            return chunk
        if self._zlib.eof:
            if chunk:
                raise BodyError(f"request body: bytes after the end of the {self.encoding} data")
            return b""
        try:
            out = self._zlib.decompress(chunk, room + 1)
        except zlib.error as exc:
            raise BodyError(f"request body is not valid {self.encoding} data: {exc}") from None
        if self._zlib.unused_data:
            raise BodyError(f"request body: bytes after the end of the {self.encoding} data")
        return bytes(out)

    def pending(self) -> bytes:
        """Input the last ``feed`` left for later because the output was capped."""
        return bytes(self._zlib.unconsumed_tail) if self._zlib is not None else b""

    def finish(self) -> None:
        if self._zlib is not None and not self._zlib.eof:
            raise BodyError(f"request body is not valid {self.encoding} data: it ends too soon")


def _encoding(request: web.Request) -> str:
    header = request.headers.get("Content-Encoding", "").strip().lower()
    if header in ("", "identity"):
        return "identity"
    if header in ("gzip", "x-gzip", "deflate"):
        return header
    raise BodyError(f"Content-Encoding {header[:40]!r} is not accepted: send gzip or none")


async def read_body(request: web.Request, max_bytes: int) -> bytes:
    """The body, decoded from its ``Content-Encoding``, refused past ``max_bytes``."""
    encoding = _encoding(request)
    too_big = f"request body too large: more than {max_bytes:,} bytes"
    if encoding != "identity":
        too_big += f" once {encoding} is undone"
    if request.content_length is not None and request.content_length > max_bytes:
        raise BodyError(too_big)
    inflater = _Inflater(encoding)
    parts: list[bytes] = []
    size = 0
    while chunk := await request.content.read(READ_CHUNK_BYTES):
        while chunk:
            out = inflater.feed(chunk, max_bytes - size)
            size += len(out)
            if size > max_bytes:
                raise BodyError(too_big)
            parts.append(out)
            chunk = inflater.pending()
    inflater.finish()
    return b"".join(parts)


async def read_json(
    request: web.Request,
    max_bytes: int,
    timeout_seconds: float,
    max_decoded_bytes: int = MAX_DECODED_BYTES,
) -> Any:
    """The body as JSON; a ``BodyError`` with one line saying why not."""
    try:
        async with asyncio.timeout(timeout_seconds):
            raw = await read_body(request, max_bytes)
    except TimeoutError:
        raise BodyError(f"request body not received within {timeout_seconds:g}s", 408) from None
    try:
        return loads_bounded(raw, max_decoded_bytes=max_decoded_bytes)
    except JsonLimitError as exc:
        raise BodyError(f"request body rejected: {exc}") from None
    except ValueError as exc:
        first = (str(exc).splitlines() or [""])[0]
        raise BodyError(f"request body is not JSON: {first}") from None
