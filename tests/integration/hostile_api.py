"""An API server that lists badly on purpose, for the command line's live reads: each
behaviour answers every list (``/api/...``, ``/apis/...``) its own way, and discovery
says no group is installed. It serves on the test's loop over real HTTP; the command
line runs in a thread with a loop of its own."""

from __future__ import annotations

import asyncio
import itertools
import json
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

MIB = 1024 * 1024
EMPTY_LIST = {"kind": "List", "apiVersion": "v1", "metadata": {}, "items": []}


def page(items: Any = (), token: Any = "", metadata: Any = None) -> bytes:
    meta = metadata if metadata is not None else {"continue": token, "resourceVersion": "1"}
    return json.dumps({"kind": "NodeList", "metadata": meta, "items": items}).encode()


class HostileApi:
    def __init__(self) -> None:
        self.requests = 0
        self.behaviour = "ok"
        self.body: bytes = b""  # for "fixed"
        self.stream_bytes = 70 * MIB
        self.counter = itertools.count()
        app = web.Application()
        app.router.add_route("GET", "/apis/{rest:.*}", self.discovery)
        app.router.add_route("GET", "/{rest:.*}", self.list)
        self.runner = web.AppRunner(app)
        self.url = ""

    async def start(self) -> None:
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0)
        await site.start()
        self.url = f"http://127.0.0.1:{self.runner.addresses[0][1]}"

    async def close(self) -> None:
        await self.runner.cleanup()

    async def discovery(self, request: web.Request) -> web.StreamResponse:
        if request.path.count("/") > 3:  # a list of a custom resource
            return await self.list(request)
        return web.json_response({"kind": "Status", "code": 404}, status=404)

    async def list(self, request: web.Request) -> web.StreamResponse:
        self.requests += 1
        handler: Callable[[web.Request], Awaitable[web.StreamResponse]] = getattr(
            self, "_" + self.behaviour.replace("-", "_")
        )
        return await handler(request)

    async def _ok(self, request: web.Request) -> web.StreamResponse:
        return web.json_response(EMPTY_LIST)

    async def _fixed(self, request: web.Request) -> web.StreamResponse:
        return web.Response(body=self.body, content_type="application/json")

    async def _endless(self, request: web.Request) -> web.StreamResponse:
        return web.Response(
            body=page(token=f"t{next(self.counter)}"), content_type="application/json"
        )

    async def _repeating(self, request: web.Request) -> web.StreamResponse:
        return web.Response(body=page(token="same-token"), content_type="application/json")

    async def _trickle(self, request: web.Request) -> web.StreamResponse:
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        try:
            for byte in page():
                await response.write(bytes([byte]))
                await asyncio.sleep(0.2)
        except (ConnectionError, RuntimeError):
            pass
        return response

    async def _huge(self, request: web.Request) -> web.StreamResponse:
        """One page of ``stream_bytes`` (a server ignoring ``limit``), streamed."""
        response = web.StreamResponse(headers={"Content-Type": "application/json"})
        await response.prepare(request)
        item = json.dumps({"metadata": {"name": "n"}}).encode() + b","
        chunk = item * (64 * 1024 // len(item))
        try:
            await response.write(b'{"items": [')
            for _ in range(self.stream_bytes // len(chunk)):
                await response.write(chunk)
            await response.write(b'{}], "metadata": {}}')
        except (ConnectionError, RuntimeError):
            pass
        return response
