"""A binding refused while its undo fails too: the undo is tried again until the claim
and its pod agree — without a restart, and without taking back what a later binding
cycle of the same pod wrote."""

from __future__ import annotations

import asyncio
import json

import aiohttp

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import claim, node, pod, storage_class
from volsched.emulator.faults import WriteRequest

ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BINDING_INTENT = "volsched.io/binding-intent"
CLAIM_PATCHES = r"/persistentvolumeclaims/data$"
BASE = [
    node("node-1", "zone-a"),
    node("node-2", "zone-b"),
    storage_class("zonal", provisioner="csi.example.com"),
    claim("data", "zonal"),
]


def is_pod_binding(write: WriteRequest) -> bool:
    return write.method == "POST" and write.path.endswith("/pods/app/binding")


def annotations(cluster: Cluster) -> dict[str, str]:
    found = cluster.server.get("PersistentVolumeClaim", "data", "default")
    assert found is not None
    return dict(found["metadata"].get("annotations") or {})


def refuse_binding_and_claim_patches(cluster: Cluster, patches: int) -> asyncio.Event:
    """Refuse the pod's first binding (503) and, from then on, the next ``patches``
    patches of its claim: the failed cycle's undo cannot release the claim at once."""
    refused = asyncio.Event()

    async def refuse(write: WriteRequest, status: int | None) -> None:
        cluster.server.faults.fail_next("PATCH", CLAIM_PATCHES, 500, times=patches)
        refused.set()

    cluster.server.faults.trip(is_pod_binding, refuse)
    return refused


async def test_a_failed_undo_is_retried_until_the_claim_names_no_node_its_pod_is_not_on(
    cluster: Cluster,
) -> None:
    cluster.server.load(BASE)
    refused = refuse_binding_and_claim_patches(cluster, patches=3)
    daemon = await cluster.start_daemon()
    cluster.server.load([pod("app", ("data",))])
    await eventually(refused.is_set, what="the pod's binding refused")
    chosen = annotations(cluster)[ANN_SELECTED_NODE]
    # The pod goes away: nothing will bind it to the claim's node any more.
    async with (
        aiohttp.ClientSession() as session,
        session.delete(f"{cluster.server.url}/api/v1/namespaces/default/pods/app") as response,
    ):
        assert response.status in (200, 202)
    await eventually(
        lambda: ANN_SELECTED_NODE not in annotations(cluster),
        what=f"the claim no longer naming {chosen}",
    )
    assert ANN_BINDING_INTENT not in annotations(cluster)
    patches = [r.status for r in cluster.server.faults.requests("PATCH", CLAIM_PATCHES)]
    assert patches[:3] == [500, 500, 500] and patches[-1] == 200
    await eventually(lambda: daemon.store.stats.journal_depth == 0, what="the intent closed")


async def put_claim(cluster: Cluster, body: dict[str, object]) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.put(
            f"{cluster.server.url}/api/v1/namespaces/default/persistentvolumeclaims/data",
            json=body,
        ) as response,
    ):
        assert response.status == 200, await response.text()


async def test_the_retry_leaves_alone_what_a_later_cycle_on_the_same_node_wrote(
    cluster: Cluster,
) -> None:
    pinned = pod("app", ("data",))
    pinned["spec"]["nodeSelector"] = {"kubernetes.io/hostname": "node-1"}
    cluster.server.load(BASE)
    refused = refuse_binding_and_claim_patches(cluster, patches=2)
    daemon = await cluster.start_daemon()
    # The pod's next binding is slow, so the background undo runs while it is pending.
    cluster.server.faults.delay_next("POST", r"/pods/app/binding$", 4.0, times=2)
    cluster.server.load([pinned])
    await eventually(refused.is_set, what="the pod's first binding refused")
    # A later binding cycle of the pod on the same node annotates the claim anew.
    current = cluster.server.get("PersistentVolumeClaim", "data", "default")
    assert current is not None
    first = json.loads(current["metadata"]["annotations"][ANN_BINDING_INTENT])
    assert first["node"] == "node-1"
    current["metadata"]["annotations"][ANN_BINDING_INTENT] = json.dumps(
        {**first, "cycle": "a-later-cycle"}
    )
    await put_claim(cluster, current)
    await eventually(lambda: daemon.store.stats.journal_depth == 0, what="the intent closed")
    # No release of the claim was ever served: the retry saw the later cycle's annotation.
    patches = [r.status for r in cluster.server.faults.requests("PATCH", CLAIM_PATCHES)]
    assert patches and set(patches) == {500}
    now = annotations(cluster)
    assert now[ANN_SELECTED_NODE] == "node-1"
    assert json.loads(now[ANN_BINDING_INTENT])["cycle"] == "a-later-cycle"
    await eventually(lambda: cluster.node_of("app"), timeout=15, what="the pod bound")
    assert cluster.node_of("app") == "node-1"
