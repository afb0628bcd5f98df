"""One API server: its address, how to trust it, who we are to it, and the aiohttp
session requests go out on.

A ``Connection`` is made from credentials read by ``credentials`` (the common case) or
from a kubernetes-asyncio ``ApiClient`` when an ``exec`` plugin or an ``auth-provider``
authenticates the user (``of_api_client``): everything above it sends requests the
same way whichever made it.
"""

from __future__ import annotations

import os
import ssl
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import Any

import aiohttp

from volsched.daemon.kube.credentials import Credentials

USER_AGENT = "volsched/0.1.0"
# kubernetes-asyncio's pool size per host, and the read buffer it gives watches: an
# event of a large object (etcd takes requests up to 1.5 MiB) would overflow aiohttp's
# default.
POOL_SIZE = 100
READ_BUFFER_BYTES = 2**21


def environment_configures_http(environ: Mapping[str, str]) -> bool:
    """Whether aiohttp's ``trust_env`` would find anything: a proxy variable (any case)
    or a netrc file (``$NETRC`` or ``~/.netrc``)."""
    for name, value in environ.items():
        if value and name.lower().endswith("_proxy"):
            return True
    netrc = environ.get("NETRC") or str(Path(environ.get("HOME") or "~").expanduser() / ".netrc")
    return Path(netrc).is_file()


class Connection:
    """The API server's address, TLS settings and credentials, and one aiohttp session
    whose pool keeps connections alive."""

    def __init__(
        self,
        host: str,
        tls: ssl.SSLContext | None,
        server_name: str | None,
        proxy: str | None,
        session: aiohttp.ClientSession,
        authorization: Callable[[], Awaitable[str | None]],
        proxy_headers: dict[str, str] | None = None,
        close: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        self.host = host
        self.tls = tls
        self.server_name = server_name
        self.proxy = proxy
        self.proxy_headers = proxy_headers
        self.session = session
        self.authorization = authorization
        self._close = close or session.close

    @classmethod
    async def open(cls, credentials: Credentials) -> Connection:
        """A session for credentials read by volsched itself. It reads the proxy and
        netrc environment only when that says something: aiohttp would otherwise look
        for both in a worker thread on every request."""
        connector = aiohttp.TCPConnector(limit=POOL_SIZE, ssl=credentials.tls or True)
        session = aiohttp.ClientSession(
            connector=connector,
            trust_env=environment_configures_http(os.environ),
            read_bufsize=READ_BUFFER_BYTES,
        )
        header = credentials.authorization

        async def authorization() -> str | None:
            return header() if header is not None else None

        return cls(
            credentials.server,
            credentials.tls,
            credentials.server_name,
            credentials.proxy,
            session,
            authorization,
        )

    @classmethod
    def of_api_client(cls, api: Any) -> Connection:
        """kubernetes-asyncio's client for a user only its plugins can authenticate: its
        session, its TLS settings, and the header its (refreshing) auth settings give."""
        configuration = api.configuration
        rest = api.rest_client
        session = rest.pool_manager
        if not environment_configures_http(os.environ) and hasattr(session, "_trust_env"):
            session._trust_env = False

        async def authorization() -> str | None:
            headers: dict[str, str] = {}
            await api.update_params_for_auth(headers, [], ["BearerToken"])
            return headers.get("authorization")

        https = str(configuration.host).startswith("https:")
        return cls(
            str(configuration.host).rstrip("/"),
            library_tls(configuration) if https else None,
            rest.server_hostname,
            rest.proxy,
            session,
            authorization,
            proxy_headers=rest.proxy_headers,
            close=api.close,
        )

    async def headers(self, content_type: str, accept: str) -> dict[str, str]:
        """A request's headers, the Authorization header fresh (a token file re-read,
        a plugin's token refreshed)."""
        headers = {"User-Agent": USER_AGENT, "Content-Type": content_type, "Accept": accept}
        authorization = await self.authorization()
        if authorization:
            headers["Authorization"] = authorization
        return headers

    async def close(self) -> None:
        await self._close()


def library_tls(configuration: Any) -> ssl.SSLContext:
    """The TLS settings kubernetes-asyncio's REST client gives its session, made the
    same way, for the connections volsched keeps for its writes."""
    context = ssl.create_default_context(cafile=configuration.ssl_ca_cert)
    if configuration.cert_file:
        context.load_cert_chain(configuration.cert_file, keyfile=configuration.key_file)
    if not configuration.verify_ssl:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    if getattr(configuration, "disable_strict_ssl_verification", False):
        context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return context
