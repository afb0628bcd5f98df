"""Loading a kubeconfig: checked before kubernetes-asyncio reads it, and the server it
names checked after.

kubernetes-asyncio's loader fails on odd files with an AssertionError, a TypeError or an
AttributeError, accepts a server of any scheme (a ``gopher://`` one is then retried
forever by every watch) and a ``proxy-url`` of any scheme (aiohttp then fails the first
request with an AssertionError), and leaves garbage certificate data to fail when the
first connection is made. Each of those is one ``ConfigError`` here, naming the file and the
field, before anything is opened.
"""

from __future__ import annotations

import base64
import binascii
import ssl
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from kubernetes_asyncio import client as k8s_client
from kubernetes_asyncio import config as k8s_config
from kubernetes_asyncio.config.config_exception import ConfigException

from volsched.cache.errors import ConfigError
from volsched.cache.file_limits import FileLimitError, read_text_bounded
from volsched.cache.yaml_limits import YamlLimitError, load_one

# What kubernetes-asyncio's loaders raise on a file they cannot use (an AssertionError
# for a cluster without a server, a TypeError or AttributeError for an odd shape).
LOADER_ERRORS = (
    ConfigException,
    OSError,
    ValueError,
    TypeError,
    KeyError,
    AttributeError,
    AssertionError,
)


def credentials_error(where: str, problem: str) -> ConfigError:
    return ConfigError(f"{where}: cannot load Kubernetes credentials: {problem}")


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


def check_kubeconfig(path: str) -> None:
    """The file's shape, and the cluster of its current context: a server URL volsched
    can talk to and certificate data that is a certificate."""
    check_config(read_kubeconfig(path), path, None)


def check_config(data: Mapping[str, Any], where: str, context: str | None) -> None:
    """The cluster of ``context`` (the current context when None) in a kubeconfig read
    from ``where``."""

    def fail(problem: str) -> ConfigError:
        return credentials_error(where, problem)

    if not data.get("clusters"):
        raise fail("no clusters defined")
    cluster_name, cluster = _context_cluster(data, context or data.get("current-context"))
    if cluster is None:
        return  # no usable current context: kubernetes-asyncio says which is missing
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


def _context_cluster(data: Mapping[str, Any], current: object) -> tuple[str, object | None]:
    """The name and body of a context's cluster (None when not found)."""
    contexts = [c for c in data.get("contexts") or [] if isinstance(c, Mapping)]
    context = next((c.get("context") for c in contexts if c.get("name") == current), None)
    if not isinstance(context, Mapping):
        return "", None
    name = context.get("cluster")
    clusters = [c for c in data.get("clusters") or [] if isinstance(c, Mapping)]
    for entry in clusters:
        if entry.get("name") == name:
            return str(name), entry.get("cluster", {})
    return "", None


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


async def api_client(kubeconfig: str | None) -> Any:
    """kubernetes-asyncio's ``ApiClient`` from a kubeconfig file, or the in-cluster
    service account when none is given; every problem one ``ConfigError``."""
    configuration = k8s_client.Configuration()
    if kubeconfig:
        check_kubeconfig(kubeconfig)
    where = kubeconfig or "in-cluster service account"
    try:
        if kubeconfig:
            await k8s_config.load_kube_config(
                config_file=kubeconfig, client_configuration=configuration, persist_config=False
            )
        else:
            k8s_config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    except LOADER_ERRORS as exc:
        raise credentials_error(where, str(exc) or type(exc).__name__) from None
    return client_for(configuration, where)


def client_for(configuration: Any, where: str) -> Any:
    """The ``ApiClient`` of a loaded configuration, once the server the loader settled
    on (the in-cluster one too) proved usable."""
    problem = server_problem(str(configuration.host or ""))
    if problem is not None:
        raise credentials_error(where, f"server: {problem}")
    try:
        return k8s_client.ApiClient(configuration=configuration)
    except (ssl.SSLError, OSError, ValueError) as exc:
        # Certificate or key data that TLS refuses, found when the client is made.
        raise credentials_error(where, f"its certificates or keys cannot be used: {exc}") from None
