"""Start and stop a real Kubernetes control plane on 127.0.0.1 from prebuilt binaries.

Why a real one: the API emulator in ``emulator/`` is what volsched is tested against, so it
cannot also be the judge of what Kubernetes does. This module runs the genuine etcd,
kube-apiserver, kube-controller-manager (PersistentVolume binder only) and, optionally,
kube-scheduler, so tests and recordings compare volsched with the real thing.

Everything binds to 127.0.0.1 on ports picked at start, so several control planes (pytest-xdist
workers) can run side by side. Every process's output goes to ``<workdir>/logs/<name>.log``
and is kept after :meth:`ControlPlane.stop`, for post-mortems and for the recorder, which reads
kube-scheduler's ``-v=10`` log.
"""

from __future__ import annotations

import datetime as dt
import ipaddress
import json
import os
import secrets
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import IO, Any

import yaml
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

ASSETS_ENV = "VOLSCHED_KUBE_ASSETS"
BINARIES = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")
LOCALHOST = "127.0.0.1"


def assets_dir() -> Path | None:
    """The directory named by ``VOLSCHED_KUBE_ASSETS`` if it holds all four executables.

    ``None`` (rather than an error) lets tests skip cleanly on machines without the binaries.
    """
    value = os.environ.get(ASSETS_ENV)
    if not value:
        return None
    path = Path(value)
    if all(os.access(path / name, os.X_OK) for name in BINARIES):
        return path
    return None


def free_port() -> int:
    """A port on 127.0.0.1 that was free a moment ago (bind to port 0 and let the kernel pick)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((LOCALHOST, 0))
        port: int = sock.getsockname()[1]
        return port


class ApiError(RuntimeError):
    """A non-2xx answer from kube-apiserver; ``status`` lets callers accept 404 or 409."""

    def __init__(self, status: int, method: str, path: str, body: str) -> None:
        super().__init__(f"{method} {path}: HTTP {status}: {body[:500]}")
        self.status = status


# --------------------------------------------------------------------------- PKI


@dataclass(frozen=True)
class _KeyPair:
    key: rsa.RSAPrivateKey
    cert: x509.Certificate


def _new_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


def _cert(
    subject: str,
    key: rsa.RSAPrivateKey,
    issuer: _KeyPair | None,
    *,
    server: bool = False,
    client: bool = False,
) -> x509.Certificate:
    """A certificate for ``key``; self-signed CA when ``issuer`` is None."""
    now = dt.datetime.now(dt.UTC)
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, subject)])
    builder = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(issuer.cert.subject if issuer else name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - dt.timedelta(minutes=5))
        .not_valid_after(now + dt.timedelta(days=30))
    )
    if issuer is None:
        builder = builder.add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        builder = builder.add_extension(
            x509.KeyUsage(
                digital_signature=True,
                content_commitment=False,
                key_encipherment=False,
                data_encipherment=False,
                key_agreement=False,
                key_cert_sign=True,
                crl_sign=True,
                encipher_only=False,
                decipher_only=False,
            ),
            True,
        )
    else:
        usages = []
        if server:
            usages.append(ExtendedKeyUsageOID.SERVER_AUTH)
            builder = builder.add_extension(
                x509.SubjectAlternativeName(
                    [
                        x509.IPAddress(ipaddress.ip_address(LOCALHOST)),
                        x509.DNSName("localhost"),
                    ]
                ),
                False,
            )
        if client:
            usages.append(ExtendedKeyUsageOID.CLIENT_AUTH)
        builder = builder.add_extension(x509.ExtendedKeyUsage(usages), False)
    signer = issuer.key if issuer else key
    return builder.sign(signer, hashes.SHA256())


def _write_pair(directory: Path, stem: str, pair: _KeyPair) -> None:
    (directory / f"{stem}.crt").write_bytes(pair.cert.public_bytes(serialization.Encoding.PEM))
    key_path = directory / f"{stem}.key"
    key_path.write_bytes(
        pair.key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    key_path.chmod(0o600)


def _generate_pki(directory: Path) -> str:
    """CA, apiserver serving cert, front-proxy pair, service-account keys, admin token.

    Returns the admin bearer token. The front-proxy (requestheader) flags only stop
    kube-scheduler and kube-controller-manager from logging a missing-CA error every second.
    """
    directory.mkdir(parents=True, exist_ok=True)
    ca_key = _new_key()
    ca = _KeyPair(ca_key, _cert("volsched-oracle-ca", ca_key, None))
    _write_pair(directory, "ca", ca)
    server_key = _new_key()
    _write_pair(
        directory,
        "apiserver",
        _KeyPair(server_key, _cert("kube-apiserver", server_key, ca, server=True)),
    )
    fp_ca_key = _new_key()
    fp_ca = _KeyPair(fp_ca_key, _cert("volsched-oracle-front-proxy-ca", fp_ca_key, None))
    _write_pair(directory, "front-proxy-ca", fp_ca)
    fp_key = _new_key()
    _write_pair(
        directory,
        "front-proxy-client",
        _KeyPair(fp_key, _cert("front-proxy-client", fp_key, fp_ca, client=True)),
    )
    sa_key = _new_key()
    (directory / "sa.key").write_bytes(
        sa_key.private_bytes(
            serialization.Encoding.PEM,
            serialization.PrivateFormat.TraditionalOpenSSL,
            serialization.NoEncryption(),
        )
    )
    (directory / "sa.pub").write_bytes(
        sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
    )
    token = secrets.token_hex(16)
    (directory / "tokens.csv").write_text(f"{token},oracle-admin,oracle-admin-uid,system:masters\n")
    return token


# --------------------------------------------------------------------------- control plane


class ControlPlane:
    """etcd + kube-apiserver + kube-controller-manager (+ kube-scheduler), all on 127.0.0.1.

    Use as a context manager (``with ControlPlane(assets) as cp:``) or call :meth:`start` and
    :meth:`stop`; :meth:`stop` ends every process this object started, even after a failed
    start. ``scheduler_config`` (a KubeSchedulerConfiguration as a dict) starts kube-scheduler
    too; its ``clientConnection.kubeconfig`` is pointed at the admin kubeconfig.
    """

    def __init__(
        self,
        assets: Path,
        workdir: Path | None = None,
        *,
        scheduler_config: dict[str, Any] | None = None,
        scheduler_verbosity: int = 10,
        start_timeout: float = 90.0,
    ) -> None:
        self.assets = Path(assets)
        self._own_workdir = workdir is None
        self.workdir = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="volsched-kube-"))
        self.logs = self.workdir / "logs"
        self.scheduler_config = scheduler_config
        self.scheduler_verbosity = scheduler_verbosity
        self.start_timeout = start_timeout
        self.token = ""
        self.api_port = 0
        self.kubeconfig = self.workdir / "admin.kubeconfig"
        self._procs: dict[str, subprocess.Popen[bytes]] = {}
        self._log_files: dict[str, IO[bytes]] = {}
        self._ssl: ssl.SSLContext | None = None

    # ----------------------------------------------------------------- lifecycle

    @property
    def server(self) -> str:
        return f"https://{LOCALHOST}:{self.api_port}"

    def log_path(self, name: str) -> Path:
        """Where process ``name``'s combined stdout/stderr is kept."""
        return self.logs / f"{name}.log"

    def __enter__(self) -> ControlPlane:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    def start(self) -> None:
        """Start everything and wait until it serves; on any failure stop what was started."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        self.logs.mkdir(parents=True, exist_ok=True)
        pki = self.workdir / "pki"
        self.token = _generate_pki(pki)
        self._ssl = ssl.create_default_context(cafile=str(pki / "ca.crt"))
        etcd_client, etcd_peer, self.api_port = free_port(), free_port(), free_port()
        self._write_kubeconfig()

        etcd_url = f"http://{LOCALHOST}:{etcd_client}"
        peer_url = f"http://{LOCALHOST}:{etcd_peer}"
        self._spawn(
            "etcd",
            [
                "--name=oracle",
                f"--data-dir={self.workdir / 'etcd-data'}",
                f"--listen-client-urls={etcd_url}",
                f"--advertise-client-urls={etcd_url}",
                f"--listen-peer-urls={peer_url}",
                f"--initial-advertise-peer-urls={peer_url}",
                f"--initial-cluster=oracle={peer_url}",
                "--logger=zap",
                # etcd 3.4 lacks RequestWatchProgress; periodic progress keeps the watch cache fresh.
                "--experimental-watch-progress-notify-interval=5s",
            ],
        )
        self._wait_url(f"{etcd_url}/health", "etcd", None)

        self._spawn(
            "kube-apiserver",
            [
                f"--etcd-servers={etcd_url}",
                f"--bind-address={LOCALHOST}",
                f"--advertise-address={LOCALHOST}",
                f"--secure-port={self.api_port}",
                f"--tls-cert-file={pki / 'apiserver.crt'}",
                f"--tls-private-key-file={pki / 'apiserver.key'}",
                f"--client-ca-file={pki / 'ca.crt'}",
                f"--token-auth-file={pki / 'tokens.csv'}",
                f"--service-account-key-file={pki / 'sa.pub'}",
                f"--service-account-signing-key-file={pki / 'sa.key'}",
                f"--service-account-issuer={self.server}",
                "--service-cluster-ip-range=10.0.0.0/24",
                "--authorization-mode=RBAC",
                # A loopback advertise address cannot go into the kubernetes Endpoints.
                "--endpoint-reconciler-type=none",
                f"--requestheader-client-ca-file={pki / 'front-proxy-ca.crt'}",
                "--requestheader-allowed-names=front-proxy-client",
                "--requestheader-username-headers=X-Remote-User",
                "--requestheader-group-headers=X-Remote-Group",
                "--requestheader-extra-headers-prefix=X-Remote-Extra-",
                f"--proxy-client-cert-file={pki / 'front-proxy-client.crt'}",
                f"--proxy-client-key-file={pki / 'front-proxy-client.key'}",
            ],
        )
        self._wait_url(f"{self.server}/readyz", "kube-apiserver", self._ssl)

        kubeconfig = str(self.kubeconfig)
        self._spawn(
            "kube-controller-manager",
            [
                f"--kubeconfig={kubeconfig}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                f"--bind-address={LOCALHOST}",
                f"--secure-port={free_port()}",
                "--controllers=persistentvolume-binder-controller",
                # The PV binder at a client rate a busy cluster's would have: at the
                # default (20/s) it, not the scheduler, sets the pace of claim pods.
                "--kube-api-qps=300",
                "--kube-api-burst=300",
                # The PV binder's own SA may update persistentvolumes/status; the KCM role may not.
                "--use-service-account-credentials=true",
                "--leader-elect=false",
                "-v=4",
            ],
        )
        if self.scheduler_config is not None:
            self.start_scheduler(self.scheduler_config, self.scheduler_verbosity)

    def start_scheduler(self, config: dict[str, Any], verbosity: int = 10) -> None:
        """Start kube-scheduler with ``config``; its log is ``log_path("kube-scheduler")``."""
        config = json.loads(json.dumps(config))
        config.setdefault("clientConnection", {})["kubeconfig"] = str(self.kubeconfig)
        config.setdefault("leaderElection", {})["leaderElect"] = False
        path = self.workdir / "kube-scheduler-config.yaml"
        path.write_text(yaml.safe_dump(config, sort_keys=False))
        kubeconfig = str(self.kubeconfig)
        port = free_port()
        self._spawn(
            "kube-scheduler",
            [
                f"--config={path}",
                f"--authentication-kubeconfig={kubeconfig}",
                f"--authorization-kubeconfig={kubeconfig}",
                f"--bind-address={LOCALHOST}",
                f"--secure-port={port}",
                "--leader-elect=false",
                f"-v={verbosity}",
            ],
        )
        insecure = ssl.create_default_context()
        insecure.check_hostname = False
        insecure.verify_mode = ssl.CERT_NONE  # its serving cert is self-signed at start
        self._wait_url(f"https://{LOCALHOST}:{port}/healthz", "kube-scheduler", insecure)

    def stop(self) -> None:
        """SIGTERM every started process (newest first), SIGKILL any still alive after 20 s."""
        for name in reversed(list(self._procs)):
            proc = self._procs.pop(name)
            if proc.poll() is None:
                proc.send_signal(signal.SIGTERM)
                try:
                    proc.wait(timeout=20)
                except subprocess.TimeoutExpired:
                    proc.kill()
                    proc.wait(timeout=10)
        for handle in self._log_files.values():
            handle.close()
        self._log_files.clear()
        if self._own_workdir:
            # A work dir of our own (etcd's data, tens of MB a run) goes; a given one,
            # with its logs, stays.
            shutil.rmtree(self.workdir, ignore_errors=True)

    # ----------------------------------------------------------------- helpers

    def _spawn(self, name: str, args: list[str]) -> None:
        handle = self.log_path(name).open("ab")
        self._log_files[name] = handle
        self._procs[name] = subprocess.Popen(
            [str(self.assets / name), *args],
            stdout=handle,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            cwd=self.workdir,
            start_new_session=True,  # a Ctrl-C in the terminal must not skip our orderly stop
        )

    def _wait_url(self, url: str, name: str, context: ssl.SSLContext | None) -> None:
        deadline = time.monotonic() + self.start_timeout
        headers = {"Authorization": f"Bearer {self.token}"} if url.startswith(self.server) else {}
        last = ""
        while time.monotonic() < deadline:
            proc = self._procs[name]
            if proc.poll() is not None:
                raise RuntimeError(
                    f"{name} exited with {proc.returncode}; see {self.log_path(name)}:\n"
                    + self._tail(name)
                )
            try:
                request = urllib.request.Request(url, headers=headers)
                with urllib.request.urlopen(request, timeout=5, context=context) as response:
                    if response.status == 200:
                        return
            except (OSError, urllib.error.URLError) as error:
                last = str(error)
            time.sleep(0.25)
        raise TimeoutError(f"{name} not ready at {url} ({last}); see {self.log_path(name)}")

    def _tail(self, name: str, lines: int = 20) -> str:
        try:
            return "\n".join(self.log_path(name).read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return ""

    def _write_kubeconfig(self) -> None:
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [
                {
                    "name": "oracle",
                    "cluster": {
                        "server": self.server,
                        "certificate-authority": str(self.workdir / "pki" / "ca.crt"),
                    },
                }
            ],
            "users": [{"name": "admin", "user": {"token": self.token}}],
            "contexts": [{"name": "oracle", "context": {"cluster": "oracle", "user": "admin"}}],
            "current-context": "oracle",
        }
        self.kubeconfig.write_text(yaml.safe_dump(config, sort_keys=False))
        self.kubeconfig.chmod(0o600)

    # ----------------------------------------------------------------- API

    def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        *,
        content_type: str = "application/json",
    ) -> Any:
        """One JSON call to kube-apiserver as the admin (system:masters); raises :class:`ApiError`."""
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(
            self.server + path,
            data=data,
            method=method,
            headers={
                "Authorization": f"Bearer {self.token}",
                "Accept": "application/json",
                "Content-Type": content_type,
            },
        )
        try:
            with urllib.request.urlopen(request, timeout=30, context=self._ssl) as response:
                raw = response.read()
        except urllib.error.HTTPError as error:
            raise ApiError(
                error.code, method, path, error.read().decode(errors="replace")
            ) from None
        return json.loads(raw) if raw else None

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def metrics_text(self) -> str:
        """kube-apiserver's /metrics, as Prometheus text."""
        return self._text("/metrics", timeout=30)

    def readyz(self) -> str:
        """kube-apiserver's /readyz body ("ok" when ready)."""
        return self._text("/readyz", timeout=10)

    def _text(self, path: str, timeout: float) -> str:
        """A plain-text endpoint of kube-apiserver, read as the admin."""
        request = urllib.request.Request(
            self.server + path, headers={"Authorization": f"Bearer {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=timeout, context=self._ssl) as response:
            text: str = response.read().decode()
            return text
