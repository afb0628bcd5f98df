"""``volsched run`` with a bad address or kubeconfig: one line saying what is wrong,
exit status 2, no traceback."""

from __future__ import annotations

import asyncio
import socket
import sys
from pathlib import Path

import pytest
import yaml

from volsched.daemon.cli.main import main
from volsched.emulator import ApiServer, write_kubeconfig


def config(tmp_path: Path, address: str, **http: object) -> str:
    path = tmp_path / "config.yaml"
    path.write_text(
        yaml.safe_dump(
            {"database": {"path": str(tmp_path / "v.db")}, "http": {"address": address, **http}}
        )
    )
    return str(path)


@pytest.mark.parametrize(
    ("address", "error"),
    [
        ("10351", "http.address: must be HOST:PORT"),
        ("127.0.0.1:http", "http.address: port must be a number"),
        ("127.0.0.1:70000", "http.address: port must be between 0 and 65535"),
        ("127.0.0.1:", "http.address: port must be a number"),
    ],
)
def test_bad_addresses(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], address: str, error: str
) -> None:
    status = main(["run", "--config", config(tmp_path, address)])
    err = capsys.readouterr().err
    assert status == 2
    assert error in err and len(err.strip().splitlines()) == 1


def test_authentication_off_on_all_interfaces_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = config(tmp_path, "0.0.0.0:10351", authentication={"enabled": False})
    assert main(["run", "--config", path]) == 2
    err = capsys.readouterr().err
    assert "http.authentication.enabled: may be false only when" in err


@pytest.mark.parametrize(
    ("content", "error"),
    [
        (None, "cannot load Kubernetes credentials"),
        ("", "cannot load Kubernetes credentials"),
        ("clusters: [oops", "cannot load Kubernetes credentials"),
        ("\xff\xfe", "cannot load Kubernetes credentials"),
    ],
)
def test_bad_kubeconfigs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, error: str
) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    if content is not None:
        kubeconfig.write_text(content, encoding="latin-1")
    status = main(
        ["run", "--config", config(tmp_path, "127.0.0.1:0"), "--kubeconfig", str(kubeconfig)]
    )
    err = capsys.readouterr().err
    assert status == 2, err
    assert error in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


@pytest.mark.parametrize("taken", [True, False])
async def test_port_in_use_or_host_unresolvable(tmp_path: Path, taken: bool) -> None:
    async with ApiServer() as server:
        kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server.url)
        with socket.socket() as holder:
            holder.bind(("127.0.0.1", 0))
            holder.listen()
            port = holder.getsockname()[1]
            address = f"127.0.0.1:{port}" if taken else "no-such-host.invalid:10351"
            process = await asyncio.create_subprocess_exec(
                sys.executable,
                "-m",
                "volsched.daemon.cli.main",
                "run",
                "--config",
                config(tmp_path, address),
                "--kubeconfig",
                str(kubeconfig),
                stderr=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.DEVNULL,
            )
            _, err = await asyncio.wait_for(process.communicate(), 60)
        text = err.decode()
        assert process.returncode == 2, text
        assert "Traceback" not in text
        assert f"http.address: cannot listen on {address}" in text
