"""Each kind has one owner: volsched writes its own ``volsched.io`` objects and never acts
on Longhorn's. A Longhorn volume short of replicas is longhorn-manager's to repair; the
replica reconciler, which keeps volsched's volumes at their count, leaves it alone."""

from __future__ import annotations

from tests.integration.conftest import Cluster, eventually
from tests.integration.test_longhorn import longhorn_cluster, longhorn_state
from tests.unit.longhorn.objects import longhorn_replica, longhorn_volume


async def test_a_longhorn_volume_short_of_replicas_gets_nothing_from_volsched(
    cluster: Cluster,
) -> None:
    cluster.server.load(longhorn_cluster())
    cluster.server.load(
        [
            # Three replicas wanted, one running and one that longhorn-manager has not
            # placed yet (no node): a volsched volume in this state would be filled.
            longhorn_volume("pvc-web", replicas=3, robustness="degraded"),
            longhorn_replica("pvc-web-r-1", "pvc-web", "n1", "d1"),
            longhorn_replica("pvc-web-r-waiting", "pvc-web", "", "", state="stopped"),
        ]
    )
    before = {
        obj["metadata"]["uid"]: obj["metadata"]["resourceVersion"]
        for obj in longhorn_state(cluster)
    }
    daemon = await cluster.start_daemon()
    await eventually(daemon.sync.synced, what="caches synced")
    assert "pvc-web" in daemon.cluster.storage.volumes  # decisions still see it

    assert await daemon.reconciler.reconcile_once() == 0
    assert cluster.server.list("Replica", api_version="volsched.io/v1alpha1") == []
    after = {
        obj["metadata"]["uid"]: obj["metadata"]["resourceVersion"]
        for obj in longhorn_state(cluster)
    }
    assert after == before
