"""``simulate`` and ``explain`` on the constraints example: anti-affinity, zone spread,
preferred affinity and a scheduling gate, as a user reads them."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from volsched.daemon.cli.main import main

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "constraints.yaml")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    status = main([*argv, EXAMPLE, "-o", "json", "--seed", "1"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    return json.loads(captured.out)


def test_replicas_spread_one_per_node_and_evenly_over_zones(
    capsys: pytest.CaptureFixture[str],
) -> None:
    pods = {entry["pod"]: entry for entry in run(capsys, "simulate")["pods"]}
    placed = {name: entry["node"] for name, entry in pods.items() if name.startswith("shop/db")}
    # db-0 already runs on node-a1; db-1 must go to zone-b (zone-a is one ahead).
    assert placed["shop/db-1"] in ("node-b1", "node-b2")
    nodes = [placed[f"shop/db-{i}"] for i in (1, 2, 3)]
    assert len(set(nodes) | {"node-a1"}) == 4
    assert placed["shop/db-4"] is None
    assert pods["shop/db-4"]["message"] == (
        "0/4 nodes are available: 4 node(s) didn't match pod anti-affinity rules."
    )
    # The web pod prefers a node with a replica: every node has one by then.
    assert pods["shop/web-0"]["node"] is not None


def test_a_gated_pod_is_listed_but_never_decided(capsys: pytest.CaptureFixture[str]) -> None:
    pods = {entry["pod"]: entry for entry in run(capsys, "simulate")["pods"]}
    gated = pods["shop/restore-0"]
    assert gated["node"] is None
    assert gated["message"] == "Scheduling is blocked due to non-empty scheduling gates"
    assert gated["filtered"] == {} and gated["scores"] == {}


def test_explain_names_the_term_and_the_constraint(capsys: pytest.CaptureFixture[str]) -> None:
    report = run(capsys, "explain", "shop/db-4")
    rows = {row["node"]: row for row in report["nodes"]}
    assert rows["node-a1"]["predicate"] == "InterPodAffinity"
    assert rows["node-a1"]["details"] == [
        "required anti-affinity term 0: 1 matching pod(s) in kubernetes.io/hostname=node-a1"
    ]
    first = run(capsys, "explain", "shop/db-1")
    rejected = {row["node"]: row for row in first["nodes"] if row["result"] == "rejected"}
    assert set(rejected) == {"node-a1", "node-a2"}
    assert rejected["node-a2"]["predicate"] == "PodTopologySpread"
    assert rejected["node-a2"]["details"] == [
        "constraint 0 (topologyKey topology.kubernetes.io/zone, maxSkew 1): "
        "topology.kubernetes.io/zone=zone-a has 1 matching pod(s), the minimum is 0: skew 2 > 1"
    ]
