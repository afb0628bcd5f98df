"""Pod locality for replicated volumes (Ondat semantics), as a user sees it in
``simulate``: which node a pod gets, why the others were rejected, and each node's
``VolumeLocality`` score — run through the default policy with the storage rules, the
same profile ``volsched simulate`` builds for a cluster with StorageNodes.

The builders here describe hosts (a Node and its StorageNode), Volumes, Replicas and the
PV/claim pairs backed by them; ``test_replicated_provisioning`` uses them too.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import Any

import pytest

from tests.support import cluster, node, pod, pv, pvc, storage_class
from tests.unit.replicas.builders import GB, Disk, Host, raw_storage_node
from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.fields import parse_time
from volsched.scheduling.framework.runner import Decision, Scheduler
from volsched.scheduling.policy import default_policy
from volsched.scheduling.profile_builder import PluginFactory, build_profile
from volsched.scheduling.provisioners import storage_provisioners
from volsched.scheduling.replicas import ReplicaSchedulingSettings
from volsched.scheduling.simulation import PodOutcome, SimulationResult, simulate
from volsched.scheduling.storage_placement import (
    REPLICATED_PROVISIONER,
    ReplicaContext,
)

Raw = dict[str, Any]
ZONE = "topology.kubernetes.io/zone"
API = "volsched.io/v1alpha1"
NOW = parse_time("2026-11-01T12:00:00Z")

NOT_STORAGE_NODE = "node(s) were not ready storage nodes"
NO_LOCAL_REPLICA = "node(s) didn't have a replica of the pod's strict-locality volumes"
STRICT = {"volsched.io/locality": "strict"}
LEGACY_STRICT = {"storageos.com/locality": "strict"}


# -- builders ------------------------------------------------------------------------


def host(
    name: str,
    zone: str = "z1",
    disks: dict[str, Disk] | None = None,
    *,
    storage: bool = True,
    node_ready: bool = True,
    **storage_flags: Any,
) -> list[Raw]:
    """A Kubernetes Node and (unless ``storage`` is false) its StorageNode.

    ``storage_flags`` are ``Host`` fields: ``storage_ready``, ``allow`` (false:
    storage-cordoned), ``evicting``, ``compute_only``, ``tags``.
    """
    kube = node(name, labels={ZONE: zone})
    if not node_ready:
        kube["status"]["conditions"] = [{"type": "Ready", "status": "False"}]
    objects = [kube]
    if storage:
        spec = Host(name, zone=zone, disks=disks or {"d1": Disk(100 * GB)}, **storage_flags)
        objects.append(raw_storage_node(spec))
    return objects


def volume(
    name: str,
    size: int = 10 * GB,
    replicas: int = 3,
    robustness: str = "healthy",
    status: Raw | None = None,
    **spec: Any,
) -> Raw:
    return {
        "apiVersion": API,
        "kind": "Volume",
        "metadata": {"name": name},
        "spec": {"size": size, "numberOfReplicas": replicas, **spec},
        "status": {"robustness": robustness, **(status or {})},
    }


def replica(
    name: str,
    volume_name: str,
    node_name: str = "",
    disk: str = "d1",
    *,
    primary: bool = False,
    synced: bool = True,
    **spec: Any,
) -> Raw:
    return {
        "apiVersion": API,
        "kind": "Replica",
        "metadata": {"name": name},
        "spec": {
            "volumeName": volume_name,
            "nodeID": node_name,
            "diskID": disk if node_name else "",
            "primary": primary,
            **spec,
        },
        "status": {"synced": synced},
    }


def replicated_class(name: str = "replicated", **parameters: str) -> Raw:
    return storage_class(name, provisioner=REPLICATED_PROVISIONER, parameters=parameters or None)


def bound_claim(claim: str, volume_name: str, namespace: str = "default") -> list[Raw]:
    """A claim bound to a PV backed by the replicated Volume ``volume_name``."""
    pv_name = f"pv-{volume_name}"
    return [
        pv(
            pv_name,
            "10Gi",
            storage_class="replicated",
            claim=(namespace, claim),
            phase="Bound",
            spec={"csi": {"driver": REPLICATED_PROVISIONER, "volumeHandle": volume_name}},
        ),
        pvc(claim, "10Gi", "replicated", namespace, volume_name=pv_name, bound=True),
    ]


# -- running a snapshot --------------------------------------------------------------


@dataclass
class Run:
    cache: ClusterCache
    scheduler: Scheduler
    result: SimulationResult

    def outcome(self, pod_name: str) -> PodOutcome:
        for outcome in self.result.pods:
            if outcome.pod.meta.name == pod_name:
                return outcome
        raise KeyError(pod_name)

    def decision(self, pod_name: str) -> Decision:
        return self.outcome(pod_name).decision

    def locality(self, pod_name: str) -> dict[str, int]:
        """Each feasible node's VolumeLocality score (before weight)."""
        parts = self.decision(pod_name).score_parts
        return {name: scores["VolumeLocality"] for name, scores in sorted(parts.items())}


def run(
    *objects: Raw | list[Raw],
    settings: ReplicaSchedulingSettings | None = None,
    seed: int = 0,
) -> Run:
    """``volsched simulate`` on these objects: default policy with the storage rules."""
    flat: list[Raw] = []
    for item in objects:
        flat.extend(item if isinstance(item, list) else [item])
    cache = cluster(*flat)
    context = ReplicaContext(cache, settings or ReplicaSchedulingSettings(), clock=lambda: NOW)
    plugins = PluginFactory(cache, storage_provisioners(context))
    profile = build_profile(default_policy(with_storage=True), plugins)
    scheduler = Scheduler(cache, profile, random.Random(seed))
    return Run(cache, scheduler, simulate(cache, scheduler, context))


def four_hosts(**n4_flags: Any) -> list[Raw]:
    """n1..n4 in three zones; ``n4_flags`` go to ``host`` for n4."""
    return [
        *host("n1", "z1"),
        *host("n2", "z2"),
        *host("n3", "z3"),
        *host("n4", "z3", **n4_flags),
    ]


# -- StorageNodeReady ----------------------------------------------------------------

NODE_STATES: list[tuple[str, dict[str, Any]]] = [
    ("no StorageNode", {"storage": False}),
    ("StorageNode not ready", {"storage_ready": False}),
    ("Kubernetes Node not Ready", {"node_ready": False}),
    ("storage-cordoned", {"allow": False}),
    ("evicting (drained)", {"evicting": True}),
    ("compute-only", {"compute_only": True}),
]


@pytest.mark.parametrize(("case", "flags"), NODE_STATES, ids=[c for c, _ in NODE_STATES])
def test_storage_pods_need_a_ready_storage_node(case: str, flags: dict[str, Any]) -> None:
    result = run(
        four_hosts(**flags),
        replicated_class(),
        volume("vol-a", replicas=1),
        replica("r1", "vol-a", "n1", primary=True),
        bound_claim("data", "vol-a"),
        pod("p", claims=["data"]),
    )
    decision = result.decision("p")
    assert decision.node == "n1"
    assert decision.filtered == {"n4": [NOT_STORAGE_NODE]}
    assert decision.rejected_by == {"n4": "StorageNodeReady"}


@pytest.mark.parametrize(("case", "flags"), NODE_STATES, ids=[c for c, _ in NODE_STATES])
def test_an_unbound_replicated_claim_needs_a_ready_storage_node(
    case: str, flags: dict[str, Any]
) -> None:
    # Best-effort replicas can be placed from any node's point of view, so the volume
    # check passes everywhere and StorageNodeReady is what rejects n4.
    result = run(
        four_hosts(**flags),
        replicated_class(numberOfReplicas="1", dataLocality="best-effort"),
        pvc("data", "1Gi", "replicated"),
        pod("p", claims=["data"], spec={"nodeSelector": {"kubernetes.io/hostname": "n4"}}),
    )
    decision = result.decision("p")
    assert decision.node is None
    assert decision.filtered["n4"] == [NOT_STORAGE_NODE]
    assert decision.message == (
        "0/4 nodes are available: 1 node(s) were not ready storage nodes, "
        "3 node(s) didn't match Pod's node affinity/selector."
    )


@pytest.mark.parametrize(
    ("case", "claims_objects"),
    [
        ("no volumes", []),
        ("a claim of another class", [storage_class("local"), pvc("data", "1Gi", "local")]),
    ],
)
def test_pods_without_replicated_volumes_ignore_storage_nodes(
    case: str, claims_objects: list[Raw]
) -> None:
    claims = ["data"] if claims_objects else []
    objects: list[Raw] = []
    for index, flags in enumerate(NODE_STATES):
        objects += host(f"n{index}", f"z{index % 3}", **flags[1])
    if claims_objects:
        # Something a node-less WaitForFirstConsumer claim can bind to, on every node.
        objects += [pv(f"local-{index}", "1Gi", node_names=[f"n{index}"]) for index in range(6)]
    result = run(*objects, *claims_objects, pod("p", claims=claims))
    decision = result.decision("p")
    assert decision.node is not None
    assert decision.filtered == {}
    assert set(result.locality("p").values()) == {0}


# -- VolumeLocality ------------------------------------------------------------------

# A minute before NOW: inside the replenishment wait, so a failed replica keeps its place
# and nothing is placed instead before the pod.
DEGRADED_AT = "2026-11-01T11:59:00Z"

SCORE_CASES: list[tuple[str, list[Raw], dict[str, int]]] = [
    (
        "15 primary, 10 replica, 5 none, 1 unsynced",
        [
            volume("vol-a"),
            replica("r1", "vol-a", "n1", primary=True),
            replica("r2", "vol-a", "n2"),
            replica("r3", "vol-a", "n3", synced=False),
        ],
        {"n1": 150, "n2": 100, "n3": 10, "n4": 50},
    ),
    (
        "an unsynced primary scores 1",
        [
            volume("vol-a", replicas=2),
            replica("r1", "vol-a", "n1", primary=True, synced=False),
            replica("r2", "vol-a", "n2"),
        ],
        {"n1": 10, "n2": 100, "n3": 50, "n4": 50},
    ),
    *[
        (
            f"a volume {robustness!r} scores 1 wherever it has a replica",
            [
                volume("vol-a", replicas=2, robustness=robustness),
                replica("r1", "vol-a", "n1", primary=True),
                replica("r2", "vol-a", "n2"),
            ],
            {"n1": 10, "n2": 10, "n3": 50, "n4": 50},
        )
        for robustness in ("faulted", "unknown")
    ],
    (
        # The reported case for volsched's own kinds: the synced primary holds the data.
        "a degraded volume: its synced replicas keep their points, the failed one scores 1",
        [
            volume("vol-a", robustness="degraded", status={"lastDegradedAt": DEGRADED_AT}),
            replica("r1", "vol-a", "n1", primary=True),
            replica("r2", "vol-a", "n2"),
            replica("r3", "vol-a", "n3", failedAt=DEGRADED_AT, synced=False),
        ],
        {"n1": 150, "n2": 100, "n3": 10, "n4": 50},
    ),
    (
        "a degraded volume: an unsynced (rebuilding) replica scores 1",
        [
            volume("vol-a", replicas=2, robustness="degraded"),
            replica("r1", "vol-a", "n1", primary=True, synced=False),
            replica("r2", "vol-a", "n2"),
        ],
        {"n1": 10, "n2": 100, "n3": 50, "n4": 50},
    ),
    (
        # Failed a minute ago: still inside the replenishment wait, so it keeps its place
        # (nothing is placed instead) but it is not a usable copy yet.
        "a failed replica scores 1",
        [
            volume("vol-a", replicas=2, status={"lastDegradedAt": "2026-11-01T11:59:00Z"}),
            replica("r1", "vol-a", "n1", primary=True),
            replica("r2", "vol-a", "n2", failedAt="2026-11-01T11:59:00Z"),
        ],
        {"n1": 150, "n2": 10, "n3": 50, "n4": 50},
    ),
]


@pytest.mark.parametrize(
    ("case", "storage", "expected"), SCORE_CASES, ids=[c for c, _, _ in SCORE_CASES]
)
def test_volume_locality_score(case: str, storage: list[Raw], expected: dict[str, int]) -> None:
    result = run(
        four_hosts(),
        replicated_class(),
        *storage,
        bound_claim("data", "vol-a"),
        pod("p", claims=["data"]),
    )
    # vol-a has all its replicas: nothing is placed before the pod.
    assert result.result.volumes == []
    assert result.locality("p") == expected
    best = max(expected.values())
    assert result.decision("p").node in {name for name, score in expected.items() if score == best}


MEAN_CASES: list[tuple[str, list[tuple[str, bool]], int]] = [
    # Per volume, where its replica on n1 is: (primary / replica / none / unsynced).
    ("15 and 5: mean 10", [("primary", True), ("none", True)], 100),
    ("15 and 10: 12.5 rounds up to 13", [("primary", True), ("replica", True)], 130),
    ("10 and 5: 7.5 rounds up to 8", [("replica", True), ("none", True)], 80),
    ("1 and 10: 5.5 rounds up to 6", [("replica", False), ("replica", True)], 60),
    ("15, 10 and 1: 8.67 rounds to 9", [("primary", True), ("replica", True), ("x", False)], 90),
    ("5, 5 and 1: 3.67 rounds to 4", [("none", True), ("none", True), ("x", False)], 40),
]


@pytest.mark.parametrize(
    ("case", "on_n1", "expected"), MEAN_CASES, ids=[c for c, _, _ in MEAN_CASES]
)
def test_several_volumes_score_their_mean_rounded_half_away_from_zero(
    case: str, on_n1: list[tuple[str, bool]], expected: int
) -> None:
    objects: list[Raw] = [*four_hosts(), replicated_class()]
    claims = []
    for index, (kind, synced) in enumerate(on_n1):
        name = f"vol-{index}"
        objects.append(volume(name, replicas=2))
        # Every volume keeps one healthy replica on n2 so it is complete.
        objects.append(replica(f"{name}-n2", name, "n2"))
        if kind == "none":
            objects.append(replica(f"{name}-n3", name, "n3"))
        else:
            objects.append(
                replica(f"{name}-n1", name, "n1", primary=kind == "primary", synced=synced)
            )
        objects += bound_claim(f"data-{index}", name)
        claims.append(f"data-{index}")
    result = run(*objects, pod("p", claims=claims))
    assert result.locality("p")["n1"] == expected


def test_pods_without_replicated_volumes_score_zero() -> None:
    result = run(
        four_hosts(),
        replicated_class(numberOfReplicas="1"),
        pvc("new", "1Gi", "replicated"),
        pod("plain"),
        pod("fresh", claims=["new"]),
    )
    assert set(result.locality("plain").values()) == {0}
    # A volume about to be created has no replica anywhere yet.
    assert set(result.locality("fresh").values()) == {0}


# -- strict locality (CheckVolumeLocality) -------------------------------------------

STRICT_CASES: list[tuple[str, dict[str, str], set[str]]] = [
    ("volsched.io/locality: strict", STRICT, {"n1", "n2", "n3"}),
    ("storageos.com/locality: strict", LEGACY_STRICT, {"n1", "n2", "n3"}),
    (
        "ours wins: strict over legacy preferred",
        {"volsched.io/locality": "strict", "storageos.com/locality": "preferred"},
        {"n1", "n2", "n3"},
    ),
    (
        "ours wins: preferred over legacy strict",
        {"volsched.io/locality": "preferred", "storageos.com/locality": "strict"},
        {"n1", "n2", "n3", "n4"},
    ),
    ("preferred is the default", {}, {"n1", "n2", "n3", "n4"}),
    (
        "an unknown value is preferred",
        {"volsched.io/locality": "Strict!"},
        {"n1", "n2", "n3", "n4"},
    ),
]


@pytest.mark.parametrize(
    ("case", "labels", "feasible"), STRICT_CASES, ids=[c for c, _, _ in STRICT_CASES]
)
def test_strict_locality_keeps_the_pod_next_to_a_replica(
    case: str, labels: dict[str, str], feasible: set[str]
) -> None:
    result = run(
        four_hosts(),
        replicated_class(),
        volume("vol-a"),
        replica("r1", "vol-a", "n1", primary=True),
        replica("r2", "vol-a", "n2"),
        # Still a replica while it rebuilds: strict accepts the node.
        replica("r3", "vol-a", "n3", synced=False),
        bound_claim("data", "vol-a"),
        pod("p", claims=["data"], labels=labels),
    )
    decision = result.decision("p")
    assert set(decision.scores) == feasible
    rejected = {"n1", "n2", "n3", "n4"} - feasible
    assert decision.filtered == {name: [NO_LOCAL_REPLICA] for name in rejected}
    assert decision.rejected_by == {name: "CheckVolumeLocality" for name in rejected}
    assert decision.node == "n1"


def test_strict_locality_needs_a_replica_of_every_volume() -> None:
    result = run(
        four_hosts(),
        replicated_class(),
        volume("vol-a", replicas=2),
        replica("a1", "vol-a", "n1"),
        replica("a2", "vol-a", "n2", primary=True),
        volume("vol-b", replicas=2),
        replica("b1", "vol-b", "n2", synced=False),
        replica("b2", "vol-b", "n3", primary=True),
        *bound_claim("data-a", "vol-a"),
        *bound_claim("data-b", "vol-b"),
        pod("p", claims=["data-a", "data-b"], labels=STRICT),
    )
    decision = result.decision("p")
    assert decision.node == "n2"
    assert decision.filtered == {
        "n1": [NO_LOCAL_REPLICA],
        "n3": [NO_LOCAL_REPLICA],
        "n4": [NO_LOCAL_REPLICA],
    }
    # No eviction brings a replica to a node: preemption never targets these nodes.
    assert decision.unresolvable_nodes == {"n1", "n3", "n4"}
    # 15 for vol-a's primary, 1 for vol-b's unsynced copy: 8 after rounding.
    assert result.locality("p") == {"n2": 80}


def test_a_strict_pod_without_a_usable_replica_node_stays_pending() -> None:
    result = run(
        *host("n1", "z1", allow=False),
        *host("n2", "z2"),
        *host("n3", "z3", compute_only=True),
        replicated_class(),
        volume("vol-a", replicas=1),
        replica("r1", "vol-a", "n1", primary=True),
        bound_claim("data", "vol-a"),
        pod("p", claims=["data"], labels=LEGACY_STRICT),
    )
    decision = result.decision("p")
    assert decision.node is None
    assert decision.filtered == {
        "n1": [NOT_STORAGE_NODE],
        "n2": [NO_LOCAL_REPLICA],
        "n3": [NOT_STORAGE_NODE],
    }
    assert decision.message == (
        "0/3 nodes are available: 1 node(s) didn't have a replica of the pod's "
        "strict-locality volumes, 2 node(s) were not ready storage nodes."
    )


def test_strict_applies_only_to_volumes_that_exist() -> None:
    # A claim still to be provisioned has no replica to stay next to; the replica
    # scheduler puts its replica on the pod's node instead (best-effort).
    result = run(
        four_hosts(),
        replicated_class(numberOfReplicas="1", dataLocality="best-effort"),
        pvc("new", "1Gi", "replicated"),
        pod("p", claims=["new"], labels=STRICT),
    )
    outcome = result.outcome("p")
    assert outcome.decision.filtered == {}
    assert outcome.volumes["new"]["replicas"] == [{"node": outcome.decision.node, "disk": "d1"}]
