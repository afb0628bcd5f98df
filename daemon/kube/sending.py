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

from typing import Any
from urllib.parse import urlencode

import aiohttp

from volsched.cache.errors import ApiError
from volsched.daemon.kube.decoding import encoded


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
    headers = dict(api.default_headers)
    headers["Content-Type"] = content_type
    headers["Accept"] = accept
    params = list(query or [])
    # The bearer token (re-read or refreshed by the configuration's hook when it has one).
    await api.update_params_for_auth(headers, params, ["BearerToken"])
    url = api.configuration.host + path
    if params:
        url += "?" + urlencode(params)
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
