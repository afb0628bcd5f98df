"""Loading a kubeconfig: checked before it is read, and the server it names checked
after.

Credentials are read by ``credentials``; kubernetes-asyncio, loaded only for a user
that an ``exec`` plugin or an ``auth-provider`` authenticates, reads the rest. Its loader
fails on odd files with an AssertionError, a TypeError or an
AttributeError, accepts a server of any scheme (a ``gopher://`` one is then retried
forever by every watch) and a ``proxy-url`` of any scheme (aiohttp then fails the first
request with an AssertionError), and leaves garbage certificate data to fail when the
first connection is made. Each of those is one ``ConfigError`` here, naming the file and the
field, before anything is opened.
"""

from __future__ import annotations

import base64
import binascii
import os
import ssl
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from volsched.cache.errors import ConfigError
from volsched.cache.file_limits import FileLimitError, read_text_bounded
from volsched.cache.yaml_limits import YamlLimitError, load_one
from volsched.daemon.kube.connection import Connection
from volsched.daemon.kube.credentials import (
    credentials_error,
    entry_body,
    from_kubeconfig,
    in_cluster,
    named_entry,
    needs_plugin,
)

# What kubernetes-asyncio's loader raises on a file it cannot use: its ConfigException, an
# AssertionError for a cluster without a server, a TypeError or AttributeError for an
# odd shape, and whatever an exec plugin or auth provider fails with.
LOADER_ERRORS = (Exception,)


def read_kubeconfig(path: str) -> dict[str, Any]:
    """One kubeconfig file as a mapping whose ``clusters``, ``contexts`` and ``users``
    are lists; anything else is a ``ConfigError`` naming the file."""

    def fail(problem: str) -> ConfigError:
        return credentials_error(path, problem)

    try:
        text = read_text_bounded(path)
    except FileLimitError as exc:
        raise fail(str(exc)) from None
    except OSError as exc:
        raise fail(exc.strerror or str(exc)) from None
    except UnicodeDecodeError:
        raise fail("not UTF-8 text") from None
    try:
        data = load_one(text)
    except YamlLimitError as exc:
        raise fail(str(exc)) from None
    if not isinstance(data, dict):
        raise fail("the file is empty or not a YAML mapping")
    for key in ("clusters", "contexts", "users"):
        if not isinstance(data.get(key) or [], list):
            raise fail(f"{key} must be a list")
    return data


def check_config(data: Mapping[str, Any], where: str, context: str | None) -> None:
    """The cluster of ``context`` (the current context when None) in a kubeconfig read
    from ``where``."""

    def fail(problem: str) -> ConfigError:
        return credentials_error(where, problem)

    if not data.get("clusters"):
        raise fail("no clusters defined")
    chosen = context or data.get("current-context")
    cluster_name, cluster = _context_cluster(data, chosen, fail)
    _check_user(data, chosen, fail)
    at = f"clusters[{cluster_name}].cluster"
    if not isinstance(cluster, Mapping):
        raise fail(f"{at}: must be a mapping")
    server = cluster.get("server")
    if server is None or server == "":
        raise fail(f"{at}.server: is required")
    if not isinstance(server, str):
        raise fail(f"{at}.server: must be a URL, not {type(server).__name__}")
    problem = server_problem(server)
    if problem is not None:
        raise fail(f"{at}.server: {problem}")
    if cluster.get("proxy-url") not in (None, ""):
        problem = proxy_problem(cluster.get("proxy-url"))
        if problem is not None:
            raise fail(f"{at}.proxy-url: {problem}")
    authority = cluster.get("certificate-authority-data")
    if authority is not None:
        problem = _certificate_problem(authority)
        if problem is not None:
            raise fail(f"{at}.certificate-authority-data: {problem}")


def _context_cluster(
    data: Mapping[str, Any], current: object, fail: Callable[[str], ConfigError]
) -> tuple[str, object]:
    """The name and body of a context's cluster, both required."""
    if not current:
        raise fail("no current-context is set; give --context")
    entry = named_entry(data, "contexts", current)
    if entry is None:
        raise fail(f'context "{current}" does not exist')
    context = entry.get("context")
    if not isinstance(context, Mapping):
        raise fail(f"contexts[{current}].context: must be a mapping")
    name = context.get("cluster")
    cluster = named_entry(data, "clusters", name)
    if cluster is None:
        raise fail(f'context "{current}" names cluster "{name}", which does not exist')
    return str(name), cluster.get("cluster", {})


def _check_user(
    data: Mapping[str, Any], current: object, fail: Callable[[str], ConfigError]
) -> None:
    """A context may name no user (anonymous requests), but not one that is missing."""
    name = entry_body(data, "contexts", "context", current).get("user")
    if name in (None, ""):
        return
    user = named_entry(data, "users", name)
    if user is None:
        raise fail(f'context "{current}" names user "{name}", which does not exist')
    if not isinstance(user.get("user") or {}, Mapping):
        raise fail(f"users[{name}].user: must be a mapping")


def server_problem(server: str) -> str | None:
    """Why volsched cannot talk to ``server`` (None when it can): an http or https URL
    with a host and, if given, a port between 1 and 65535."""
    shown = server if len(server) <= 80 else server[:80] + "…"
    try:
        parts = urlsplit(server)
    except ValueError as exc:
        return f"{shown!r} is not a URL ({exc})"
    if parts.scheme not in ("http", "https"):
        return f"{shown!r} is not an http or https URL"
    if not parts.hostname:
        return f"{shown!r} names no host"
    return _port_problem(parts.netloc, shown)


def _port_problem(netloc: str, shown: str) -> str | None:
    """A port, if the URL gives one, of ASCII digits between 1 and 65535 (its length
    checked before ``int``, which refuses 4,301 digits with a ValueError)."""
    _, colon, port = netloc.rpartition("]")[2].rpartition(":")
    if colon and not (
        port.isascii() and port.isdigit() and len(port) <= 5 and 1 <= int(port) <= 65535
    ):
        return f"{shown!r}: the port must be a number between 1 and 65535"
    return None


# client-go's proxy schemes; aiohttp, which carries volsched's requests, speaks to the
# first two only.
PROXY_SCHEMES = ("http", "https", "socks5")


def proxy_problem(proxy: object) -> str | None:
    """Why volsched cannot send its requests through the ``proxy-url`` ``proxy``."""
    if not isinstance(proxy, str):
        return f"must be a URL, not {type(proxy).__name__}"
    shown = proxy if len(proxy) <= 80 else proxy[:80] + "…"
    try:
        parts = urlsplit(proxy)
    except ValueError as exc:
        return f"{shown!r} is not a URL ({exc})"
    if parts.scheme not in PROXY_SCHEMES:
        return f"{shown!r} is not an http, https or socks5 URL"
    if parts.scheme == "socks5":
        return f"{shown!r}: volsched's HTTP client (aiohttp) has no socks5 support; use an http or https proxy"
    if not parts.hostname:
        return f"{shown!r} names no host"
    return _port_problem(parts.netloc, shown)


def _certificate_problem(value: object) -> str | None:
    if not isinstance(value, str):
        return f"must be base64 text, not {type(value).__name__}"
    try:
        # Line breaks are allowed, as Go's decoder (and kubectl) allow them.
        decoded = base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError):
        return "not base64"
    try:
        context = ssl.create_default_context()
        context.load_verify_locations(cadata=decoded.decode("ascii"))
    except (UnicodeDecodeError, ssl.SSLError, ValueError) as exc:
        return f"not a PEM certificate ({exc})"
    return None


async def connect(kubeconfig: str | None) -> Connection:
    """A connection from a kubeconfig file's current context, or from the in-cluster
    service account when none is given; every problem one ``ConfigError``."""
    if not kubeconfig:
        return await Connection.open(in_cluster(os.environ))
    data = read_kubeconfig(kubeconfig)
    check_config(data, kubeconfig, None)
    return await connect_context(data, kubeconfig, None, Path(kubeconfig).resolve().parent)


async def connect_context(
    data: Mapping[str, Any], where: str, context: str | None, base: Path
) -> Connection:
    """A connection for ``context`` of a checked kubeconfig read from ``where``."""
    if needs_plugin(data, context):
        return await _connect_with_plugin(data, where, context)
    credentials = from_kubeconfig(data, where, context, base)
    problem = server_problem(credentials.server)
    if problem is not None:
        # Only a kubeconfig without a usable current context gets here.
        raise credentials_error(where, f"server: {problem}")
    return await Connection.open(credentials)


async def _connect_with_plugin(
    data: Mapping[str, Any], where: str, context: str | None
) -> Connection:
    """kubernetes-asyncio's client for a user whose credentials a plugin gives."""
    from kubernetes_asyncio import client as k8s_client
    from kubernetes_asyncio import config as k8s_config

    configuration = k8s_client.Configuration()
    try:
        await k8s_config.load_kube_config_from_dict(
            dict(data), context=context, client_configuration=configuration
        )
    except LOADER_ERRORS as exc:
        raise credentials_error(where, str(exc) or type(exc).__name__) from None
    problem = server_problem(str(configuration.host or ""))
    if problem is not None:
        raise credentials_error(where, f"server: {problem}")
    try:
        api = k8s_client.ApiClient(configuration=configuration)
    except (ssl.SSLError, OSError, ValueError) as exc:
        # Certificate or key data that TLS refuses, found when the client is made.
        raise credentials_error(where, f"its certificates or keys cannot be used: {exc}") from None
    return Connection.of_api_client(api)
