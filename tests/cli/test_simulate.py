"""``volsched simulate`` and ``explain`` as a user runs them: the fixed JSON contract,
the table, reproducibility, and one clear line (exit 2) for every input mistake."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from volsched.daemon.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "cluster.yaml")
POLICY = str(ROOT / "examples" / "policy.json")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    return status, captured.out, captured.err


def simulate_json(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    status, out, err = run(capsys, "simulate", *argv, "-o", "json")
    assert status == 0, err
    result: dict[str, Any] = json.loads(out)
    return result


def test_example_snapshot_decisions(capsys: pytest.CaptureFixture[str]) -> None:
    result = simulate_json(capsys, EXAMPLE, "--seed", "7")
    pods = {entry["pod"]: entry for entry in result["pods"]}
    assert [entry["pod"] for entry in result["pods"]] == [
        "batch/report",
        "shop/postgres-0",
        "shop/kafka-0",
        "ci/runner-1",
        "shop/kafka-1",
    ]
    assert set(result["pods"][0]) == {
        "pod",
        "node",
        "message",
        "filtered",
        "scores",
        "volumes",
        "nominatedNode",
        "victims",
        "preemption",
    }
    report = pods["batch/report"]
    assert report["node"] is None
    assert report["message"] == (
        "0/3 nodes are available: 1 node(s) had untolerated taint(s), 2 Insufficient cpu."
    )
    assert report["scores"] == {}
    assert pods["shop/postgres-0"]["node"] == "node-b1"
    assert pods["shop/postgres-0"]["filtered"]["node-a1"] == [
        "node(s) didn't match PersistentVolume's node affinity"
    ]
    kafka = pods["shop/kafka-0"]
    assert kafka["node"] == "node-a1"
    assert kafka["volumes"] == {"data-kafka-0": {"volume": "local-a1-100g"}}
    assert kafka["message"] is None
    assert set(kafka["scores"]) == {"node-a1", "node-b1"}
    runner = pods["ci/runner-1"]
    assert runner["node"] == "node-a1"
    assert runner["volumes"] == {"ci-cache": {"provision": True}}
    assert runner["filtered"]["node-b1"] == [
        "node(s) didn't find available persistent volumes to bind"
    ]
    assert pods["shop/kafka-1"]["node"] is None
    assert result["volumes"] == []


def test_same_seed_same_output(capsys: pytest.CaptureFixture[str]) -> None:
    first = simulate_json(capsys, EXAMPLE, "--seed", "3")
    second = simulate_json(capsys, EXAMPLE, "--seed", "3")
    assert first == second


def test_policy_file_replaces_the_default(capsys: pytest.CaptureFixture[str]) -> None:
    result = simulate_json(capsys, EXAMPLE, "--policy", POLICY, "--seed", "1")
    kafka = next(entry for entry in result["pods"] if entry["pod"] == "shop/kafka-0")
    # LeastRequested + 2 × PrioritizeVolumes (80 for the 100Gi disk) + zone label preference
    assert kafka["scores"]["node-a1"] == 75 + 2 * 80 + 100


def test_table_output(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "simulate", EXAMPLE, "-o", "table", "--seed", "1")
    assert status == 0
    lines = out.splitlines()
    assert lines[0].split() == ["POD", "NODE", "SCORE", "VOLUMES", "/", "WHY", "PENDING"]
    assert any("shop/kafka-0" in line and "data-kafka-0→local-a1-100g" in line for line in lines)
    assert any("batch/report" in line and "<pending>" in line for line in lines)


def test_explain_rows(capsys: pytest.CaptureFixture[str]) -> None:
    status, out, _ = run(capsys, "explain", "shop/kafka-0", EXAMPLE, "-o", "json", "--seed", "1")
    assert status == 0
    report = json.loads(out)
    rows = {row["node"]: row for row in report["nodes"]}
    assert rows["node-a1"]["result"] == "chosen"
    assert rows["node-a1"]["scores"]["PrioritizeVolumes"] == {"score": 80, "weight": 1}
    assert rows["node-b1"]["scores"]["PrioritizeVolumes"] == {"score": 40, "weight": 1}
    assert rows["node-b2"] == {
        "node": "node-b2",
        "result": "rejected",
        "predicate": "TaintToleration",
        "reasons": ["node(s) had untolerated taint(s)"],
    }
    status, out, _ = run(capsys, "explain", "shop/kafka-1", EXAMPLE, "-o", "table")
    assert "pending — 0/3 nodes are available" in out
    assert "VolumeBinding: node(s) didn't find available persistent volumes to bind" in out


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


NODE = """
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "1", memory: 1Gi, pods: "10"}}
"""


@pytest.mark.parametrize(
    ("files", "options", "expected"),
    [
        ({}, ["missing.yaml"], "missing.yaml: cannot read"),
        (
            {"bad.yaml": "kind: Node\n  metadata: [\n"},
            [],
            "bad.yaml: not valid YAML or JSON at line",
        ),
        (
            {"s.yaml": "- 1\n- 2\n"},
            [],
            "s.yaml (document 1): a Kubernetes object must be a mapping",
        ),
        (
            {
                "s.yaml": NODE
                + "---\nkind: Node\nmetadata: {name: n2}\nstatus: {allocatable: {cpu: lots}}\n"
            },
            [],
            "s.yaml (document 2): Node/n2 field status.allocatable.cpu: 'lots' is not a quantity",
        ),
        ({"s.yaml": NODE + "---\n" + NODE}, [], "s.yaml (document 2): Node n1 is defined twice"),
        (
            {"s.yaml": '{"kind": "List", "items": [{"kind": "Pod", "metadata": {}}]}'},
            [],
            "s.yaml (document 1) items[0]: Pod field metadata.name: is required",
        ),
        ({"s.yaml": "metadata: {name: x}\n"}, [], "s.yaml (document 1): kind is required"),
        ({"s.yaml": NODE, "p.json": "{"}, ["--policy", "p.json"], "p.json: not valid JSON"),
        (
            {"s.yaml": NODE, "p.json": '{"priorities": [{"name": "EqualPriority", "weight": 0}]}'},
            ["--policy", "p.json"],
            "p.json: priorities[0] (EqualPriority).weight: must be a positive integer, not 0",
        ),
        (
            {"s.yaml": NODE, "c.yaml": "schedulerNme: x\n"},
            ["--config", "c.yaml"],
            "c.yaml: schedulerNme: unknown key",
        ),
        (
            {
                "s.yaml": NODE,
                "c.yaml": "replicaScheduling: {storageMinimalAvailablePercentage: 120}\n",
            },
            ["--config", "c.yaml"],
            "storageMinimalAvailablePercentage",
        ),
        ({"s.yaml": NODE}, ["--now", "yesterday"], "--now: 'yesterday' is not an RFC 3339 time"),
    ],
)
def test_input_mistakes_exit_2_with_one_line(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    files: dict[str, str],
    options: list[str],
    expected: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    for name, text in files.items():
        write(tmp_path, name, text)
    snapshot = [name for name in files if name.startswith("s") or name.startswith("bad")]
    status, out, err = run(capsys, "simulate", *snapshot, *options)
    assert status == 2
    assert out == ""
    assert err.startswith("volsched: ")
    assert expected in err
    assert err.count("\n") == 1
    assert "Traceback" not in err


def test_unknown_kinds_are_ignored_with_a_warning(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = write(tmp_path, "s.yaml", NODE + "---\nkind: ConfigMap\nmetadata: {name: x}\n")
    status, out, err = run(capsys, "simulate", path, "-o", "json")
    assert status == 0
    assert "ignoring unknown kind ConfigMap" in err
    assert json.loads(out) == {"pods": [], "volumes": []}


def test_explain_names_a_pod_that_is_not_there(capsys: pytest.CaptureFixture[str]) -> None:
    status, _, err = run(capsys, "explain", "shop/nope", EXAMPLE)
    assert status == 2
    assert err == "volsched: pod shop/nope is not in the snapshot\n"


PRE_FILTER_REJECTED = """
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
kind: StorageClass
apiVersion: storage.k8s.io/v1
metadata: {name: fast}
provisioner: csi.example.com
volumeBindingMode: Immediate
---
kind: PersistentVolumeClaim
metadata: {name: data, namespace: default}
spec: {storageClassName: fast, accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}
---
kind: Pod
metadata: {name: db, namespace: default}
spec:
  containers: [{name: main}]
  volumes: [{name: v, persistentVolumeClaim: {claimName: data}}]
"""


def test_explain_shows_a_prefilter_rejection_on_every_node(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """No node was evaluated: each row carries the PreFilter's plugin and reason, never
    'enough feasible nodes were found before this one'."""
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text(PRE_FILTER_REJECTED)
    assert main(["explain", "default/db", str(snapshot), "-o", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [
        (row["node"], row["result"], row["predicate"], row["reasons"]) for row in report["nodes"]
    ] == [
        (name, "rejected", "VolumeBinding", ["pod has unbound immediate PersistentVolumeClaims"])
        for name in ("n1", "n2")
    ]
    assert main(["explain", "default/db", str(snapshot), "-o", "table"]) == 0
    assert "enough feasible nodes" not in capsys.readouterr().out


SAME_SECOND = """
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "1", memory: 8Gi, pods: "10"}}
---
kind: Pod
metadata: {name: zz-first, namespace: default}
spec: {containers: [{name: main, resources: {requests: {cpu: 800m}}}]}
---
kind: Pod
metadata: {name: aa-second, namespace: default}
spec: {containers: [{name: main, resources: {requests: {cpu: 800m}}}]}
"""


def test_pods_of_one_priority_and_age_go_in_file_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """kube-scheduler breaks a tie in priority and age by arrival, never by name: the
    pod listed first takes the room."""
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text(SAME_SECOND)
    assert main(["simulate", str(snapshot), "-o", "json"]) == 0
    pods = {p["pod"]: p["node"] for p in json.loads(capsys.readouterr().out)["pods"]}
    assert pods == {"default/zz-first": "n1", "default/aa-second": None}
