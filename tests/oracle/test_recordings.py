"""Decisions recorded from the real kube-scheduler, replayed through ``volsched simulate``.

Each file under ``kube-scheduler-1.36.2/`` is one small cluster, the
KubeSchedulerConfiguration kube-scheduler ran with, and what it decided (the format is in
that folder's README). volsched, given the same objects and the same file, must choose
the same node (or one of the tied nodes), give every scored node the same total, every
plugin the same weighted score on every node, and word a pending pod's FailedScheduling
text the same, PostFilter part included.

kube-scheduler's ``-v=10`` log leaves out a plugin whose PreScore skipped, and volsched
shows such a plugin with 0: a plugin absent on one side counts as 0 on that side.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from volsched.daemon.cli.main import main

HERE = Path(__file__).resolve().parent
RECORDINGS = sorted(HERE.glob("kube-scheduler-*/*.yaml"))
# volsched leaves a pod with ResourceClaims pending: it allocates no devices.
NOT_PLACED_BY_VOLSCHED = {
    "072-dra-prioritized-list-score": "volsched does not allocate DRA devices",
}

_POD = re.compile(r"^#\s+pod (\S+):$")
_NODE = re.compile(r"^#\s+(\S+): (.*?)\s+=> total (-?\d+)$")


def logged_plugin_scores(path: Path) -> dict[str, dict[str, dict[str, int]]]:
    """pod → node → plugin → weighted score, from the recording's comment block."""
    found: dict[str, dict[str, dict[str, int]]] = {}
    pod: str | None = None
    for line in path.read_text().splitlines():
        if not line.startswith("#"):
            break
        if (match := _POD.match(line)) is not None:
            pod = match.group(1)
            found[pod] = {}
        elif pod is not None and (match := _NODE.match(line)) is not None:
            parts = (item.split("=") for item in match.group(2).split())
            found[pod][match.group(1)] = {name: int(value) for name, value in parts}
    return found


def _run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> Any:
    status = main(argv)
    captured = capsys.readouterr()
    assert status == 0, captured.err
    return json.loads(captured.out)


@pytest.fixture
def recording(request: pytest.FixtureRequest, tmp_path: Path) -> tuple[dict[str, Any], list[str]]:
    path: Path = request.param
    data = yaml.safe_load(path.read_text())
    objects = tmp_path / "objects.yaml"
    objects.write_text(yaml.safe_dump_all(data["objects"]))
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump(data["config"]))
    return data, [str(objects), "--config", str(config), "--seed", "1", "-o", "json"]


def _ids(paths: list[Path]) -> list[str]:
    return [path.stem for path in paths]


def _params() -> list[Any]:
    params = []
    for path in RECORDINGS:
        reason = NOT_PLACED_BY_VOLSCHED.get(path.stem)
        marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
        params.append(pytest.param(path, marks=marks, id=path.stem))
    return params


def test_there_are_recordings() -> None:
    assert len(RECORDINGS) >= 50


@pytest.mark.parametrize("recording", _params(), indirect=True)
def test_volsched_decides_as_kube_scheduler_did(
    recording: tuple[dict[str, Any], list[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    data, args = recording
    decided = {entry["pod"]: entry for entry in _run(capsys, ["simulate", *args])["pods"]}
    for pod, expected in data["expect"]["pods"].items():
        ours = decided[pod]
        if "node_in" in expected:
            assert ours["node"] in expected["node_in"], pod
        else:
            assert ours["node"] == expected["node"], pod
        if "scores" in expected:
            assert ours["scores"] == expected["scores"], pod
        if "message" in expected:
            assert ours["message"] == expected["message"], pod
        if "preemption" in expected:
            assert ours["preemption"] == expected["preemption"], pod
        if "nominated" in expected:
            assert ours["nominatedNode"] == expected["nominated"], pod
            assert sorted(ours["victims"]) == sorted(expected["victims"]), pod


@pytest.mark.parametrize("recording", _params(), indirect=True)
def test_every_plugin_scores_as_kube_scheduler_logged(
    recording: tuple[dict[str, Any], list[str]],
    request: pytest.FixtureRequest,
    capsys: pytest.CaptureFixture[str],
) -> None:
    _, args = recording
    path = next(p for p in RECORDINGS if p.stem == request.node.callspec.id)
    logged = logged_plugin_scores(path)
    for pod, nodes in logged.items():
        if not nodes:
            continue
        report = _run(capsys, ["explain", pod, *args])
        ours = {
            row["node"]: {
                name: part["score"] * part["weight"] for name, part in row["scores"].items()
            }
            for row in report["nodes"]
            if row.get("scores")
        }
        assert set(ours) == set(nodes), pod
        for node, plugins in nodes.items():
            names = set(plugins) | set(ours[node])
            got = {name: ours[node].get(name, 0) for name in names}
            want = {name: plugins.get(name, 0) for name in names}
            assert got == want, f"{pod} on {node}"
