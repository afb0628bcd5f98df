"""``volsched simulate`` on the Longhorn example, as a user runs it: pods go back to their
Longhorn replicas, a strict-local volume pins its pod, new claims are checked against
Longhorn's disks and Settings, and one that no disk can hold stays pending."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from volsched.daemon.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = str(ROOT / "examples" / "longhorn.yaml")
NOW = "2026-11-01T12:00:00Z"
SPACE = "node(s) did not have enough free storage"
NOT_STORAGE_NODE = "node(s) were not ready storage nodes"
NO_LOCAL_REPLICA = "node(s) didn't have a replica of the pod's strict-locality volumes"
SEEDS = ("1", "2", "3", "4")


def simulate(capsys: pytest.CaptureFixture[str], seed: str) -> dict[str, dict[str, Any]]:
    status = main(["simulate", EXAMPLE, "--now", NOW, "-o", "json", "--seed", seed])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    return {entry["pod"]: entry for entry in json.loads(captured.out)["pods"]}


@pytest.mark.parametrize("seed", SEEDS)
def test_a_restarted_pod_goes_back_to_its_detached_replicas(
    capsys: pytest.CaptureFixture[str], seed: str
) -> None:
    web = simulate(capsys, seed)["shop/web-0"]
    assert web["node"] in ("node-b1", "node-c1")
    assert web["filtered"] == {"node-b2": [NOT_STORAGE_NODE]}


def test_a_strict_local_volume_pins_its_pod(capsys: pytest.CaptureFixture[str]) -> None:
    cache = simulate(capsys, "1")["shop/cache-0"]
    assert cache["node"] == "node-a2"
    assert cache["filtered"] == {
        "node-a1": [NO_LOCAL_REPLICA],
        "node-b1": [NO_LOCAL_REPLICA],
        "node-b2": [NOT_STORAGE_NODE],
        "node-c1": [NO_LOCAL_REPLICA],
        "node-c2": [NO_LOCAL_REPLICA],
    }


@pytest.mark.parametrize("seed", SEEDS)
def test_new_claims_follow_longhorns_disks_and_settings(
    capsys: pytest.CaptureFixture[str], seed: str
) -> None:
    pods = simulate(capsys, seed)
    # Only node-a2's ssd disk holds 150Gi (node-b2's is too small, its node is down).
    trainer = pods["ml/trainer"]
    assert trainer["node"] == "node-a2"
    assert trainer["volumes"] == {
        "scratch": {
            "provision": True,
            "replicas": [{"node": "node-a2", "disk": "5d1c1a4e-a2-nvme"}],
        }
    }
    # default-replica-count (in its per-data-engine form) gives three replicas, one
    # per zone, with hard node anti-affinity from replica-soft-anti-affinity.
    db = pods["shop/db-0"]
    replicas = db["volumes"]["db-data"]["replicas"]
    assert len(replicas) == 3
    assert len({r["node"] for r in replicas}) == 3
    assert db["node"] == replicas[0]["node"]
    # Nothing can hold 300Gi on an ssd disk: pending, never sent where Longhorn fails.
    archive = pods["ml/archive"]
    assert archive["node"] is None
    assert archive["message"] == f"0/6 nodes are available: 6 {SPACE}."
