"""``simulate`` and ``explain`` with preemption, as a user runs them on snapshot files:
the three additive fields per pod, victims leaving the snapshot for the pods after, and
budgets read from the files."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from volsched.daemon.cli.main import main

CLUSTER = """
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "2", memory: 8Gi, pods: "10"}}
---
apiVersion: v1
kind: Node
metadata: {name: n2}
status: {allocatable: {cpu: "2", memory: 8Gi, pods: "10"}}
---
apiVersion: v1
kind: Pod
metadata: {name: batch-1, namespace: jobs, labels: {app: batch}}
spec:
  nodeName: n1
  priority: 1
  containers: [{name: c, resources: {requests: {cpu: "2"}}}]
status: {phase: Running, startTime: "2026-01-01T00:00:00Z"}
---
apiVersion: v1
kind: Pod
metadata: {name: web-1, namespace: jobs, labels: {app: web}}
spec:
  nodeName: n2
  priority: 1
  containers: [{name: c, resources: {requests: {cpu: "2"}}}]
status: {phase: Running, startTime: "2026-01-01T00:00:00Z"}
---
apiVersion: v1
kind: Pod
metadata: {name: db, namespace: prod, creationTimestamp: "2026-01-02T00:00:00Z"}
spec:
  priority: 1000
  containers: [{name: c, resources: {requests: {cpu: "2"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: polite, namespace: prod, creationTimestamp: "2026-01-02T00:00:00Z"}
spec:
  priority: 500
  preemptionPolicy: Never
  containers: [{name: c, resources: {requests: {cpu: "2"}}}]
---
apiVersion: v1
kind: Pod
metadata: {name: small, namespace: jobs, creationTimestamp: "2026-01-03T00:00:00Z"}
spec:
  priority: 0
  containers: [{name: c, resources: {requests: {cpu: "1"}}}]
"""

BUDGET = """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: keep-batch, namespace: jobs}
spec: {selector: {matchLabels: {app: batch}}}
status: {disruptionsAllowed: 0}
"""


def decide(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, *texts: str, verb: str = "simulate"
) -> dict[str, Any]:
    files = []
    for index, text in enumerate(texts):
        path = tmp_path / f"part-{index}.yaml"
        path.write_text(text)
        files.append(str(path))
    extra = ["prod/db"] if verb == "explain" else []
    status = main([verb, *extra, *files, "-o", "json", "--seed", "1"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    result: dict[str, Any] = json.loads(captured.out)
    return result


def test_a_high_priority_pod_preempts_and_later_pods_see_the_victims_gone(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pods = {p["pod"]: p for p in decide(capsys, tmp_path, CLUSTER)["pods"]}
    db = pods["prod/db"]
    assert db["nominatedNode"] in ("n1", "n2")
    assert db["node"] == db["nominatedNode"]
    assert db["victims"] == ["jobs/batch-1" if db["node"] == "n1" else "jobs/web-1"]
    assert db["preemption"] == ""
    polite = pods["prod/polite"]
    assert polite["node"] is None
    assert polite["message"] == "0/2 nodes are available: 2 Insufficient cpu."
    assert polite["preemption"] == (
        "no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never."
    )
    assert (polite["nominatedNode"], polite["victims"]) == (None, [])
    # The victim's room went to the preemptor; the small pod after it sees the node full
    # again (not the victim's cpu twice) and outranks nobody.
    small = pods["jobs/small"]
    assert small["node"] is None
    assert small["preemption"] == (
        "no new claims to deallocate, preemption: 0/2 nodes are available: 2 No preemption victims "
        "found for incoming pod."
    )


def test_a_placed_pod_has_no_preemption_fields(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    roomy = CLUSTER.replace('cpu: "2", memory: 8Gi', 'cpu: "8", memory: 8Gi')
    pods = {p["pod"]: p for p in decide(capsys, tmp_path, roomy)["pods"]}
    for entry in pods.values():
        assert entry["node"] is not None
        assert (entry["nominatedNode"], entry["victims"], entry["preemption"]) == (None, [], None)


def test_a_budget_in_the_snapshot_steers_the_victim(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pods = {p["pod"]: p for p in decide(capsys, tmp_path, CLUSTER, BUDGET)["pods"]}
    assert pods["prod/db"]["node"] == "n2"
    assert pods["prod/db"]["victims"] == ["jobs/web-1"]


def test_explain_shows_the_victims_per_candidate_node(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    report = decide(capsys, tmp_path, CLUSTER, BUDGET, verb="explain")
    assert report["node"] == "n2"
    assert report["victims"] == ["jobs/web-1"]
    rows = {row["node"]: row for row in report["nodes"]}
    assert rows["n1"]["victims"] == ["jobs/batch-1"]
    assert rows["n2"]["victims"] == ["jobs/web-1"]
    assert rows["n1"]["reasons"] == ["Insufficient cpu"]
