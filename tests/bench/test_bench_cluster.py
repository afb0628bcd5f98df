"""``python -m bench cluster`` against the embedded API emulator, reached like any cluster
through a kubeconfig: it refuses a cluster with nodes of its own, measures a small run of
both shapes (the emulator's PV controller binding the claims) and a warm and a cold
restart, and leaves nothing behind.

The emulator plays a bare control plane: a kube-apiserver (its admission refuses pods
without a ServiceAccount and taints every new node not-ready) with a PV controller, but
no ServiceAccount controller and no node lifecycle controller, so the benchmark has to
make what it needs itself. Its admission adds the storage protection finalizers, and no
controller lifts them: the benchmark must, or its claims and PVs stay Terminating."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from volsched.emulator import ApiServer, ControllerSettings, write_kubeconfig

ROOT = Path(__file__).resolve().parents[2]
KINDS = ("Node", "Pod", "PersistentVolume", "PersistentVolumeClaim", "StorageClass", "Lease")


@pytest.fixture
async def server() -> AsyncIterator[ApiServer]:
    emulator = ApiServer(
        ControllerSettings(
            pv_controller=True,
            pv_bind_delay_seconds=0.1,
            kubelet=False,
            service_accounts=False,
            node_lifecycle=False,
            storage_protection=True,
        )
    )
    await emulator.start()
    try:
        yield emulator
    finally:
        await emulator.stop()


async def bench(
    tmp_path: Path, server: ApiServer, *options: str
) -> subprocess.CompletedProcess[str]:
    kubeconfig = write_kubeconfig(tmp_path / "kubeconfig", server.url)
    command = [
        sys.executable,
        "-m",
        "bench",
        "cluster",
        "--kubeconfig",
        str(kubeconfig),
        "--out",
        str(tmp_path),
        *options,
    ]
    # The emulator runs on this test's loop: let the child talk to it meanwhile.
    return await asyncio.to_thread(
        subprocess.run, command, cwd=ROOT, capture_output=True, text=True, timeout=240
    )


def leftovers(server: ApiServer) -> dict[str, int]:
    counts = {}
    for kind in KINDS:
        found = [
            obj
            for obj in server.list(kind)
            if str((obj.get("metadata") or {}).get("name", "")).startswith(
                ("bench-", "pod-", "data-")
            )
        ]
        if found:
            counts[kind] = len(found)
    return counts


async def test_refuses_a_cluster_with_nodes_of_its_own(tmp_path: Path, server: ApiServer) -> None:
    server.load([{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "real-node"}}])
    completed = await bench(tmp_path, server, "--nodes", "3", "--pods", "3")
    assert completed.returncode == 2
    assert "1 node(s) the benchmark did not create (e.g. real-node)" in completed.stderr
    assert "--i-understand-this-creates-nodes" in completed.stderr
    assert [n["metadata"]["name"] for n in server.list("Node")] == ["real-node"]


@pytest.mark.parametrize("shape", ["none", "wffc"])
async def test_measures_and_cleans_up(tmp_path: Path, server: ApiServer, shape: str) -> None:
    completed = await bench(
        tmp_path, server, "--shape", shape, "--nodes", "6", "--pods", "12", "--pvs-per-node", "3"
    )
    assert completed.returncode == 0, completed.stderr[-3000:]
    result = json.loads((tmp_path / f"cluster-{shape}.json").read_text())
    assert result["bound"] == result["measured_pods"] == 12
    assert result["nodes"] == 6
    assert result["overall_pods_per_second"] > 0
    # Every pod is bound within the first sample here: the throughput is measured from
    # the first binding to the last instead, never left out.
    assert result["throughput_pods_per_second"]["average"] > 0
    assert result["throughput_from"] in ("samples", "first to last binding")
    assert result["binding_span_pods_per_second"] > 0
    assert result["command"].startswith("python -m bench cluster --kubeconfig FILE")
    # Restarted warm from the snapshot its clean stop kept, every kind caught up by its
    # watch; and cold from an empty database.
    restart = result["restart"]
    assert restart["warm_from_snapshot"] is True
    assert restart["warm_objects_loaded"] > 6 + 12
    assert restart["catch_up_relists"] == 0
    assert restart["warm_ready_seconds"] > 0 and restart["cold_ready_seconds"] > 0
    assert leftovers(server) == {}
    if shape == "wffc":
        assert result["deleted"]["PersistentVolume"] == 18
    # It made what the missing controllers would have, and says so.
    made = result["made_for_the_cluster"]
    account = made["service_account"]
    assert account.startswith("volsched-bench-") and account.endswith("/default")
    assert made["untainted_nodes"] == 6
    assert (
        f"bench cluster: created ServiceAccount {account}; "
        "removed the node.kubernetes.io/not-ready taint from 6 node(s)"
    ) in completed.stderr
