"""HTTPS for the daemon: a certificate pair from files, reloaded when they change, or a
self-signed pair made at start (as kube-scheduler does when given none).

Reloading works per connection: the served context's SNI callback looks at the files'
modification times and hands the handshake a context built from the new pair, so a
renewed certificate is used by the next connection without a restart.
"""

from __future__ import annotations

import datetime
import ipaddress
import logging
import os
import socket
import ssl
import tempfile
from dataclasses import dataclass
from pathlib import Path

from volsched.cache.errors import ConfigError
from volsched.daemon.config.settings import AuthSettings

log = logging.getLogger("volsched.tls")


def self_signed_pair(directory: Path, hosts: list[str]) -> tuple[Path, Path]:
    """A fresh P-256 key and a one-year certificate for ``hosts`` in ``directory``."""
    # cryptography is loaded only by a daemon that makes its own pair.
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, f"volsched@{socket.gethostname()}")])
    alt: list[x509.GeneralName] = []
    for host in hosts:
        try:
            alt.append(x509.IPAddress(ipaddress.ip_address(host)))
        except ValueError:
            alt.append(x509.DNSName(host))
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=365))
        .add_extension(x509.SubjectAlternativeName(alt), critical=False)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path = directory / "volsched.crt"
    key_path = directory / "volsched.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    fd = os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as out:
        out.write(
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.PKCS8,
                serialization.NoEncryption(),
            )
        )
    return cert_path, key_path


@dataclass(slots=True)
class ReloadingContext:
    """The server SSLContext and the pair it was built from."""

    cert_file: Path
    key_file: Path
    client_ca_file: Path | None
    context: ssl.SSLContext
    _stamp: tuple[float, float] = (0.0, 0.0)
    _current: ssl.SSLContext | None = None

    def _build(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        try:
            context.load_cert_chain(self.cert_file, self.key_file)
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError(
                f"{self.cert_file}, {self.key_file}: cannot load the certificate pair: {exc}"
            ) from None
        if self.client_ca_file is not None:
            try:
                context.load_verify_locations(cafile=self.client_ca_file)
            except (OSError, ssl.SSLError) as exc:
                raise ConfigError(f"{self.client_ca_file}: cannot load the CA: {exc}") from None
            context.verify_mode = ssl.CERT_OPTIONAL
        return context

    def _files_stamp(self) -> tuple[float, float]:
        try:
            return (os.stat(self.cert_file).st_mtime, os.stat(self.key_file).st_mtime)
        except OSError:
            return self._stamp

    def refresh(self) -> ssl.SSLContext:
        """The context for the next handshake: rebuilt when either file changed."""
        stamp = self._files_stamp()
        if self._current is None or stamp != self._stamp:
            try:
                self._current = self._build()
                if self._stamp != (0.0, 0.0):
                    log.info("reloaded the serving certificate from %s", self.cert_file)
            except ConfigError as exc:
                if self._current is None:
                    raise
                log.warning("keeping the previous certificate: %s", exc)
            self._stamp = stamp
        assert self._current is not None
        return self._current


def serving_context(settings: AuthSettings, address: str) -> ssl.SSLContext:
    """The SSLContext to serve with; it follows changes to the certificate files."""
    if settings.cert_file and settings.key_file:
        cert, key = Path(settings.cert_file), Path(settings.key_file)
    else:
        host = address.rpartition(":")[0].strip("[]")
        hosts = ["localhost", "127.0.0.1"] + ([host] if host and host != "0.0.0.0" else [])
        directory = Path(tempfile.mkdtemp(prefix="volsched-serving-"))
        cert, key = self_signed_pair(directory, hosts)
        log.info("no certificate given: serving with a self-signed one (%s)", cert)
    ca = Path(settings.client_ca_file) if settings.client_ca_file else None
    holder = ReloadingContext(cert, key, ca, ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER))
    outer = holder.refresh()

    def pick(sock: ssl.SSLObject | ssl.SSLSocket, _name: str | None, _ctx: ssl.SSLContext) -> None:
        sock.context = holder.refresh()

    outer.sni_callback = pick
    holder.context = outer
    return outer
