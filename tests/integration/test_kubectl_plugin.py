"""``kubectl volsched`` as kubectl runs it: the installed ``kubectl-volsched`` script, with
kubectl's flags wherever the user put them and the cluster found through $KUBECONFIG."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from volsched.daemon.cli.kubectl_plugin import UsageError, main, volsched_argv
from volsched.emulator import ApiServer, ControllerSettings
from volsched.emulator.kubeconfig import kubeconfig

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["explain", "web"], ["explain", "web"]),
        (
            ["--context", "prod", "explain", "web", "-n", "shop", "-o", "json"],
            ["explain", "web", "-o", "json", "--context", "prod", "--namespace", "shop"],
        ),
        (
            ["--kubeconfig=/k", "-nshop", "simulate", "--seed", "1"],
            ["simulate", "--seed", "1", "--kubeconfig", "/k", "--namespace", "shop"],
        ),
        (
            ["snapshot", "--namespace=shop", "-o", "out.yaml", "--context=dev"],
            ["snapshot", "-o", "out.yaml", "--context", "dev", "--namespace", "shop"],
        ),
        (
            ["--request-timeout=5s", "simulate"],
            ["simulate", "--request-timeout", "5s"],
        ),
    ],
)
def test_kubectl_flags_are_taken_from_wherever_they_stand(
    argv: list[str], expected: list[str]
) -> None:
    assert volsched_argv(argv) == expected


@pytest.mark.parametrize(
    "argv", [["run"], ["migrate"], ["--context", "prod"], ["webhook", "-n", "x"]]
)
def test_only_the_read_only_commands_are_offered(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(UsageError):
        volsched_argv(argv)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("kubectl volsched: ") and "use one of snapshot, simulate, explain" in err
    assert len(err.splitlines()) == 1


@pytest.fixture
async def server() -> AsyncIterator[ApiServer]:
    api = ApiServer(controllers=ControllerSettings.none())
    await api.start()
    api.load(doc for doc in yaml.safe_load_all((ROOT / "examples" / "cluster.yaml").read_text()))
    try:
        yield api
    finally:
        await api.stop()


def write(path: Path, data: dict[str, Any]) -> str:
    path.write_text(yaml.safe_dump(data))
    return str(path)


async def test_the_installed_plugin_reads_the_cluster_of_kubeconfig(
    server: ApiServer, tmp_path: Path
) -> None:
    # $KUBECONFIG lists a missing file (skipped), then the emulator's file whose current
    # context's namespace is batch, then one whose current context points nowhere: the
    # first current-context wins, as kubectl merges them.
    emulator = write(tmp_path / "emulator", kubeconfig(server.url, namespace="batch"))
    elsewhere = kubeconfig("http://127.0.0.1:1")
    elsewhere["clusters"][0]["name"] = elsewhere["contexts"][0]["name"] = "elsewhere"
    elsewhere["contexts"][0]["context"]["cluster"] = "elsewhere"
    elsewhere["current-context"] = "elsewhere"
    listed = [str(tmp_path / "missing"), emulator, write(tmp_path / "elsewhere", elsewhere)]
    script = Path(sys.executable).parent / "kubectl-volsched"
    assert script.is_file(), "the package installs kubectl-volsched"
    process = await asyncio.create_subprocess_exec(
        str(script),
        "explain",
        "report",
        "-o",
        "json",
        env={**os.environ, "KUBECONFIG": os.pathsep.join(listed)},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(process.communicate(), 60)
    assert process.returncode == 0, err.decode()
    # No storage CRD is installed here: discovery says so and nothing more is asked, or said.
    assert err == b""
    for group in ("volsched.io/v1alpha1", "longhorn.io/v1beta2"):
        assert server.faults.requests("GET", f"^/apis/{group}$")
        assert not server.faults.requests("GET", f"^/apis/{group}/")
    report = json.loads(out)
    assert report["pod"] == "batch/report"
    assert report["message"].startswith("0/3 nodes are available")
    assert {row["node"]: row["result"] for row in report["nodes"]} == {
        "node-a1": "rejected",
        "node-b1": "rejected",
        "node-b2": "rejected",
    }
