"""Credentials for the API server, read from a kubeconfig or the in-cluster service
account as client-go reads them, without kubernetes-asyncio for the common kinds.

Importing any part of kubernetes-asyncio imports its every generated model: about 0.3 s
of CPU, a third of the daemon's start-up, before the first request. The credentials a
scheduler nearly always runs with — a server and its CA, a client certificate, a bearer
token or token file, a username and password, the service account's token — need none
of it, so they are read here. A user authenticated by an ``exec`` plugin or an
``auth-provider`` still goes to kubernetes-asyncio (``needs_plugin``), loaded only then.

As client-go does: a ``token`` wins over a ``tokenFile``, and a token over a username
and password; a token file (the service account's too) is read again once a minute, so
a projected token that the kubelet rotates is picked up, and a read that fails keeps the
token read before.
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import ssl
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from volsched.cache.errors import ConfigError
from volsched.cache.file_limits import FileLimitError, read_text_bounded

log = logging.getLogger(__name__)

SERVICE_ACCOUNT = Path("/var/run/secrets/kubernetes.io/serviceaccount")
# client-go's cachingTokenSource reads a token file again after a minute.
TOKEN_REREAD_SECONDS = 60.0
# A bearer token is a few KiB at most; a file of more is not one.
MAX_TOKEN_BYTES = 64 * 1024
PLUGIN_FIELDS = ("exec", "auth-provider")
# Certificate or key material: (the decoded data, a file's path), at most one given.
Source = tuple[bytes | None, str | None]


def credentials_error(where: str, problem: str) -> ConfigError:
    return ConfigError(f"{where}: cannot load Kubernetes credentials: {problem}")


class TokenFile:
    """A bearer token kept in a file, read again once it is a minute old."""

    def __init__(self, path: str, where: str, clock: Callable[[], float] = time.monotonic):
        self.path = path
        self.clock = clock
        self.token = self._read_or_fail(where)
        self.read_at = clock()

    def _read(self) -> str:
        token = read_text_bounded(self.path, MAX_TOKEN_BYTES).strip()
        if not token:
            raise ValueError("the file is empty")
        return token

    def _read_or_fail(self, where: str) -> str:
        try:
            return self._read()
        except FileLimitError as exc:
            raise credentials_error(where, f"{self.path}: {exc}") from None
        except OSError as exc:
            raise credentials_error(where, f"{self.path}: {exc.strerror or exc}") from None
        except (UnicodeDecodeError, ValueError) as exc:
            raise credentials_error(where, f"{self.path}: not a token ({exc})") from None

    def __call__(self) -> str:
        now = self.clock()
        if now - self.read_at >= TOKEN_REREAD_SECONDS:
            self.read_at = now
            try:
                self.token = self._read()
            except (OSError, ValueError) as exc:
                log.warning(
                    "cannot read the token file %s again, keeping its last token: %s",
                    self.path,
                    exc,
                )
        return f"Bearer {self.token}"


@dataclass(frozen=True, slots=True)
class Credentials:
    """Where the API server is, how to trust it, and what to tell it about us."""

    server: str
    tls: ssl.SSLContext | None  # None for an http:// server
    server_name: str | None  # the name to check the server's certificate against
    proxy: str | None
    authorization: Callable[[], str] | None  # the Authorization header's value


def needs_plugin(data: Mapping[str, Any], context: str | None) -> bool:
    """Whether the context's user is authenticated by a plugin only kubernetes-asyncio
    runs (an ``exec`` command or an ``auth-provider``)."""
    user = entry_body(data, "users", "user", _context(data, context).get("user"))
    return any(user.get(field) for field in PLUGIN_FIELDS)


def from_kubeconfig(
    data: Mapping[str, Any], where: str, context: str | None, base: Path
) -> Credentials:
    """The credentials of ``context`` (the current one when None) of a kubeconfig
    already checked by ``kubeconfig.check_config``; a relative file path is relative to
    ``base``. Every problem is one ``ConfigError`` naming ``where`` and the field."""
    chosen = _context(data, context)
    cluster_name = chosen.get("cluster")
    cluster = entry_body(data, "clusters", "cluster", cluster_name)
    user_name = chosen.get("user")
    user = entry_body(data, "users", "user", user_name)
    at_cluster, at_user = f"clusters[{cluster_name}].cluster", f"users[{user_name}].user"
    server = str(cluster.get("server") or "")

    def field(section: Mapping[str, Any], at: str, name: str, kind: type) -> Any:
        value = section.get(name)
        if value is not None and not isinstance(value, kind):
            raise credentials_error(where, f"{at}.{name}: must be a {kind.__name__}")
        return value

    def path(section: Mapping[str, Any], at: str, name: str) -> str | None:
        value = field(section, at, name, str)
        return str(base / value) if value else None

    def data_or_file(section: Mapping[str, Any], at: str, name: str) -> Source:
        """kubectl's ``NAME-data`` (base64, preferred) and ``NAME`` (a file path)."""
        text = field(section, at, f"{name}-data", str)
        return _data(text, where, f"{at}.{name}-data"), path(section, at, name)

    tls = None
    if server.startswith("https:"):
        tls = _tls(
            where,
            authority=data_or_file(cluster, at_cluster, "certificate-authority"),
            certificate=data_or_file(user, at_user, "client-certificate"),
            key=data_or_file(user, at_user, "client-key"),
            verify=not field(cluster, at_cluster, "insecure-skip-tls-verify", bool),
        )
    return Credentials(
        server=server.rstrip("/"),
        tls=tls,
        server_name=field(cluster, at_cluster, "tls-server-name", str) or None,
        proxy=field(cluster, at_cluster, "proxy-url", str) or None,
        authorization=_authorization(user, at_user, where, field, path),
    )


def in_cluster(environ: Mapping[str, str], account: Path = SERVICE_ACCOUNT) -> Credentials:
    """The pod's service account: the API server the kubelet put in the environment, its
    CA and the projected token (read again as it rotates)."""
    where = "in-cluster service account"
    host = environ.get("KUBERNETES_SERVICE_HOST", "")
    port = environ.get("KUBERNETES_SERVICE_PORT", "")
    if not host or not port:
        raise credentials_error(
            where,
            "KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT are not set "
            "(not in a pod); give --kubeconfig",
        )
    authority = str(account / "ca.crt")
    if not os.path.isfile(authority):
        raise credentials_error(where, f"{authority}: no such file")
    tls = _tls(where, (None, authority), (None, None), (None, None), verify=True)
    host = f"[{host}]" if ":" in host else host
    token = TokenFile(str(account / "token"), where)
    return Credentials(f"https://{host}:{port}", tls, None, None, token)


def named_entry(data: Mapping[str, Any], plural: str, name: object) -> Mapping[str, Any] | None:
    """The first entry of a kubeconfig list (``clusters``, ``contexts``, ``users``) with
    that name, as kubectl picks it; None when there is none."""
    for entry in data.get(plural) or []:
        if isinstance(entry, Mapping) and entry.get("name") == name:
            return entry
    return None


def _context(data: Mapping[str, Any], context: str | None) -> Mapping[str, Any]:
    return entry_body(data, "contexts", "context", context or data.get("current-context"))


def entry_body(data: Mapping[str, Any], plural: str, key: str, name: object) -> Mapping[str, Any]:
    """The body of the named context, cluster or user ({} when there is none: a context
    without a user is anonymous)."""
    entry = named_entry(data, plural, name)
    body = entry.get(key) if entry is not None else None
    return body if isinstance(body, Mapping) else {}


def _data(value: str | None, where: str, at: str) -> bytes | None:
    if not value:
        return None
    try:
        return base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError):
        raise credentials_error(where, f"{at}: not base64") from None


def _tls(
    where: str, authority: Source, certificate: Source, key: Source, verify: bool
) -> ssl.SSLContext:
    """The TLS context: the kubeconfig's CA (else the system's), its client certificate,
    and no verification only where the kubeconfig says so. Data wins over a file, as in
    kubectl."""
    try:
        # Given a CA, only that CA is trusted; given none, the system's.
        data = authority[0].decode("ascii") if authority[0] else None
        context = ssl.create_default_context(cafile=None if data else authority[1], cadata=data)
        if certificate[0] or certificate[1]:
            _load_chain(context, certificate, key)
    except (OSError, ssl.SSLError, UnicodeDecodeError, ValueError) as exc:
        raise credentials_error(where, f"its certificates or keys cannot be used: {exc}") from None
    if not verify:
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    # Go's TLS, which every other Kubernetes client uses, makes no RFC 5280 strict checks.
    context.verify_flags &= ~ssl.VERIFY_X509_STRICT
    return context


def _load_chain(context: ssl.SSLContext, certificate: Source, key: Source) -> None:
    """``load_cert_chain`` reads files only: data goes through a private directory that
    is removed as soon as the chain is loaded."""
    with tempfile.TemporaryDirectory(prefix="volsched-credentials-") as private:

        def as_file(pair: Source, name: str) -> str | None:
            if pair[0] is None:
                return pair[1]
            target = Path(private) / name
            target.write_bytes(pair[0])
            return str(target)

        chain = as_file(certificate, "certificate.pem")
        context.load_cert_chain(str(chain), keyfile=as_file(key, "key.pem"))


def _authorization(
    user: Mapping[str, Any],
    at: str,
    where: str,
    field: Callable[[Mapping[str, Any], str, str, type], Any],
    path: Callable[[Mapping[str, Any], str, str], str | None],
) -> Callable[[], str] | None:
    token = field(user, at, "token", str)
    if token:
        header = f"Bearer {token}"
        return lambda: header
    token_file = path(user, at, "tokenFile")
    if token_file:
        return TokenFile(token_file, where)
    username, password = user.get("username"), user.get("password")
    if username is not None and password is not None:
        pair = f"{username}:{password}".encode()
        header = "Basic " + base64.b64encode(pair).decode("ascii")
        return lambda: header
    return None
