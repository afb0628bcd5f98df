"""Sending one request on kubernetes-asyncio's session, without its generated layer.

kubernetes-asyncio's ``ApiClient`` keeps what volsched needs from it — the credentials
of a kubeconfig or of the in-cluster service account (a token refreshed by the
configuration's hook), the TLS settings, and an aiohttp session whose pool keeps
connections alive — but its generated ``call_api`` costs more than the HTTP request it
wraps: it walks each body to sanitise it, rebuilds headers and query parameters, and
encodes with the standard library. A binding and an event go out for every pod, so
requests are built here instead: the session's own request, with the headers the
ApiClient's auth settings give and the proxy and TLS server name its REST client uses.
"""

from __future__ import annotations

import os
import ssl
import weakref
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlencode, urlsplit

import aiohttp

from volsched.cache.errors import ApiError
from volsched.daemon.kube.decoding import encoded
from volsched.daemon.kube.write_connections import Endpoint, KeepAlivePool

# Per ApiClient: the pool its writes go through, or None where they stay on aiohttp
# (a proxy, configured or from the environment, which only aiohttp's session honours).
_POOLS: weakref.WeakKeyDictionary[Any, tuple[KeepAlivePool, str] | None] = (
    weakref.WeakKeyDictionary()
)


def environment_configures_http(environ: Mapping[str, str]) -> bool:
    """Whether aiohttp's ``trust_env`` would find anything: a proxy variable (any case)
    or a netrc file (``$NETRC`` or ``~/.netrc``)."""
    for name, value in environ.items():
        if value and name.lower().endswith("_proxy"):
            return True
    netrc = environ.get("NETRC") or str(Path(environ.get("HOME") or "~").expanduser() / ".netrc")
    return Path(netrc).is_file()


def _tls_context(configuration: Any) -> ssl.SSLContext:
    """The TLS settings kubernetes-asyncio's REST client gives its session, the same
    way: the kubeconfig's CA, client certificate, and verification switches."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if getattr(configuration, "disable_strict_ssl_verification", False):
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return context


def write_pool(api: Any) -> tuple[KeepAlivePool, str] | None:
    """The ApiClient's pool of kept-alive connections and the server's path prefix,
    made at its first write; None when writes must go through aiohttp's session."""
    if api in _POOLS:
        return _POOLS[api]
    configuration = api.configuration
    address = urlsplit(configuration.host)
    pooled: tuple[KeepAlivePool, str] | None = None
    usable = (
        address.scheme in ("http", "https")
        and address.hostname
        and not api.rest_client.proxy
        and not environment_configures_http(os.environ)
    )
    if usable:
        tls = _tls_context(configuration) if address.scheme == "https" else None
        port = address.port or (443 if tls is not None else 80)
        endpoint = Endpoint(address.hostname or "", port, tls, api.rest_client.server_hostname)
        pooled = (KeepAlivePool(endpoint), address.path.rstrip("/"))
    _POOLS[api] = pooled
    return pooled


async def close_write_pool(api: Any) -> None:
    pooled = _POOLS.pop(api, None)
    if pooled is not None:
        await pooled[0].close()


async def send_write(
    api: Any,
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
    pooled = write_pool(api)
    if pooled is None:
        response = await send(api, method, path, query, body, content_type, timeout, accept)
        async with response:
            return response.status, await response.read()
    pool, prefix = pooled
    headers, target = await _authenticated(api, prefix + path, query, content_type, accept)
    data = encoded(body) if body is not None else None
    return await pool.request(method, target, headers.items(), data, timeout.total or 30.0)


async def _authenticated(
    api: Any, path: str, query: list[tuple[str, str]] | None, content_type: str, accept: str
) -> tuple[dict[str, str], str]:
    """The headers the ApiClient's auth settings give — the bearer token re-read or
    refreshed by the configuration's hook when it has one — and the path with its
    query."""
    headers = dict(api.default_headers)
    headers["Content-Type"] = content_type
    headers["Accept"] = accept
    params = list(query or [])
    await api.update_params_for_auth(headers, params, ["BearerToken"])
    return headers, path + ("?" + urlencode(params) if params else "")


async def send(
    api: Any,
    method: str,
    path: str,
    query: list[tuple[str, str]] | None,
    body: Any,
    content_type: str,
    timeout: aiohttp.ClientTimeout,
    accept: str = "application/json",
) -> aiohttp.ClientResponse:
    """The response (not yet read); a failed connection or a timeout is an ``ApiError``."""
    headers, target = await _authenticated(api, path, query, content_type, accept)
    url = api.configuration.host + target
    rest = api.rest_client
    options: dict[str, Any] = {}
    if rest.proxy:
        options["proxy"] = rest.proxy
    if rest.proxy_headers:
        options["proxy_headers"] = rest.proxy_headers
    if rest.server_hostname:
        options["server_hostname"] = rest.server_hostname
    try:
        response: aiohttp.ClientResponse = await rest.pool_manager.request(
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
