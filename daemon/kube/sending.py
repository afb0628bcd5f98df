"""Sending one request on a ``Connection``'s session, or on a connection kept for writes.

Requests are built here rather than by kubernetes-asyncio's generated ``call_api``, which
costs more than the HTTP request it wraps (it walks each body to sanitise it, rebuilds
headers and query parameters, and encodes with the standard library). A binding and an
event go out for every pod, so writes go further: over connections volsched keeps alive
itself (``write_connections``) wherever no proxy is in the way.
"""

from __future__ import annotations

import os
import weakref
from typing import Any
from urllib.parse import urlencode, urlsplit

import aiohttp

from volsched.cache.errors import ApiError
from volsched.daemon.kube.connection import Connection, environment_configures_http
from volsched.daemon.kube.decoding import encoded
from volsched.daemon.kube.write_connections import Endpoint, KeepAlivePool

# Per connection: the pool its writes go through, or None where they stay on aiohttp
# (a proxy, configured or from the environment, which only aiohttp's session honours).
_POOLS: weakref.WeakKeyDictionary[Connection, tuple[KeepAlivePool, str] | None] = (
    weakref.WeakKeyDictionary()
)


def write_pool(connection: Connection) -> tuple[KeepAlivePool, str] | None:
    """The connection's pool of kept-alive connections and the server's path prefix,
    made at its first write; None when writes must go through aiohttp's session."""
    if connection in _POOLS:
        return _POOLS[connection]
    address = urlsplit(connection.host)
    pooled: tuple[KeepAlivePool, str] | None = None
    usable = (
        address.scheme in ("http", "https")
        and address.hostname
        and not connection.proxy
        and not environment_configures_http(os.environ)
    )
    if usable:
        tls = connection.tls if address.scheme == "https" else None
        port = address.port or (443 if tls is not None else 80)
        endpoint = Endpoint(address.hostname or "", port, tls, connection.server_name)
        pooled = (KeepAlivePool(endpoint), address.path.rstrip("/"))
    _POOLS[connection] = pooled
    return pooled


async def close_write_pool(connection: Connection) -> None:
    pooled = _POOLS.pop(connection, None)
    if pooled is not None:
        await pooled[0].close()


async def send_write(
    connection: Connection,
    method: str,
    path: str,
    query: list[tuple[str, str]] | None = None,
    body: Any = None,
    content_type: str = "application/json",
    *,
    timeout: aiohttp.ClientTimeout,
    accept: str = "application/json",
) -> tuple[int, bytes]:
    """A write's status and reply, over a kept-alive connection where one can be
    used (see ``write_connections``), else through aiohttp's session."""
    pooled = write_pool(connection)
    if pooled is None:
        response = await send(connection, method, path, query, body, content_type, timeout, accept)
        async with response:
            return response.status, await response.read()
    pool, prefix = pooled
    headers = await connection.headers(content_type, accept)
    target = _target(prefix + path, query)
    data = encoded(body) if body is not None else None
    return await pool.request(method, target, headers.items(), data, timeout.total or 30.0)


def _target(path: str, query: list[tuple[str, str]] | None) -> str:
    return path + ("?" + urlencode(query) if query else "")


async def send(
    connection: Connection,
    method: str,
    path: str,
    query: list[tuple[str, str]] | None,
    body: Any,
    content_type: str,
    timeout: aiohttp.ClientTimeout,
    accept: str = "application/json",
) -> aiohttp.ClientResponse:
    """The response (not yet read); a failed connection or a timeout is an ``ApiError``."""
    headers = await connection.headers(content_type, accept)
    url = connection.host + _target(path, query)
    options: dict[str, Any] = {}
    if connection.proxy:
        options["proxy"] = connection.proxy
    if connection.proxy_headers:
        options["proxy_headers"] = connection.proxy_headers
    if connection.server_name:
        options["server_hostname"] = connection.server_name
    try:
        response: aiohttp.ClientResponse = await connection.session.request(
            method,
            url,
            headers=headers,
            data=encoded(body) if body is not None else None,
            timeout=timeout,
            **options,
        )
    except aiohttp.ClientError as exc:
        raise ApiError(0, f"{method} {path}: {exc}") from None
    except TimeoutError:
        raise ApiError(0, f"{method} {path}: timed out") from None
    return response
