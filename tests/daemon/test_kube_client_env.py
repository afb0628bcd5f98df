"""The API client reads the proxy and netrc environment once, not on every request."""

from __future__ import annotations

from pathlib import Path

import pytest

from volsched.daemon.kube.client import KubeClient
from volsched.daemon.kube.connection import environment_configures_http
from volsched.emulator import ApiServer, write_kubeconfig

CASES = [
    ("nothing set", {}, False, False),
    ("HTTPS_PROXY", {"HTTPS_PROXY": "http://proxy:3128"}, False, True),
    ("lower-case https_proxy", {"https_proxy": "http://proxy:3128"}, False, True),
    ("NO_PROXY alone still means the environment is read", {"NO_PROXY": "10.0.0.1"}, False, True),
    ("an empty proxy variable", {"HTTP_PROXY": ""}, False, False),
    ("a netrc file in HOME", {}, True, True),
]


@pytest.mark.parametrize(
    ("case", "environ", "netrc", "configures"), CASES, ids=[c[0] for c in CASES]
)
def test_environment_configures_http(
    case: str, environ: dict[str, str], netrc: bool, configures: bool, tmp_path: Path
) -> None:
    if netrc:
        (tmp_path / ".netrc").write_text("machine api login a password b\n")
    assert environment_configures_http({"HOME": str(tmp_path), **environ}) is configures


def test_a_netrc_named_by_the_environment_counts(tmp_path: Path) -> None:
    named = tmp_path / "credentials"
    named.write_text("machine api login a password b\n")
    environ = {"HOME": str(tmp_path / "empty"), "NETRC": str(named)}
    assert environment_configures_http(environ)


@pytest.mark.parametrize(("proxy", "trusted"), [(None, False), ("http://127.0.0.1:9", True)])
async def test_the_session_trusts_the_environment_only_when_it_says_something(
    proxy: str | None, trusted: bool, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTPS_PROXY", "HTTP_PROXY", "https_proxy", "http_proxy", "NETRC"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    if proxy is not None:
        monkeypatch.setenv("HTTPS_PROXY", proxy)
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    async with ApiServer() as server:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server.url)
        client = await KubeClient.connect(str(kubeconfig))
        try:
            assert client.connection.session.trust_env is trusted
            # Requests work either way (the proxy is bypassed for the server's address).
            items, _ = await client.list("Node")
            assert items == []
        finally:
            await client.close()
