"""``snapshot``, ``simulate`` and ``explain`` against a live cluster (the emulator over
real HTTP), as a user runs them: the snapshot decides what the files it came from
decide, ``explain`` says node by node why a pod is pending, nothing is ever written, and
every input mistake is one line with exit status 2."""

from __future__ import annotations

import asyncio
import base64
import io
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import support
from tests.integration.conftest import crds
from volsched.daemon.cli import live
from volsched.daemon.cli.live import Progress, list_cluster, read_only_client
from volsched.daemon.cli.main import main
from volsched.daemon.kube.kubeconfig_merging import load_kubeconfig
from volsched.daemon.kube.ownership import NotOwned
from volsched.emulator import ApiServer, ControllerSettings, write_kubeconfig
from volsched.emulator.faults import WRITE_METHODS
from volsched.emulator.longhorn import longhorn_crds

ROOT = Path(__file__).resolve().parents[2]
SECRET = "hunter2-s3cr3t"
# The examples' clocks (the hyperconverged one has time-based replica rules).
NOW = "2026-11-01T12:00:00Z"


def documents(path: Path) -> list[dict[str, Any]]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if isinstance(doc, dict)]


@pytest.fixture
async def server() -> AsyncIterator[ApiServer]:
    # No controllers: the cluster stays exactly as loaded while it is read.
    api = ApiServer(controllers=ControllerSettings.none())
    await api.start()
    api.load([*crds(), *longhorn_crds()])
    try:
        yield api
    finally:
        await api.stop()


async def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """The command line in a thread of its own, as the emulator serves on this loop."""
    status = await asyncio.to_thread(main, list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def secret_pod() -> list[dict[str, Any]]:
    """A pending pod with a secret in its env, args and command, the Secret itself and a
    ConfigMap holding it too."""
    pod = support.pod("leaky", cpu="100m")
    pod["spec"]["containers"][0].update(
        command=["/bin/app", f"--password={SECRET}"],
        args=[f"--token={SECRET}"],
        env=[{"name": "PASSWORD", "value": SECRET}],
    )
    secret = {
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {"name": "creds", "namespace": "default"},
        "data": {"password": base64.b64encode(SECRET.encode()).decode()},
        "stringData": {"password": SECRET},
    }
    config = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "settings", "namespace": "default"},
        "data": {"password": SECRET},
    }
    return [pod, secret, config]


@pytest.mark.parametrize("example", ["cluster.yaml", "hyperconverged.yaml", "longhorn.yaml"])
async def test_a_snapshot_decides_as_the_objects_it_was_taken_from(
    server: ApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str], example: str
) -> None:
    path = ROOT / "examples" / example
    server.load([*documents(path), *secret_pod()])
    originals = tmp_path / "originals.yaml"
    originals.write_text(path.read_text() + "\n---\n" + yaml.safe_dump_all(secret_pod()))
    kubeconfig = str(write_kubeconfig(tmp_path / "kubeconfig", server.url))
    snapshot = tmp_path / "snapshot.yaml"

    status, _, err = await cli(capsys, "snapshot", "--kubeconfig", kubeconfig, "-o", str(snapshot))
    assert status == 0, err
    text = snapshot.read_text()
    assert SECRET not in text
    assert base64.b64encode(SECRET.encode()).decode() not in text

    options = ("--seed", "7", "--now", NOW, "-o", "json")
    decided = []
    for source in ([str(originals)], [str(snapshot)], ["--kubeconfig", kubeconfig]):
        status, out, err = await cli(capsys, "simulate", *source, *options)
        assert status == 0, err
        decided.append(json.loads(out))
    assert decided[0]["pods"], "the example has pending pods"
    assert decided[1] == decided[0]
    assert decided[2] == decided[0]


async def test_explain_says_why_a_pod_is_pending_node_by_node(
    server: ApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    objects = documents(ROOT / "examples" / "cluster.yaml")
    # Another scheduler's pod: explain answers for any pod.
    [report] = [o for o in objects if o["kind"] == "Pod" and o["metadata"]["name"] == "report"]
    report["spec"]["schedulerName"] = "someone-else"
    server.load(objects)
    kubeconfig = str(write_kubeconfig(tmp_path / "kubeconfig", server.url, namespace="batch"))
    # A bare name is looked for in the context's namespace.
    status, out, err = await cli(
        capsys, "explain", "report", "--kubeconfig", kubeconfig, "-o", "json"
    )
    assert status == 0, err
    report = json.loads(out)
    assert report["pod"] == "batch/report"
    assert report["node"] is None
    reasons = {row["node"]: row["reasons"] for row in report["nodes"]}
    assert reasons == {
        "node-a1": ["Insufficient cpu"],
        "node-b1": ["Insufficient cpu"],
        "node-b2": ["node(s) had untolerated taint(s)"],
    }


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


async def test_nothing_is_written_even_by_a_client_whose_writes_all_fail(
    server: ApiServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Pages of two objects, so that every listing of more goes on with a continue token.
    monkeypatch.setattr(live, "PAGE_SIZE", 2)
    server.load([*documents(ROOT / "examples" / "cluster.yaml"), *secret_pod()])
    for method in WRITE_METHODS:
        server.faults.fail_next(method, ".", 500, times=1000, message="writes are refused")
    before = {
        (kind, o["metadata"].get("namespace"), o["metadata"]["name"]): o["metadata"][
            "resourceVersion"
        ]
        for kind in ("Pod", "PersistentVolumeClaim", "PersistentVolume", "Node")
        for o in server.list(kind)
    }
    kubeconfig = str(write_kubeconfig(tmp_path / "kubeconfig", server.url))
    snapshot = str(tmp_path / "snapshot.json")
    commands = [
        ("snapshot", "--kubeconfig", kubeconfig, "-o", snapshot),
        ("simulate", "--kubeconfig", kubeconfig, "-o", "json"),
        ("explain", "shop/postgres-0", "--kubeconfig", kubeconfig, "-o", "json"),
    ]
    for argv in commands:
        status, _, err = await cli(capsys, *argv)
        assert status == 0, err
        assert "listing" not in err  # a progress line only on a terminal
    # The commands' own client refuses a write unsent.
    async with read_only_client(load_kubeconfig([kubeconfig])) as client:
        with pytest.raises(NotOwned):
            await client.create("Event", {"metadata": {"name": "e"}}, "default")
        terminal = Terminal()
        objects = await list_cluster(client, Progress(terminal))
    assert {o["kind"] for o in objects} >= {"Pod", "Node", "PersistentVolume", "StorageClass"}
    assert "volsched: listing pods: 6" in terminal.getvalue()
    assert terminal.getvalue().endswith("\r\x1b[K")
    assert server.faults.requests("GET", r"/api/v1/pods\?.*continue=")
    assert server.faults.requests("POST") == []
    assert [r for r in server.faults.request_log if r.method in WRITE_METHODS] == []
    after = {
        (kind, o["metadata"].get("namespace"), o["metadata"]["name"]): o["metadata"][
            "resourceVersion"
        ]
        for kind in ("Pod", "PersistentVolumeClaim", "PersistentVolume", "Node")
        for o in server.list(kind)
    }
    assert after == before
    assert server.faults.pending_failures() == 4000


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        (
            ("snapshot", "--kubeconfig", "{missing}"),
            "cannot load Kubernetes credentials: No such file",
        ),
        (
            ("snapshot", "--kubeconfig", "{kubeconfig}", "--context", "prod"),
            'context "prod" does not exist',
        ),
        (
            ("simulate", "--kubeconfig", "{unreachable}"),
            "http://127.0.0.1:1: cannot list nodes: GET /api/v1/nodes: Cannot connect",
        ),
        (
            ("explain", "shop/nobody", "--kubeconfig", "{kubeconfig}"),
            "pod shop/nobody is not in the snapshot",
        ),
        (
            ("explain", "shop/web/0", "--kubeconfig", "{kubeconfig}"),
            "shop/web/0: give the pod as NAMESPACE/NAME",
        ),
        (
            ("explain", "/web", "--kubeconfig", "{kubeconfig}"),
            "/web: give the pod as NAMESPACE/NAME",
        ),
        (
            ("simulate", "snapshot.yaml", "--kubeconfig", "{kubeconfig}"),
            "give snapshot files or --kubeconfig/--context, not both",
        ),
    ],
)
async def test_each_input_mistake_is_one_line_and_status_2(
    server: ApiServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    argv: tuple[str, ...],
    error: str,
) -> None:
    server.load(documents(ROOT / "examples" / "cluster.yaml"))
    paths = {
        "missing": str(tmp_path / "missing"),
        "kubeconfig": str(write_kubeconfig(tmp_path / "kubeconfig", server.url)),
        # Nothing listens on port 1: the connection is refused at once.
        "unreachable": str(write_kubeconfig(tmp_path / "unreachable", "http://127.0.0.1:1")),
    }
    status, out, err = await cli(capsys, *(arg.format(**paths) for arg in argv))
    assert status == 2
    assert err.startswith("volsched: ") and error in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert out == ""


async def test_a_list_the_server_refuses_is_named(
    server: ApiServer, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    message = 'poddisruptionbudgets.policy is forbidden: User "dev" cannot list resource'
    server.faults.fail_next("GET", "/poddisruptionbudgets", 403, message=message)
    kubeconfig = str(write_kubeconfig(tmp_path / "kubeconfig", server.url))
    status, out, err = await cli(capsys, "snapshot", "--kubeconfig", kubeconfig)
    assert status == 2 and out == ""
    assert err == f"volsched: {server.url}: cannot list poddisruptionbudgets: 403: {message}\n"


async def test_a_listing_whose_continue_token_expired_starts_again(
    server: ApiServer,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server.load(documents(ROOT / "examples" / "cluster.yaml"))
    monkeypatch.setattr(live, "PAGE_SIZE", 2)
    # The API server answers a continue token older than its compaction with 410.
    server.faults.fail_next("GET", r"/api/v1/pods\?.*continue=", 410, message="too old")
    kubeconfig = str(write_kubeconfig(tmp_path / "kubeconfig", server.url))
    status, out, err = await cli(capsys, "snapshot", "--kubeconfig", kubeconfig)
    assert status == 0, err
    pods = [o for o in yaml.safe_load(out)["items"] if o["kind"] == "Pod"]
    assert len(pods) == len(server.list("Pod"))
    assert server.faults.pending_failures() == 0
