"""Nominations in the running daemon follow upstream and ``simulate``: the same snapshot
gives the same nominated node and victims both ways, and a nomination that no node can
honour any more is cleared from the pod's status."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import node, pod

Raw = dict[str, Any]


def prioritised(raw: Raw, priority: int, node_name: str = "", cpu: str = "") -> Raw:
    raw["spec"]["priority"] = priority
    if node_name:
        raw["spec"]["nodeName"] = node_name
        raw["status"] = {"phase": "Running", "startTime": "2026-01-01T00:00:00Z"}
        # Kept visible while it terminates, as a kubelet would.
        raw["metadata"]["finalizers"] = ["example.com/drain"]
    return raw


def snapshot() -> list[Raw]:
    return [
        node("n1", "zone-a", cpu="2"),
        node("n2", "zone-b", cpu="2"),
        node("n3", "zone-c", cpu="2"),
        prioritised(pod("batch-1", cpu="2"), 1, "n1"),
        prioritised(pod("batch-2", cpu="2"), 5, "n2"),
        prioritised(pod("api", cpu="2"), 2000, "n3"),
        prioritised(pod("db", cpu="2"), 1000),
    ]


async def test_simulate_and_the_daemon_nominate_the_same_node_and_victims(
    cluster: Cluster, tmp_path: Path
) -> None:
    path = tmp_path / "snapshot.yaml"
    path.write_text(yaml.safe_dump_all(snapshot()))
    answer = subprocess.run(
        [sys.executable, "-m", "volsched", "simulate", str(path), "-o", "json"],
        capture_output=True,
        text=True,
        check=True,
    )
    simulated = next(p for p in json.loads(answer.stdout)["pods"] if p["pod"] == "default/db")
    assert simulated["nominatedNode"] == "n1" and simulated["victims"] == ["default/batch-1"]

    cluster.server.load(snapshot())
    await cluster.start_daemon()

    def nominated() -> str:
        return str((cluster.pod("db").get("status") or {}).get("nominatedNodeName") or "")

    await eventually(nominated, what="db nominated")
    marked = [
        f"default/{name}"
        for name in ("batch-1", "batch-2", "api")
        if (cluster.server.get("Pod", name, "default") or {})
        .get("metadata", {})
        .get("deletionTimestamp")
    ]
    assert (nominated(), marked) == (simulated["nominatedNode"], simulated["victims"])


async def test_a_nomination_no_node_can_honour_is_cleared(cluster: Cluster) -> None:
    waiting = prioritised(pod("db", cpu="2"), 100)
    waiting["status"] = {"nominatedNodeName": "n1"}
    cluster.server.load(
        [node("n1", "zone-a", cpu="2"), prioritised(pod("api", cpu="2"), 2000, "n1"), waiting]
    )
    await cluster.start_daemon()
    await eventually(
        lambda: not (cluster.pod("db").get("status") or {}).get("nominatedNodeName"),
        what="the nomination cleared",
    )
    events = [e["reason"] for e in cluster.events_for("db")]
    assert "FailedScheduling" in events
    assert cluster.node_of("db") is None
