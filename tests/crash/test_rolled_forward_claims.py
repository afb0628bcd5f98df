"""Found by the crash suite: a daemon killed after the provisioner had served a claim it
annotated, but before the pod was bound. The claim keeps its volume (roll-forward), but
a replicated volume has no node affinity, so the pod may be placed on another node —
and the claim went on naming the first node in its selected-node annotation and its
binding intent: on the same replica (undo left provisioned claims alone) and on a
replica with an empty database (recovery looked only at claims without a volume)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import aiohttp
import pytest

from tests.crash.daemons import DaemonProcess, Replica, launch
from tests.crash.invariants import ANN_BINDING_INTENT, ANN_SELECTED_NODE, State, violations
from tests.crash.rounds import classify
from tests.crash.workload import REPLICATED, base_objects, claim_size
from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import claim, pod
from volsched.emulator import WriteRequest


async def cordon(cluster: Cluster, name: str) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.patch(
            f"{cluster.server.url}/api/v1/nodes/{name}",
            data=json.dumps({"spec": {"unschedulable": True}}),
            headers={"Content-Type": "application/merge-patch+json"},
        ) as response,
    ):
        assert response.status == 200


def claim_now(cluster: Cluster) -> dict[str, Any]:
    found = cluster.server.get("PersistentVolumeClaim", "data", "default")
    assert found is not None
    return found


def claim_annotations(cluster: Cluster) -> dict[str, str]:
    return dict(claim_now(cluster)["metadata"].get("annotations") or {})


@pytest.mark.parametrize("restart", ["same replica", "new replica, empty database"])
async def test_a_claim_served_while_the_daemon_was_down_names_no_node_its_pod_is_not_on(
    cluster: Cluster, restart: str
) -> None:
    server = cluster.server
    server.load([*base_objects(), claim("data", REPLICATED, claim_size(REPLICATED))])
    first = Replica("replica-0", cluster.workdir / "replica-0.db")
    processes: list[DaemonProcess] = []
    killed = asyncio.Event()

    async def kill(write: WriteRequest, status: int | None) -> None:
        killed.set()
        processes[-1].kill()
        await processes[-1].wait()

    server.faults.trip(lambda write: classify(write) == "bind pod", kill)
    try:
        processes.append(await launch(cluster.workdir, cluster.kubeconfig, first, "replica-0-0"))
        server.load([pod("app", ("data",))])
        await eventually(killed.is_set, timeout=30, what="the kill before the pod binding")
        await processes[-1].wait()
        # The claim was provisioned and bound for the node chosen; the pod is pending.
        assert claim_now(cluster)["status"]["phase"] == "Bound"
        chosen = claim_annotations(cluster)[ANN_SELECTED_NODE]
        assert cluster.node_of("app") is None
        await cordon(cluster, chosen)

        second = Replica("replica-1", cluster.workdir / "replica-1.db")
        replica = first if restart == "same replica" else second
        processes.append(await launch(cluster.workdir, cluster.kubeconfig, replica, "replica-x-1"))
        await eventually(lambda: cluster.node_of("app"), timeout=30, what="the pod placed again")
        assert cluster.node_of("app") != chosen
        await eventually(
            lambda: ANN_SELECTED_NODE not in claim_annotations(cluster),
            what="the stale annotation removed",
        )
        assert ANN_BINDING_INTENT not in claim_annotations(cluster)
        state = State(
            pods=server.list("Pod", "default"),
            claims=server.list("PersistentVolumeClaim", "default"),
            pvs=server.list("PersistentVolume"),
            nodes=server.list("Node"),
        )
        assert violations(state) == []
    finally:
        for process in processes:
            process.kill()
            await process.wait()
