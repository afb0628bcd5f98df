"""Pods of Longhorn volumes, as ``simulate`` decides them on Longhorn-shaped objects:
locality scores from Longhorn's Replicas, strict-local feasibility, and WaitForFirstConsumer
claims of Longhorn classes checked with the cluster's Longhorn Settings."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import node, pod, pvc
from tests.unit.longhorn.objects import (
    GIB,
    LonghornDisk,
    Raw,
    disk_uuid,
    longhorn_claim,
    longhorn_class,
    longhorn_node,
    longhorn_replica,
    longhorn_setting,
    longhorn_volume,
)
from tests.unit.test_storage_locality import NO_LOCAL_REPLICA, NOT_STORAGE_NODE, run
from volsched.scheduling.plugins.volume_binding import rejection_details

ZONE = "topology.kubernetes.io/zone"
SPACE = "node(s) did not have enough free storage"
HARD_AFFINITY = "hard affinity cannot be satisfied"
INSUFFICIENT = "insufficient storage"
HOSTNAME = "kubernetes.io/hostname"


def hosts(*disk_gib: int, zones: int = 3) -> list[Raw]:
    """n1, n2, … each with one Longhorn disk of the given size, zones z1..z<zones>."""
    objects: list[Raw] = []
    for index, size in enumerate(disk_gib, start=1):
        name = f"n{index}"
        objects.append(node(name, labels={ZONE: f"z{(index - 1) % zones + 1}"}))
        disk = LonghornDisk(maximum=size * GIB, available=size * GIB)
        objects.append(longhorn_node(name, {"default-disk-1": disk}))
    return objects


def on(node_name: str) -> dict[str, Any]:
    return {"nodeSelector": {HOSTNAME: node_name}}


# -- locality of existing volumes -----------------------------------------------------

LOCALITY_CASES: list[tuple[str, list[Raw], dict[str, int]]] = [
    (
        "best-effort, attached: replica nodes score over the others",
        [
            longhorn_volume("vol", replicas=2, locality="best-effort", node="n3"),
            longhorn_replica("vol-r-1", "vol", "n1"),
            longhorn_replica("vol-r-2", "vol", "n2"),
        ],
        {"n1": 100, "n2": 100, "n3": 50, "n4": 50},
    ),
    (
        "detached: stopped replicas still hold the data",
        [
            longhorn_volume("vol", replicas=2, state="detached", robustness="unknown"),
            longhorn_replica("vol-r-1", "vol", "n1", state="stopped"),
            longhorn_replica("vol-r-2", "vol", "n2", state="stopped"),
        ],
        {"n1": 100, "n2": 100, "n3": 50, "n4": 50},
    ),
    (
        "degraded: the healthy replica keeps its points, the failed one's node scores 1",
        [
            longhorn_volume("vol", replicas=2, robustness="degraded"),
            longhorn_replica("vol-r-1", "vol", "n1"),
            longhorn_replica(
                "vol-r-2", "vol", "n2", state="error", failed_at="2026-11-01T11:00:00Z"
            ),
        ],
        {"n1": 100, "n2": 10, "n3": 50, "n4": 50},
    ),
    (
        "a replica being rebuilt (never healthy) does not attract the pod",
        [
            longhorn_volume("vol", replicas=2),
            longhorn_replica("vol-r-1", "vol", "n1"),
            longhorn_replica("vol-r-2", "vol", "n2", state="running", healthy_at=""),
        ],
        {"n1": 100, "n2": 10, "n3": 50, "n4": 50},
    ),
]


@pytest.mark.parametrize(
    ("case", "objects", "scores"), LOCALITY_CASES, ids=[c[0] for c in LOCALITY_CASES]
)
def test_pods_score_nodes_by_where_longhorn_holds_their_data(
    case: str, objects: list[Raw], scores: dict[str, int]
) -> None:
    result = run(
        hosts(100, 100, 100, 100),
        longhorn_class(),
        *objects,
        longhorn_claim("data", "vol"),
        pod("p", claims=["data"]),
    )
    assert result.locality("p") == scores
    best = max(scores.values())
    assert scores[result.decision("p").node or ""] == best


# Where the data is, by the volume's robustness and the state of the replica on n1; n2
# holds a running, healthy replica throughout. The score shown is n1's.
FAILED_AT = "2026-11-01T11:00:00Z"
REPLICA_STATES: dict[str, dict[str, str]] = {
    "running": {},
    "stopped": {"state": "stopped"},
    "failed": {"state": "error", "failed_at": FAILED_AT},
    "rebuilding": {"state": "running", "healthy_at": ""},
}
HEALTH_CASES: list[tuple[str, str, int, int]] = [
    # (robustness, replica on n1, n1's score, n2's score)
    ("healthy", "running", 100, 100),
    ("healthy", "stopped", 10, 100),
    ("healthy", "failed", 10, 100),
    ("healthy", "rebuilding", 10, 100),
    ("degraded", "running", 100, 100),
    ("degraded", "stopped", 10, 100),
    ("degraded", "failed", 10, 100),
    ("degraded", "rebuilding", 10, 100),
    # Faulted: no copy is known good until Longhorn salvages one; every replica node
    # scores 1, whatever its replica says.
    ("faulted", "running", 10, 10),
    ("faulted", "stopped", 10, 10),
    ("faulted", "failed", 10, 10),
    ("faulted", "rebuilding", 10, 10),
]


@pytest.mark.parametrize(
    ("robustness", "state", "on_n1", "on_n2"),
    HEALTH_CASES,
    ids=[f"{robustness} volume, {state} replica" for robustness, state, _, _ in HEALTH_CASES],
)
def test_locality_follows_the_replicas_that_hold_healthy_data(
    robustness: str, state: str, on_n1: int, on_n2: int
) -> None:
    result = run(
        hosts(100, 100, 100, 100),
        longhorn_class(),
        longhorn_volume("vol", replicas=2, robustness=robustness, node="n3"),
        longhorn_replica("vol-r-1", "vol", "n1", **REPLICA_STATES[state]),
        longhorn_replica("vol-r-2", "vol", "n2"),
        longhorn_claim("data", "vol"),
        pod("p", claims=["data"]),
    )
    assert result.locality("p") == {"n1": on_n1, "n2": on_n2, "n3": 50, "n4": 50}


def test_a_degraded_volumes_pod_goes_to_its_healthy_replica() -> None:
    # As reported: a healthy running replica on node-a2, a failed one on node-c2, the
    # volume degraded. The pod belongs on node-a2, not on node-c1, which has no copy.
    nodes: list[Raw] = []
    for name, zone in (("node-a2", "zone-a"), ("node-c1", "zone-c"), ("node-c2", "zone-c")):
        nodes += [node(name, labels={ZONE: zone}), longhorn_node(name)]
    result = run(
        nodes,
        longhorn_class(),
        longhorn_volume("pvc-web", replicas=2, robustness="degraded", node="node-a2"),
        longhorn_replica("pvc-web-r-a2", "pvc-web", "node-a2"),
        longhorn_replica("pvc-web-r-c2", "pvc-web", "node-c2", state="error", failed_at=FAILED_AT),
        longhorn_claim("data", "pvc-web"),
        pod("web-0", claims=["data"]),
    )
    assert result.locality("web-0") == {"node-a2": 100, "node-c1": 50, "node-c2": 10}
    assert result.decision("web-0").node == "node-a2"


def test_a_best_effort_pod_lands_on_its_replicas_node() -> None:
    result = run(
        hosts(100, 100, 100),
        longhorn_class(),
        longhorn_volume("vol", replicas=1, locality="best-effort", state="detached"),
        longhorn_replica("vol-r-1", "vol", "n2", state="stopped"),
        longhorn_claim("data", "vol"),
        pod("p", claims=["data"]),
    )
    assert result.decision("p").node == "n2"


STRICT_CASES: list[tuple[str, list[Raw], str | None, dict[str, list[str]]]] = [
    (
        "strict-local volume: only its replica's node",
        [
            longhorn_volume("vol", replicas=1, locality="strict-local", state="detached"),
            longhorn_replica("vol-r-1", "vol", "n2", state="stopped"),
        ],
        "n2",
        {"n1": [NO_LOCAL_REPLICA], "n3": [NO_LOCAL_REPLICA]},
    ),
    (
        "strict-local volume whose replica's node lost Longhorn",
        [
            longhorn_volume("vol", replicas=1, locality="strict-local", state="detached"),
            longhorn_replica("vol-r-1", "vol", "n3", state="stopped"),
        ],
        None,
        {"n1": [NO_LOCAL_REPLICA], "n2": [NO_LOCAL_REPLICA], "n3": [NOT_STORAGE_NODE]},
    ),
    (
        "best-effort volume: any ready Longhorn node",
        [
            longhorn_volume("vol", replicas=1, locality="best-effort"),
            longhorn_replica("vol-r-1", "vol", "n3"),
        ],
        "n1",
        {"n3": [NOT_STORAGE_NODE]},
    ),
]


@pytest.mark.parametrize(
    ("case", "objects", "chosen", "filtered"), STRICT_CASES, ids=[c[0] for c in STRICT_CASES]
)
def test_strict_local_longhorn_volumes_pin_their_pod(
    case: str, objects: list[Raw], chosen: str | None, filtered: dict[str, list[str]]
) -> None:
    lost = case.endswith("lost Longhorn") or case.startswith("best-effort")
    nodes = hosts(100, 100, 100)
    if lost:
        nodes[-1] = longhorn_node("n3", ready=False)
    result = run(
        nodes,
        longhorn_class(),
        *objects,
        longhorn_claim("data", "vol"),
        pod("p", claims=["data"]),
    )
    decision = result.decision("p")
    if chosen is not None and case.startswith("best-effort"):
        assert decision.node in ("n1", "n2")
    else:
        assert decision.node == chosen
    assert decision.filtered == filtered


def test_a_pod_may_ask_for_strict_locality_on_a_best_effort_volume() -> None:
    result = run(
        hosts(100, 100, 100),
        longhorn_class(),
        longhorn_volume("vol", replicas=1, locality="best-effort"),
        longhorn_replica("vol-r-1", "vol", "n3"),
        longhorn_claim("data", "vol"),
        pod("p", claims=["data"], labels={"volsched.io/locality": "strict"}),
    )
    decision = result.decision("p")
    assert decision.node == "n3"
    assert decision.filtered == {"n1": [NO_LOCAL_REPLICA], "n2": [NO_LOCAL_REPLICA]}


# -- WaitForFirstConsumer claims of Longhorn classes ----------------------------------


def test_a_strict_local_wfc_claim_refuses_nodes_that_cannot_hold_it() -> None:
    result = run(
        hosts(100, 100, 200),
        longhorn_class(numberOfReplicas="1", dataLocality="strict-local"),
        pvc("data", "150Gi", "longhorn"),
        pod("p", claims=["data"]),
    )
    outcome = result.outcome("p")
    decision = outcome.decision
    assert decision.node == "n3"
    assert decision.filtered == {"n1": [SPACE], "n2": [SPACE]}
    # longhorn-manager says "hard affinity" only when the volume's node is not a
    # schedulable Longhorn node; a schedulable node whose disks are too small is
    # "insufficient storage".
    assert rejection_details(decision.state, "n1") == [INSUFFICIENT]
    # Where Longhorn could put the replica is shown, and nothing is left for volsched
    # to write: Longhorn creates its replicas itself.
    replicas = [{"node": "n3", "disk": disk_uuid("n3", "default-disk-1")}]
    assert outcome.volumes == {"data": {"provision": True, "replicas": replicas}}
    assert result.result.volumes == []


def test_a_strict_local_claim_pinned_to_a_node_longhorn_cannot_use_stays_pending() -> None:
    nodes = hosts(100, 100, 200)
    nodes[1] = longhorn_node("n1", allow=False)
    result = run(
        nodes,
        longhorn_class(numberOfReplicas="1", dataLocality="strict-local"),
        pvc("data", "150Gi", "longhorn"),
        pod("p", claims=["data"], spec=on("n1")),
    )
    decision = result.decision("p")
    assert decision.node is None
    assert rejection_details(decision.state, "n1") == [HARD_AFFINITY]
    assert decision.message == (
        "0/3 nodes are available: 1 node(s) did not have enough free storage, "
        "2 node(s) didn't match Pod's node affinity/selector."
    )


SETTING_CASES: list[tuple[str, list[Raw], dict[str, str], str | None]] = [
    ("defaults: 100% over-provisioning, 150 GiB does not fit 100 GiB disks", [], {}, "n3"),
    (
        "storage-over-provisioning-percentage 200 lets n1 take it",
        [longhorn_setting("storage-over-provisioning-percentage", "200")],
        {},
        "n1",
    ),
    (
        "the per-data-engine JSON form of a Setting",
        [longhorn_setting("storage-over-provisioning-percentage", '{"v1":"200","v2":"100"}')],
        {},
        "n1",
    ),
    (
        "default-replica-count 3 with hard node anti-affinity: nowhere",
        [
            longhorn_setting("default-replica-count", "3"),
            longhorn_setting("replica-soft-anti-affinity", "false"),
        ],
        {"dataLocality": "best-effort", "numberOfReplicas": ""},
        None,
    ),
    (
        "default-data-locality strict-local with default-replica-count 1",
        [
            longhorn_setting("default-replica-count", "1"),
            longhorn_setting("default-data-locality", "strict-local"),
        ],
        {},
        "n3",
    ),
]


@pytest.mark.parametrize(
    ("case", "settings", "parameters", "chosen"), SETTING_CASES, ids=[c[0] for c in SETTING_CASES]
)
def test_wfc_claims_are_checked_with_longhorns_settings(
    case: str, settings: list[Raw], parameters: dict[str, str], chosen: str | None
) -> None:
    given = {"numberOfReplicas": "1", "dataLocality": "strict-local", **parameters}
    if case.startswith("default-data-locality"):
        given = {}
    given = {key: value for key, value in given.items() if value}
    result = run(
        hosts(100, 100, 200),
        *settings,
        longhorn_class(**given),
        pvc("data", "150Gi", "longhorn"),
        pod("p", claims=["data"], spec=on(chosen) if chosen else None),
    )
    assert result.decision("p").node == chosen
