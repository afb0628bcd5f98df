"""What storage awareness would have saved: the PVs each placement took (the ledger),
and the replicated volumes a pod would read over the network."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import cluster, node, pod, pv, pvc, storage_class
from tests.unit.test_storage_locality import bound_claim, host, replica, volume
from volsched.scheduling.shadow.pv_ledger import PvLedger
from volsched.scheduling.shadow.savings import StorageSavings, volumes_off_node

Raw = dict[str, Any]
NODES = (node("a"), node("b"))
VOLUMES = (
    pv("p10", "10Gi", node_names=["a"]),
    pv("p50", "50Gi", node_names=["b"]),
    pv("p100", "100Gi", node_names=["b"]),
)


@pytest.mark.parametrize(
    ("placements", "pending_requests", "served"),
    [
        # theirs took p100 for a 9Gi claim, ours p10: p100 is free for 90Gi in ours.
        ([("c1", "p100", "p10")], ["90Gi"], True),
        # Both took p100: nothing left for 90Gi.
        ([("c1", "p100", "p100")], ["90Gi"], False),
        # Ours chose p10 twice on the real cluster (free there both times): the second
        # claim finds no other PV free in ours on our node a, and is unserved there;
        # 90Gi still gets p100.
        ([("c1", "p100", "p10"), ("c2", "p50", "p10")], ["90Gi"], True),
        # Two pending claims of one pod need two different PVs.
        ([("c1", "p100", "p10")], ["60Gi", "60Gi"], False),
        ([("c1", "p100", "p10"), ("c2", "p50", None)], ["40Gi", "60Gi"], True),
    ],
)
def test_the_ledger_tells_which_pending_claims_volsched_would_have_served(
    placements: list[tuple[str, str, str | None]], pending_requests: list[str], served: bool
) -> None:
    claims = [pvc(name, request="9Gi") for name, _, _ in placements]
    waiting = [pvc(f"w{index}", request=size) for index, size in enumerate(pending_requests)]
    bound = []
    for raw_pv in VOLUMES:
        taken = [name for name, theirs, _ in placements if theirs == raw_pv["metadata"]["name"]]
        if taken:
            raw_pv = pv(
                raw_pv["metadata"]["name"],
                raw_pv["spec"]["capacity"]["storage"],
                node_names=raw_pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0][
                    "matchExpressions"
                ][0]["values"],
                claim=("default", taken[0]),
                phase="Bound",
            )
        bound.append(raw_pv)
    cache = cluster(*NODES, storage_class("local"), *bound, *claims, *waiting)
    ledger = PvLedger()
    for name, theirs, ours in placements:
        key = f"default/{name}"
        ledger.placed(cache, {key: theirs}, {key: ours} if ours else {}, "a")
    pending = [cache.pvcs.get(f"default/w{index}") for index in range(len(pending_requests))]
    assert ledger.would_serve(cache, [claim for claim in pending if claim is not None]) is served


@pytest.mark.parametrize(
    ("replicas", "node_name", "off"),
    [
        ([("r1", "n1"), ("r2", "n2")], "n1", 0),
        ([("r1", "n1"), ("r2", "n2")], "n3", 1),
        ([], "n1", 1),
    ],
)
def test_a_replicated_volume_without_a_replica_on_the_node_is_off_node(
    replicas: list[tuple[str, str]], node_name: str, off: int
) -> None:
    objects: list[Raw] = [*host("n1"), *host("n2"), *host("n3"), volume("vol")]
    objects += [replica(name, "vol", on) for name, on in replicas]
    objects += [*bound_claim("data", "vol"), pod("app", claims=["data"])]
    cache = cluster(*objects)
    assert volumes_off_node(cache, cache.pods["default/app"], node_name) == off


def test_a_pod_without_replicated_volumes_is_not_counted() -> None:
    cache = cluster(*NODES, pod("app"))
    assert volumes_off_node(cache, cache.pods["default/app"], "a") is None


def test_the_totals_add_up() -> None:
    savings = StorageSavings()
    savings.record((91, 1), None)
    savings.record(None, (1, 0))
    savings.record((10, 10), (2, 1))
    savings.pending_for_volumes.update({"default/x": True, "default/y": False})
    report = savings.report()
    assert report == {
        "claimPods": 2,
        "theirStrandedBytes": 101,
        "ourStrandedBytes": 11,
        "savedBytes": 90,
        "replicatedPods": 2,
        "theirVolumesOffNode": 3,
        "ourVolumesOffNode": 1,
        "pendingForVolumes": 2,
        "pendingServedByVolsched": 1,
    }
