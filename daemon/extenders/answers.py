"""An extender's answer, read and decoded within bounds.

An extender is another program, and its answer is input like any other: a 1.5 GB filter
answer once took 6 GB and stalled the whole daemon (``/livez`` included) for 15 s while
it was buffered and decoded, and an answer nested a few thousand levels deep raised
``RecursionError`` out of every pod's cycle. So an answer is read only up to
``max_answer_bytes`` (a ``Content-Length`` past it is refused before the body is read,
and a body that runs past it is cut off there: the connection is closed, not drained),
and decoded by the bounded decoder (``json_limits``: nesting, number length and decoding
cost checked by a linear pre-scan first) and read into its wire shape in a worker
thread when it is large, so the pre-scan's pieces and the shape's checks leave the
event loop free between them (only the decoder's own C call holds it: about 20 ms per
MB). Everything from the first
byte sent to the last value decoded runs inside the extender's ``httpTimeout``.

Texts an extender chooses (its ``Error``, its reasons) are cut to ``MAX_TEXT_CHARS`` with
their full size noted, so a 3 MB error is a line, not 3 MB per cycle in the log.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

import aiohttp

from volsched.cache.file_limits import shown_size
from volsched.cache.json_limits import MAX_DEPTH, loads_bounded

MIB = 1024 * 1024
# A filter answer holds at most the nodes it was sent: node names are a few dozen bytes
# each, whole nodes (an extender that is not nodeCacheCapable) a few kilobytes; 16 MiB
# is a few thousand whole nodes.
MAX_ANSWER_BYTES = 16 * MIB
# Decoding may take this many times the answer's size (Python objects per JSON value).
DECODED_PER_ANSWER_BYTE = 8
# Below this an answer decodes in well under a millisecond per 100 KB: not worth a thread.
THREAD_DECODE_BYTES = 256 * 1024
CHUNK_BYTES = 64 * 1024
MAX_TEXT_CHARS = 512

T = TypeVar("T")


class AnswerTooLarge(Exception):
    """The answer is longer than the limit; the message says how far it was read."""


def shortened(text: str, limit: int = MAX_TEXT_CHARS) -> str:
    """``text`` cut to ``limit`` characters, its full size said after the cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text.encode('utf-8', 'replace')):,} bytes)"


async def read_answer(response: aiohttp.ClientResponse, limit: int) -> bytes:
    """The body, or ``AnswerTooLarge`` as soon as it is known to run past ``limit``;
    the connection is then closed, so nothing more is read."""
    declared = response.content_length
    if declared is not None and declared > limit:
        response.close()
        raise AnswerTooLarge(
            f"its answer is {shown_size(declared)} (Content-Length), "
            f"more than the {shown_size(limit)} allowed"
        )
    chunks: list[bytes] = []
    size = 0
    async for chunk in response.content.iter_chunked(CHUNK_BYTES):
        size += len(chunk)
        if size > limit:
            response.close()
            raise AnswerTooLarge(
                f"its answer is more than the {shown_size(limit)} allowed (not read further)"
            )
        chunks.append(chunk)
    return b"".join(chunks)


async def decode_answer(data: bytes, limit: int, shape: Callable[[Any], T]) -> T:
    """The answer decoded and read by ``shape``; ``ValueError`` (``JsonLimitError``
    included) when it is not JSON volsched reads, and whatever ``shape`` raises."""
    max_decoded = max(limit * DECODED_PER_ANSWER_BYTE, 64 * MIB)

    def decoded() -> T:
        return shape(loads_bounded(data, MAX_DEPTH, max_decoded))

    if len(data) < THREAD_DECODE_BYTES:
        return decoded()
    return await asyncio.to_thread(decoded)
