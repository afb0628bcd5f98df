"""Credentials read as client-go reads them: which header each kubeconfig user gives,
which TLS settings each cluster gives, token files read again as they rotate, the
service account, a plugin's user left to kubernetes-asyncio — and one ``ConfigError``
naming the field for anything that cannot be used."""

from __future__ import annotations

import base64
import json
import ssl
import stat
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from volsched.cache.errors import ConfigError
from volsched.daemon.kube.credentials import TokenFile, from_kubeconfig, in_cluster
from volsched.daemon.kube.kubeconfig import connect
from volsched.emulator.certificates import make_serving_certificates

CERTIFICATES = make_serving_certificates()


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def kubeconfig(cluster: dict[str, Any], user: dict[str, Any] | None) -> dict[str, Any]:
    context: dict[str, Any] = {"cluster": "c"}
    if user is not None:
        context["user"] = "u"
    return {
        "clusters": [{"name": "c", "cluster": {"server": "https://10.0.0.1:6443", **cluster}}],
        "users": [{"name": "u", "user": user}] if user is not None else [],
        "contexts": [{"name": "x", "context": context}],
        "current-context": "x",
    }


def basic(user: str, password: str) -> str:
    return "Basic " + _b64(f"{user}:{password}".encode())


# (case, user, the Authorization header it gives)
HEADERS = [
    ("no user: anonymous", None, None),
    ("a user with nothing", {}, None),
    ("a token", {"token": "abc"}, "Bearer abc"),
    ("a token wins over a token file", {"token": "abc", "tokenFile": "token"}, "Bearer abc"),
    ("a token file, its line break dropped", {"tokenFile": "token"}, "Bearer from-file"),
    (
        "a username and password",
        {"username": "ann", "password": "s3:cret"},
        basic("ann", "s3:cret"),
    ),
    (
        "a token wins over a password",
        {"token": "abc", "username": "a", "password": "b"},
        "Bearer abc",
    ),
    ("a username without a password", {"username": "ann"}, None),
]


@pytest.mark.parametrize(("case", "user", "header"), HEADERS, ids=[c[0] for c in HEADERS])
def test_the_header_each_user_gives(
    case: str, user: dict[str, Any] | None, header: str | None, tmp_path: Path
) -> None:
    (tmp_path / "token").write_text("from-file\n")
    credentials = from_kubeconfig(kubeconfig({}, user), "kc", None, tmp_path)
    given = credentials.authorization() if credentials.authorization else None
    assert given == header


# (case, cluster fields, verify mode, server name, proxy, server)
CLUSTERS = [
    ("system CAs", {}, ssl.CERT_REQUIRED, None, None, "https://10.0.0.1:6443"),
    ("no verification", {"insecure-skip-tls-verify": True}, ssl.CERT_NONE, None, None, "https://10.0.0.1:6443"),
    ("another server name", {"tls-server-name": "api.local"}, ssl.CERT_REQUIRED, "api.local", None, "https://10.0.0.1:6443"),
    ("a proxy", {"proxy-url": "http://proxy:3128"}, ssl.CERT_REQUIRED, None, "http://proxy:3128", "https://10.0.0.1:6443"),
    ("a trailing slash", {"server": "https://10.0.0.1:6443/"}, ssl.CERT_REQUIRED, None, None, "https://10.0.0.1:6443"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("case", "cluster", "verify", "server_name", "proxy", "server"),
    CLUSTERS,
    ids=[c[0] for c in CLUSTERS],
)
def test_the_tls_settings_each_cluster_gives(
    case: str,
    cluster: dict[str, Any],
    verify: ssl.VerifyMode,
    server_name: str | None,
    proxy: str | None,
    server: str,
) -> None:
    credentials = from_kubeconfig(kubeconfig(cluster, None), "kc", None, Path("/"))
    assert credentials.tls is not None
    assert credentials.tls.verify_mode == verify
    assert (credentials.server_name, credentials.proxy, credentials.server) == (
        server_name,
        proxy,
        server,
    )


def test_an_http_server_has_no_tls() -> None:
    config = kubeconfig({"server": "http://127.0.0.1:8080"}, {"token": "t"})
    assert from_kubeconfig(config, "kc", None, Path("/")).tls is None


def test_a_ca_and_client_certificate_given_as_data_or_as_files(tmp_path: Path) -> None:
    (tmp_path / "ca.pem").write_bytes(CERTIFICATES.authority_pem)
    (tmp_path / "tls.crt").write_bytes(CERTIFICATES.certificate_pem)
    (tmp_path / "tls.key").write_bytes(CERTIFICATES.key_pem)
    as_data = kubeconfig(
        {"certificate-authority-data": _b64(CERTIFICATES.authority_pem)},
        {
            "client-certificate-data": _b64(CERTIFICATES.certificate_pem),
            "client-key-data": _b64(CERTIFICATES.key_pem),
        },
    )
    as_files = kubeconfig(
        {"certificate-authority": "ca.pem"},
        {"client-certificate": "tls.crt", "client-key": "tls.key"},
    )
    for config in (as_data, as_files):
        tls = from_kubeconfig(config, "kc", None, tmp_path).tls
        assert tls is not None
        subjects = [dict(item[0] for item in ca["subject"]) for ca in tls.get_ca_certs()]
        assert subjects == [{"commonName": "kubernetes"}]  # that CA only, not the system's


# (case, cluster fields, user, what the one error says)
BAD = [
    ("a token that is not text", {}, {"token": 7}, "users[u].user.token: must be a str"),
    ("a missing token file", {}, {"tokenFile": "nope"}, "nope: No such file or directory"),
    ("an empty token file", {}, {"tokenFile": "empty"}, "not a token (the file is empty)"),
    ("a token file that is a directory", {}, {"tokenFile": "."}, "a directory, not a regular file"),
    ("client key data not base64", {}, {"client-certificate-data": "AA==", "client-key-data": "!!"}, "users[u].user.client-key-data: not base64"),
    ("a key that does not match", {}, {"client-certificate-data": _b64(CERTIFICATES.authority_pem), "client-key-data": _b64(CERTIFICATES.key_pem)}, "its certificates or keys cannot be used"),
    ("a missing CA file", {"certificate-authority": "nope.pem"}, None, "its certificates or keys cannot be used"),
    ("verification switch not a boolean", {"insecure-skip-tls-verify": "yes"}, None, "insecure-skip-tls-verify: must be a bool"),
]  # fmt: skip


@pytest.mark.parametrize(("case", "cluster", "user", "error"), BAD, ids=[c[0] for c in BAD])
def test_credentials_that_cannot_be_used(
    case: str, cluster: dict[str, Any], user: dict[str, Any] | None, error: str, tmp_path: Path
) -> None:
    (tmp_path / "empty").write_text("\n")
    with pytest.raises(ConfigError) as raised:
        from_kubeconfig(kubeconfig(cluster, user), "my-kubeconfig", None, tmp_path)
    assert str(raised.value).startswith("my-kubeconfig: cannot load Kubernetes credentials: ")
    assert error in str(raised.value)


def test_a_token_file_is_read_again_after_a_minute(tmp_path: Path) -> None:
    """A projected token the kubelet rotates is picked up; one that cannot be read
    again keeps the token read before."""
    path = tmp_path / "token"
    path.write_text("first")
    now = [100.0]
    token = TokenFile(str(path), "kc", clock=lambda: now[0])
    path.write_text("second")
    now[0] += 59.0
    assert token() == "Bearer first"
    now[0] += 1.0
    assert token() == "Bearer second"
    path.unlink()
    now[0] += 60.0
    assert token() == "Bearer second"


def test_the_service_account_of_a_pod(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_bytes(CERTIFICATES.authority_pem)
    (tmp_path / "token").write_text("sa-token")
    environ = {"KUBERNETES_SERVICE_HOST": "fd00::1", "KUBERNETES_SERVICE_PORT": "443"}
    credentials = in_cluster(environ, tmp_path)
    assert credentials.server == "https://[fd00::1]:443"
    assert credentials.authorization is not None
    assert credentials.authorization() == "Bearer sa-token"
    with pytest.raises(ConfigError, match="KUBERNETES_SERVICE_HOST and KUBERNETES_SERVICE_PORT"):
        in_cluster({}, tmp_path)
    with pytest.raises(ConfigError, match=r"ca\.crt: no such file"):
        in_cluster(environ, tmp_path / "elsewhere")


def test_a_context_naming_a_user_that_does_not_exist(tmp_path: Path) -> None:
    config = kubeconfig({}, {"token": "t"})
    config["users"] = []
    path = tmp_path / "kc"
    path.write_text(yaml.safe_dump(config))
    with pytest.raises(ConfigError, match='context "x" names user "u", which does not exist'):
        import asyncio

        asyncio.run(connect(str(path)))


def _exec_plugin(tmp_path: Path) -> Path:
    plugin = tmp_path / "plugin"
    credential = {
        "apiVersion": "client.authentication.k8s.io/v1",
        "kind": "ExecCredential",
        "status": {"token": "from-plugin"},
    }
    plugin.write_text(f"#!{sys.executable}\nprint({json.dumps(json.dumps(credential))})\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    return plugin


async def test_a_user_an_exec_plugin_authenticates_goes_to_kubernetes_asyncio(
    tmp_path: Path,
) -> None:
    user = {
        "exec": {
            "apiVersion": "client.authentication.k8s.io/v1",
            "command": str(_exec_plugin(tmp_path)),
            "interactiveMode": "Never",
        }
    }
    path = tmp_path / "kc"
    path.write_text(yaml.safe_dump(kubeconfig({"server": "http://127.0.0.1:1"}, user)))
    connection = await connect(str(path))
    try:
        headers = await connection.headers("application/json", "application/json")
        assert headers["Authorization"] == "Bearer from-plugin"
        assert connection.host == "http://127.0.0.1:1"
    finally:
        await connection.close()


def test_common_credentials_do_not_load_kubernetes_asyncio(tmp_path: Path) -> None:
    """Its package imports every generated model: a third of the daemon's start-up."""
    path = tmp_path / "kc"
    path.write_text(yaml.safe_dump(kubeconfig({"server": "http://127.0.0.1:1"}, {"token": "t"})))
    script = (
        "import asyncio, sys\n"
        "from volsched.daemon.kube.client import KubeClient\n"
        "async def main():\n"
        f"    client = await KubeClient.connect({str(path)!r})\n"
        "    await client.close()\n"
        "asyncio.run(main())\n"
        "print('kubernetes_asyncio' in sys.modules)\n"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    ).stdout.strip()
    assert loaded == "False"
