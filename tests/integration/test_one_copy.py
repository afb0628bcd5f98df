"""The ingest keeps one copy of each object, the one the cache accepted, and the binder
writes only that copy back: a watch event that arrives late never reverts a change."""

from __future__ import annotations

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import claim, local_pv, node, pod, storage_class
from volsched.daemon.kube.client import KubeClient


async def test_a_late_event_does_not_revert_the_change_it_missed(cluster: Cluster) -> None:
    cluster.server.load([node("node-1"), storage_class("local"), local_pv("pv-1", "node-1")])
    daemon = await cluster.start_daemon()
    await eventually(daemon.sync.synced, what="caches synced")
    first = cluster.server.get("PersistentVolume", "pv-1")
    assert first is not None

    # Someone labels the PV (rv 11 -> 12, say); the daemon's watch brings it.
    client = await KubeClient.connect(str(cluster.kubeconfig))
    try:
        labelled = {**first, "metadata": {**first["metadata"], "labels": {"tier": "gold"}}}
        written = await client.replace("PersistentVolume", labelled)
    finally:
        await client.close()
    version = int(written["metadata"]["resourceVersion"])

    def cached_version() -> int:
        pv = daemon.cluster.pvs.get_api("pv-1")
        return pv.meta.resource_version if pv is not None else 0

    await eventually(lambda: cached_version() == version, what="the label seen")
    # Then the older revision arrives late, as after a watch restart racing a write.
    assert not daemon.ingest.upsert("PersistentVolume", first)
    body = daemon.ingest.raw_object("PersistentVolume", "pv-1")
    assert body is not None and body["metadata"]["labels"] == {"tier": "gold"}

    # A pod claims the PV: the binder's prebind must carry the labelled revision.
    cluster.server.load([claim("data", "local"), pod("app", ("data",))])
    await eventually(lambda: cluster.node_of("app") == "node-1", what="app bound")
    pv = cluster.server.get("PersistentVolume", "pv-1")
    assert pv is not None
    assert pv["spec"]["claimRef"]["name"] == "data"
    assert pv["metadata"].get("labels") == {"tier": "gold"}
