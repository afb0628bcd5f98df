"""Pod and replicas decided together, as ``simulate`` and ``explain`` show it.

A claim of a ``replicated.volsched.io`` WaitForFirstConsumer class is provisionable on a
node only if every replica of its new volume can be placed with that node as the
volume's node; the placement is assumed with the pod (so the next pod and the next
volume see the space as taken) and released with it. Existing Volumes' missing replicas
are placed first, in name order, and pods follow them.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.support import cluster, pod, pvc
from tests.unit.replicas.builders import GB, Disk
from tests.unit.test_storage_locality import (
    NOT_STORAGE_NODE,
    STRICT,
    Raw,
    bound_claim,
    host,
    replica,
    replicated_class,
    run,
    volume,
)
from volsched.cache.objects.core import parse_pod
from volsched.scheduling.framework.runner import Scheduler
from volsched.scheduling.plugins.volume_binding import rejection_details
from volsched.scheduling.policy import default_policy
from volsched.scheduling.profile_builder import PluginFactory, build_profile
from volsched.scheduling.provisioners import storage_provisioners
from volsched.scheduling.replicas import ReplicaSchedulingSettings
from volsched.scheduling.storage_placement import ReplicaContext, ReplicatedProvisioner

SPACE = "node(s) did not have enough free storage"
INSUFFICIENT = "insufficient storage"
HARD_AFFINITY = "hard affinity cannot be satisfied"
TAGS = "tags not fulfilled"
FAILED = "replica scheduling failed"
HOSTNAME = "kubernetes.io/hostname"
NOT_SELECTED = "node(s) didn't match Pod's node affinity/selector"

STRICT_LOCAL = {"numberOfReplicas": "1", "dataLocality": "strict-local"}
BEST_EFFORT = {"numberOfReplicas": "3", "dataLocality": "best-effort"}
DISABLED = {"numberOfReplicas": "3", "dataLocality": "disabled"}


def pinned(name: str, claims: list[str], node_name: str | None = None, **extra: Any) -> Raw:
    """A pod; with ``node_name``, a nodeSelector on that hostname."""
    spec = {"nodeSelector": {HOSTNAME: node_name}} if node_name else None
    return pod(name, claims=claims, spec=spec, **extra)


def three_zones(n4_disk: int = 100) -> list[Raw]:
    """n1..n3 with a 1000 GB disk, one per zone; n4 in z3 with a smaller disk."""
    return [
        *host("n1", "z1", {"d1": Disk(1000 * GB)}),
        *host("n2", "z2", {"d1": Disk(1000 * GB)}),
        *host("n3", "z3", {"d1": Disk(1000 * GB)}),
        *host("n4", "z3", {"d1": Disk(n4_disk * GB)}),
    ]


def spots(*pairs: str) -> list[dict[str, str]]:
    return [{"node": pair.split("/")[0], "disk": pair.split("/")[1]} for pair in pairs]


# -- feasibility per node ------------------------------------------------------------

# (case, hosts, class parameters, claim size, pinned node,
#  chosen node, its replicas, rejected nodes -> explain details)
PLACEMENT_CASES: list[
    tuple[
        str,
        list[Raw],
        dict[str, str],
        str,
        str | None,
        str | None,
        list[dict[str, str]],
        dict[str, list[str]],
    ]
] = [
    (
        "strict-local: the one replica on the pod's node, or the node is out",
        [
            *host("n1", "z1", {"d1": Disk(100 * GB)}),
            *host("n2", "z2", {"d1": Disk(30 * GB)}),
            *host("n3", "z3", compute_only=True),
        ],
        STRICT_LOCAL,
        "40G",
        None,
        "n1",
        spots("n1/d1"),
        {"n2": [INSUFFICIENT], "n3": [HARD_AFFINITY]},
    ),
    (
        "strict-local with a disk selector: disks without the tag do not count",
        [
            *host("n1", "z1", {"d1": Disk(100 * GB), "d2": Disk(100 * GB, tags=("ssd",))}),
            *host("n2", "z2", {"d1": Disk(100 * GB)}),
        ],
        {**STRICT_LOCAL, "diskSelector": "ssd"},
        "40G",
        None,
        "n1",
        spots("n1/d2"),
        {"n2": [TAGS]},
    ),
    (
        "best-effort: one replica on the pod's node first, the others in other zones",
        three_zones(),
        BEST_EFFORT,
        "40G",
        "n4",
        "n4",
        spots("n4/d1", "n1/d1", "n2/d1"),
        {},
    ),
    (
        "best-effort: the pod's node cannot hold one, the volume is placed elsewhere",
        three_zones(n4_disk=10),
        BEST_EFFORT,
        "40G",
        "n4",
        "n4",
        spots("n1/d1", "n2/d1", "n3/d1"),
        {},
    ),
    (
        "disabled: the replicas go wherever the replica scheduler likes best",
        three_zones(),
        DISABLED,
        "40G",
        "n4",
        "n4",
        spots("n1/d1", "n2/d1", "n3/d1"),
        {},
    ),
    (
        "three replicas, two storage nodes: no node can take the pod",
        [*host("n1", "z1"), *host("n2", "z2"), *host("n3", "z3", storage=False)],
        BEST_EFFORT,
        "1G",
        None,
        None,
        [],
        {"n1": [FAILED], "n2": [FAILED], "n3": [FAILED]},
    ),
    (
        "a node selector no storage node carries",
        three_zones(),
        {**DISABLED, "nodeSelector": "fast, nvme"},
        "1G",
        None,
        None,
        [],
        {name: [FAILED] for name in ("n1", "n2", "n3", "n4")},
    ),
]


@pytest.mark.parametrize(
    ("case", "hosts", "parameters", "size", "pin", "chosen", "replicas", "rejected"),
    PLACEMENT_CASES,
    ids=[case[0] for case in PLACEMENT_CASES],
)
def test_a_new_volume_is_provisionable_where_all_its_replicas_fit(
    case: str,
    hosts: list[Raw],
    parameters: dict[str, str],
    size: str,
    pin: str | None,
    chosen: str | None,
    replicas: list[dict[str, str]],
    rejected: dict[str, list[str]],
) -> None:
    result = run(
        *hosts,
        replicated_class(**parameters),
        pvc("data", size, "replicated"),
        pinned("p", ["data"], pin),
    )
    outcome = result.outcome("p")
    decision = outcome.decision
    assert decision.node == chosen
    for name, details in rejected.items():
        assert decision.filtered[name] == [SPACE], name
        assert decision.rejected_by[name] == "CheckVolumeBinding"
        assert rejection_details(decision.state, name) == details, name
    if chosen is None:
        total = len(decision.filtered)
        assert decision.message == f"0/{total} nodes are available: {total} {SPACE}."
        assert outcome.volumes == {}
        assert result.result.volumes == []
        return
    assert outcome.volumes == {"data": {"provision": True, "replicas": replicas}}
    assert result.result.volumes == [
        {"volume": "pvc-uid-pvc-default-data", "placed": replicas, "unplaced": 0, "message": None}
    ]
    # The reservation selected the node for the provisioner and assumed the replicas.
    claim = result.cache.pvcs.get("default/data")
    assert claim is not None
    assert claim.selected_node == chosen
    assumed = result.cache.assumed_replicas["pvc-uid-pvc-default-data"]
    assert [{"node": a.node, "disk": a.disk} for a in assumed] == replicas
    assert all(a.synced for a in assumed)


def test_a_pinned_pod_on_a_node_that_cannot_hold_its_strict_local_volume() -> None:
    result = run(
        *host("n1", "z1", {"d1": Disk(100 * GB)}),
        *host("n2", "z2", {"d1": Disk(100 * GB)}, allow=False),
        replicated_class(**STRICT_LOCAL),
        pvc("data", "10G", "replicated"),
        pinned("p", ["data"], "n2"),
    )
    decision = result.decision("p")
    assert decision.node is None
    assert decision.message == (f"0/2 nodes are available: 1 {SPACE}, 1 {NOT_SELECTED}.")
    assert rejection_details(decision.state, "n2") == [HARD_AFFINITY]


# -- the chosen placement is assumed with the pod ------------------------------------

SHARING_CASES: list[tuple[str, list[Raw], dict[str, str], list[tuple[str, list[str]]]]] = [
    (
        "two pods, room for one strict-local volume",
        [*host("n1", "z1", {"d1": Disk(100 * GB)})],
        STRICT_LOCAL,
        [("p1", ["a"]), ("p2", ["b"])],
    ),
    (
        "two pods, room for one volume's three replicas",
        [
            *host("n1", "z1", {"d1": Disk(100 * GB)}),
            *host("n2", "z2", {"d1": Disk(100 * GB)}),
            *host("n3", "z3", {"d1": Disk(100 * GB)}),
        ],
        BEST_EFFORT,
        [("p1", ["a"]), ("p2", ["b"])],
    ),
    (
        "one pod with two volumes, room for one",
        [*host("n1", "z1", {"d1": Disk(100 * GB)})],
        STRICT_LOCAL,
        [("p1", ["a", "b"])],
    ),
]


@pytest.mark.parametrize(
    ("case", "hosts", "parameters", "pods"),
    SHARING_CASES,
    ids=[case[0] for case in SHARING_CASES],
)
def test_space_promised_to_one_volume_is_not_promised_again(
    case: str, hosts: list[Raw], parameters: dict[str, str], pods: list[tuple[str, list[str]]]
) -> None:
    # Each volume takes 60 of a disk's 100 GB: a disk can hold one, never two.
    result = run(
        *hosts,
        replicated_class(**parameters),
        pvc("a", "60G", "replicated"),
        pvc("b", "60G", "replicated"),
        *[
            pod(name, claims=claims, created=f"2026-01-01T00:0{i}:00Z")
            for i, (name, claims) in enumerate(pods)
        ],
    )
    placed = [entry["volume"] for entry in result.result.volumes]
    nodes = len(hosts) // 2
    if len(pods) == 2:
        assert result.decision("p1").node is not None
        assert placed == ["pvc-uid-pvc-default-a"]
        p2 = result.decision("p2")
        assert p2.node is None
        assert p2.message == f"0/{nodes} nodes are available: {nodes} {SPACE}."
        assert rejection_details(p2.state, "n1") == [INSUFFICIENT]
    else:
        p1 = result.decision("p1")
        assert p1.node is None
        assert p1.message == f"0/1 nodes are available: 1 {SPACE}."
        assert rejection_details(p1.state, "n1") == [INSUFFICIENT]
        assert placed == []
    # Whatever was promised fits every disk's over-provisioning limit (100 GB here).
    promised: dict[tuple[str, str], int] = {}
    for entry in result.result.volumes:
        for spot in entry["placed"]:
            key = (spot["node"], spot["disk"])
            promised[key] = promised.get(key, 0) + 60
    assert all(total <= 100 for total in promised.values())


def test_one_pod_with_two_volumes_that_fit_together() -> None:
    result = run(
        *host("n1", "z1", {"d1": Disk(100 * GB)}),
        replicated_class(**STRICT_LOCAL),
        pvc("a", "40G", "replicated"),
        pvc("b", "40G", "replicated"),
        pod("p", claims=["a", "b"]),
        pod("q", claims=[], created="2026-01-01T00:01:00Z"),
    )
    outcome = result.outcome("p")
    assert outcome.decision.node == "n1"
    assert outcome.volumes == {
        "a": {"provision": True, "replicas": spots("n1/d1")},
        "b": {"provision": True, "replicas": spots("n1/d1")},
    }
    assert [entry["volume"] for entry in result.result.volumes] == [
        "pvc-uid-pvc-default-a",
        "pvc-uid-pvc-default-b",
    ]


def test_unreserve_releases_the_replicas() -> None:
    result = run(
        *host("n1", "z1", {"d1": Disk(100 * GB)}),
        replicated_class(**STRICT_LOCAL),
        pvc("a", "60G", "replicated"),
        pvc("b", "60G", "replicated"),
        pod("p1", claims=["a"], created="2026-01-01T00:00:00Z"),
        pod("p2", claims=["b"], created="2026-01-01T00:01:00Z"),
    )
    cache, scheduler = result.cache, result.scheduler
    assert result.decision("p1").node == "n1"
    assert result.decision("p2").node is None
    # p1's binding failed: its reservation is rolled back ...
    scheduler.unreserve(result.decision("p1"))
    assert cache.assumed_replicas["pvc-uid-pvc-default-a"] == []
    claim = cache.pvcs.get("default/a")
    assert claim is not None and claim.selected_node is None
    assert "default/p1" in cache.pending
    # ... so the space is free again for p2.
    retry = scheduler.schedule(cache.pending["default/p2"])
    assert retry.node == "n1"
    assert [(a.node, a.disk) for a in cache.assumed_replicas["pvc-uid-pvc-default-b"]] == [
        ("n1", "d1")
    ]


def test_pods_sharing_a_new_claim_place_its_replicas_once() -> None:
    result = run(
        *host("n1", "z1", {"d1": Disk(100 * GB)}),
        *host("n2", "z2", {"d1": Disk(100 * GB)}),
        replicated_class(**STRICT_LOCAL),
        pvc("shared", "60G", "replicated"),
        pvc("other", "60G", "replicated"),
        pod("p1", claims=["shared"], created="2026-01-01T00:00:00Z"),
        pod("p2", claims=["shared"], created="2026-01-01T00:01:00Z"),
        pod("p3", claims=["other"], created="2026-01-01T00:02:00Z"),
    )
    first = result.outcome("p1")
    second = result.outcome("p2")
    # The claim's selected node binds the second pod to the first one's node ...
    assert second.decision.node == first.decision.node
    assert second.volumes == first.volumes
    # ... without promising the disk a second time: the other node is still free.
    assert result.decision("p3").node not in (None, first.decision.node)
    assert [entry["volume"] for entry in result.result.volumes] == [
        "pvc-uid-pvc-default-shared",
        "pvc-uid-pvc-default-other",
    ]
    assert len(result.cache.assumed_replicas["pvc-uid-pvc-default-shared"]) == 1


def test_claims_without_a_uid_get_volumes_of_their_own() -> None:
    claims = []
    for name in ("a", "b"):
        claim = pvc(name, "10G", "replicated")
        del claim["metadata"]["uid"]
        claims.append(claim)
    result = run(
        *host("n1", "z1", {"d1": Disk(100 * GB)}),
        replicated_class(**STRICT_LOCAL),
        *claims,
        pod("p1", claims=["a"], created="2026-01-01T00:00:00Z"),
        pod("p2", claims=["b"], created="2026-01-01T00:01:00Z"),
    )
    assert [entry["volume"] for entry in result.result.volumes] == [
        "pvc-default.a",
        "pvc-default.b",
    ]


# -- bad StorageClass parameters -----------------------------------------------------

BAD_PARAMETERS: list[tuple[dict[str, str], str]] = [
    (
        {"numberOfReplicas": "three"},
        "StorageClass \"replicated\" parameter numberOfReplicas: 'three' is not an integer",
    ),
    (
        {"numberOfReplicas": "0"},
        'StorageClass "replicated" parameter numberOfReplicas: must be >= 1',
    ),
    (
        {"numberOfReplicas": "9" * 5000},
        'StorageClass "replicated" parameter numberOfReplicas: \''
        + "9" * 39
        + "… is not an integer",
    ),
    (
        {"numberOfReplicas": "٣"},
        "StorageClass \"replicated\" parameter numberOfReplicas: '٣' is not an integer",
    ),
    (
        {"dataLocality": "nearby"},
        "StorageClass \"replicated\" parameter dataLocality: 'nearby' is not one of "
        "disabled, best-effort, strict-local",
    ),
    (
        {"numberOfReplicas": "2", "dataLocality": "strict-local"},
        'StorageClass "replicated": dataLocality strict-local needs numberOfReplicas "1"',
    ),
]


@pytest.mark.parametrize(("parameters", "problem"), BAD_PARAMETERS)
def test_bad_storage_class_parameters_are_one_clear_error(
    parameters: dict[str, str], problem: str
) -> None:
    result = run(
        *host("n1", "z1"),
        *host("n2", "z2"),
        replicated_class(**parameters),
        pvc("data", "1G", "replicated"),
        pod("p", claims=["data"]),
        pod("other", created="2026-01-01T00:01:00Z"),
    )
    decision = result.decision("p")
    assert decision.node is None
    expected = f'running "VolumeBinding" filter plugin: {problem}'
    assert decision.error == expected
    assert decision.message == expected
    assert result.result.volumes == []
    # The error is the pod's alone: the next pod is decided as usual.
    assert result.decision("other").node is not None


# -- existing volumes first, pods follow ---------------------------------------------


def competing_volumes(actual_size: int = 0) -> list[Raw]:
    """vol-a and vol-b each lack a replica; n2 (the only other node) has room for one.

    n1 holds their first replicas and is storage-cordoned, so it takes no more."""
    objects: list[Raw] = [
        *host("n1", "z1", {"d1": Disk(1000 * GB)}, allow=False),
        *host("n2", "z2", {"d1": Disk(100 * GB)}),
        replicated_class(),
    ]
    # Listed b before a: the order of the snapshot does not matter, names do.
    for name in ("vol-b", "vol-a"):
        objects += [
            volume(name, 60 * GB, 2, status={"actualSize": actual_size}),
            replica(f"{name}-r1", name, "n1", primary=True),
            *bound_claim(f"data-{name}", name),
        ]
    return objects


def test_existing_volumes_are_placed_before_pods_in_name_order() -> None:
    result = run(
        *competing_volumes(),
        pvc("new", "10G", "replicated"),
        pod("p", claims=["new"]),
        settings=None,
    )
    volumes = result.result.volumes
    assert volumes[:2] == [
        {"volume": "vol-a", "placed": spots("n2/d1"), "unplaced": 0, "message": None},
        {"volume": "vol-b", "placed": [], "unplaced": 1, "message": INSUFFICIENT},
    ]
    # The pod's new volume needs three replicas: n2 has 40 GB left but there is no
    # third storage node, so it cannot be provisioned at all.
    assert result.decision("p").node is None
    assert len(volumes) == 2


@pytest.mark.parametrize(
    ("actual_size", "score"),
    [(0, 100), (5 * GB, 10)],
    ids=["empty volume: the new copy is synced", "volume with data: the new copy rebuilds"],
)
def test_a_strict_pod_follows_a_replica_placed_before_it(actual_size: int, score: int) -> None:
    result = run(
        *competing_volumes(actual_size),
        pod("p", claims=["data-vol-a"], labels=STRICT),
        pod("q", claims=["data-vol-b"], labels=STRICT, created="2026-01-01T00:01:00Z"),
    )
    p = result.decision("p")
    assert p.node == "n2"
    assert p.filtered == {"n1": [NOT_STORAGE_NODE]}
    assert result.locality("p") == {"n2": score}
    # vol-b got no new replica: its only copy is on the storage-cordoned node.
    q = result.decision("q")
    assert q.node is None
    assert q.filtered == {
        "n1": [NOT_STORAGE_NODE],
        "n2": ["node(s) didn't have a replica of the pod's strict-locality volumes"],
    }


def test_provisioned_volumes_follow_their_pod_in_decision_order() -> None:
    result = run(
        *host("n1", "z1", {"d1": Disk(1000 * GB)}),
        *host("n2", "z2", {"d1": Disk(1000 * GB)}),
        replicated_class(numberOfReplicas="1", dataLocality="best-effort"),
        volume("vol-old", 10 * GB, 2),
        replica("vol-old-r1", "vol-old", "n1", primary=True),
        pvc("late", "10G", "replicated"),
        pvc("early", "10G", "replicated"),
        pod("second", claims=["late"], created="2026-01-01T00:02:00Z"),
        pod("first", claims=["early"], created="2026-01-01T00:01:00Z"),
        pod("plain", created="2026-01-01T00:03:00Z"),
    )
    assert [outcome.pod.meta.name for outcome in result.result.pods] == [
        "first",
        "second",
        "plain",
    ]
    volumes = result.result.volumes
    assert [entry["volume"] for entry in volumes] == [
        "vol-old",
        "pvc-uid-pvc-default-early",
        "pvc-uid-pvc-default-late",
    ]
    for outcome, entry in zip(result.result.pods[:2], volumes[1:], strict=True):
        # best-effort: the single replica is on the pod's node.
        node_name = outcome.decision.node
        assert entry["placed"] == [{"node": node_name, "disk": "d1"}]
        (claim_entry,) = outcome.volumes.values()
        assert claim_entry == {"provision": True, "replicas": entry["placed"]}


def test_promised_space_is_handed_back_once_the_storage_agent_counts_it() -> None:
    """A long-running scheduler must not count a replica twice: once as its own
    promise, once in the disk's storageScheduled reported by the storage agent."""
    import dataclasses

    from tests.support import parse
    from volsched.cache.cluster import ClusterCache
    from volsched.scheduling.replicas import (
        DiskPlacement,
        ReplicaSchedulingSettings,
        VolumePlacement,
    )
    from volsched.scheduling.storage_placement import ReplicaContext

    cache = ClusterCache()
    for raw in host("n1", "zone-a"):
        cache.upsert(raw["kind"], parse(raw))
    context = ReplicaContext(cache, ReplicaSchedulingSettings(), clock=lambda: 0.0)
    placement = VolumePlacement("vol-a", (DiskPlacement("n1", "d1"),), 0, ())
    context.scheduled.add("n1", "d1", 5 * GB)
    context.commit(placement, synced=True, size=5 * GB)
    storage = cache.storage.storage_nodes["n1"]

    def bump(obj: Any, version: int) -> Any:
        return dataclasses.replace(
            obj, meta=dataclasses.replace(obj.meta, resource_version=version)
        )

    cache.upsert("StorageNode", bump(storage, 10))
    created = bump(parse(replica("vol-a-r-1", "vol-a", "n1", "d1")), 20)
    cache.upsert("Replica", created)
    assert context.settle() == 0  # the agent has not reported since the replica appeared
    assert context.scheduled.get("n1", "d1") == 5 * GB
    cache.upsert("StorageNode", bump(storage, 30))
    assert context.settle() == 1
    assert context.scheduled.get("n1", "d1") == 0
    assert not cache.assumed_replicas.get("vol-a")
    context.release(placement, [])  # a late release takes back nothing more
    assert context.scheduled.get("n1", "d1") == 0


@pytest.mark.parametrize("bound", [True, False], ids=["bound", "rolled back"])
def test_a_bound_plan_keeps_its_space_promised_and_a_rolled_back_one_frees_it(
    bound: bool,
) -> None:
    objects = [
        *three_zones(),
        replicated_class(**STRICT_LOCAL),
        pvc("data", "10G", "replicated"),
        pinned("p", ["data"], "n1"),
    ]
    cache = cluster(*objects)
    context = ReplicaContext(cache, ReplicaSchedulingSettings(), clock=lambda: 0.0)
    provisioners = storage_provisioners(context)
    assert isinstance(provisioners["replicated.volsched.io"], ReplicatedProvisioner)
    profile = build_profile(default_policy(with_storage=True), PluginFactory(cache, provisioners))
    scheduler = Scheduler(cache, profile, random.Random(0))
    decision = scheduler.schedule(parse_pod(objects[-1]))
    assert decision.node == "n1"
    assert context.scheduled.get("n1", "d1") == 10 * GB
    if bound:
        scheduler.post_bind(decision)
        # The space stays promised until the storage agent counts the replica.
        assert context.scheduled.get("n1", "d1") == 10 * GB
    else:
        scheduler.unreserve(decision)
        assert context.scheduled.get("n1", "d1") == 0
