"""CheckVolumeBinding and PrioritizeVolumes, rule by rule, as a user sees them: where the
pod goes, the per-node reasons, and the "0/N nodes are available" message."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.support import cluster, node, pod, pv, pvc, storage_class
from volsched.cache.cluster import ClusterCache
from volsched.scheduling.framework.interfaces import ScorePlugin
from volsched.scheduling.framework.profile import Predicate, Priority, Profile
from volsched.scheduling.framework.runner import Decision, Scheduler
from volsched.scheduling.plugins.prioritize_volumes import PrioritizeVolumes
from volsched.scheduling.plugins.volume_binding import VolumeBinding
from volsched.scheduling.plugins.volume_zone import VolumeZone
from volsched.scheduling.simulation import claim_outcomes

AFFINITY = "node(s) didn't match PersistentVolume's node affinity"
BIND = "node(s) didn't find available persistent volumes to bind"
SPACE = "node(s) did not have enough free storage"
MISSING_PV = "node(s) unavailable due to one or more pvc(s) bound to non-existent pv(s)"

ZONE = "topology.kubernetes.io/zone"


def three_nodes() -> list[dict[str, Any]]:
    return [
        node("node-1", labels={ZONE: "a"}),
        node("node-2", labels={ZONE: "b"}),
        node("node-3", labels={ZONE: "b"}),
    ]


def decide(objects: list[dict[str, Any]], pod_name: str = "p", zone: bool = False) -> Decision:
    cache = cluster(*objects)
    return scheduler_for(cache, zone).schedule(cache.pending[f"default/{pod_name}"])


def scheduler_for(
    cache: ClusterCache, zone: bool = False, capacity_scoring: bool = False
) -> Scheduler:
    """VolumeBinding's filter with volsched's PrioritizeVolumes, or with VolumeBinding's
    own capacity score (the StorageCapacityScoring gate)."""
    binding = VolumeBinding(cache)
    predicates = [Predicate("CheckVolumeBinding", binding)]
    if zone:
        predicates.append(Predicate("NoVolumeZoneConflict", VolumeZone(cache)))
    score: ScorePlugin = binding if capacity_scoring else PrioritizeVolumes(cache)
    profile = Profile(predicates, [Priority(score.name, score, 1)])
    return Scheduler(cache, profile, random.Random(0))


WFC = storage_class("local")
IMMEDIATE = storage_class("fast", provisioner="csi.example.com", mode="Immediate")
DYNAMIC = storage_class(
    "dyn",
    provisioner="csi.example.com",
    allowed_topologies=[{"matchLabelExpressions": [{"key": ZONE, "values": ["a"]}]}],
)

CASES: list[tuple[str, list[dict[str, Any]], str | None, str | None, dict[str, list[str]]]] = [
    (
        "bound claim to a local PV: the other nodes fail its node affinity (1.36 narrows none)",
        [
            WFC,
            pv("pv-1", "10Gi", node_names=["node-2"], claim=("default", "c1"), phase="Bound"),
            pvc("c1", volume_name="pv-1", bound=True),
            pod("p", claims=["c1"]),
        ],
        "node-2",
        None,
        {"node-1": [AFFINITY], "node-3": [AFFINITY]},
    ),
    (
        "bound claim to a zonal PV conflicts elsewhere",
        [
            WFC,
            pv(
                "pv-1",
                "10Gi",
                claim=("default", "c1"),
                phase="Bound",
                spec={
                    "nodeAffinity": {
                        "required": {
                            "nodeSelectorTerms": [
                                {
                                    "matchExpressions": [
                                        {"key": ZONE, "operator": "In", "values": ["a"]}
                                    ]
                                }
                            ]
                        }
                    }
                },
            ),
            pvc("c1", volume_name="pv-1", bound=True),
            pod("p", claims=["c1"]),
        ],
        "node-1",
        None,
        {"node-2": [AFFINITY], "node-3": [AFFINITY]},
    ),
    (
        "claim bound to a PV that does not exist",
        [WFC, pvc("c1", volume_name="gone", bound=True), pod("p", claims=["c1"])],
        None,
        f"0/3 nodes are available: 3 {MISSING_PV}.",
        {"node-1": [MISSING_PV], "node-2": [MISSING_PV], "node-3": [MISSING_PV]},
    ),
    (
        "unbound immediate claim",
        [IMMEDIATE, pvc("c1", storage_class="fast"), pod("p", claims=["c1"])],
        None,
        "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims.",
        {},
    ),
    (
        "claim of a class that does not exist is immediate",
        [pvc("c1", storage_class="nowhere"), pod("p", claims=["c1"])],
        None,
        "0/3 nodes are available: pod has unbound immediate PersistentVolumeClaims.",
        {},
    ),
    (
        "missing claim",
        [pod("p", claims=["c1"])],
        None,
        '0/3 nodes are available: persistentvolumeclaim "c1" not found.',
        {},
    ),
    (
        "lost claim",
        [WFC, pvc("c1", volume_name="pv-x", phase="Lost"), pod("p", claims=["c1"])],
        None,
        '0/3 nodes are available: persistentvolumeclaim "c1" bound to non-existent '
        'persistentvolume "pv-x".',
        {},
    ),
    (
        "claim being deleted",
        [
            WFC,
            pvc("c1", extra_meta={"deletionTimestamp": "2026-01-01T00:00:00Z"}),
            pod("p", claims=["c1"]),
        ],
        None,
        '0/3 nodes are available: persistentvolumeclaim "c1" is being deleted.',
        {},
    ),
    (
        "generic ephemeral volume whose claim is not created yet",
        [WFC, pod("p", spec={"volumes": [{"name": "scratch", "ephemeral": {}}]})],
        None,
        "0/3 nodes are available: waiting for ephemeral volume controller to create the "
        'persistentvolumeclaim "p-scratch".',
        {},
    ),
    (
        "generic ephemeral volume claim not owned by the pod",
        [WFC, pvc("p-scratch"), pod("p", spec={"volumes": [{"name": "scratch", "ephemeral": {}}]})],
        None,
        "0/3 nodes are available: PVC default/p-scratch was not created for pod default/p "
        "(pod is not owner).",
        {},
    ),
    (
        "local PV on one node, no provisioner",
        [WFC, pv("pv-1", "10Gi", node_names=["node-3"]), pvc("c1"), pod("p", claims=["c1"])],
        "node-3",
        None,
        {"node-1": [BIND], "node-2": [BIND]},
    ),
    (
        "PV too small, wrong access mode, wrong volume mode, released, deleting, other class",
        [
            WFC,
            storage_class("other"),
            pv("small", "1Gi", node_names=["node-1"]),
            pv("rwx", "10Gi", node_names=["node-1"], access_modes=("ReadWriteOnce",)),
            pv("block", "10Gi", node_names=["node-2"], spec={"volumeMode": "Block"}),
            pv("released", "10Gi", node_names=["node-2"], phase="Released"),
            pv(
                "deleting",
                "10Gi",
                node_names=["node-3"],
            ),
            pv("classy", "10Gi", node_names=["node-3"], storage_class="other"),
            pvc("c1", request="5Gi", access_modes=("ReadWriteMany",)),
            pod("p", claims=["c1"]),
        ],
        None,
        f"0/3 nodes are available: 3 {BIND}.",
        {"node-1": [BIND], "node-2": [BIND], "node-3": [BIND]},
    ),
    (
        "a PV pre-bound to the claim wins, and blocks every other node",
        [
            WFC,
            pv("mine", "10Gi", node_names=["node-2"], claim=("default", "c1")),
            pv("free-1", "10Gi", node_names=["node-1"]),
            pv("free-3", "10Gi", node_names=["node-3"]),
            pvc("c1"),
            pod("p", claims=["c1"]),
        ],
        "node-2",
        None,
        {"node-1": [BIND], "node-3": [BIND]},
    ),
    (
        "a PV pre-bound to another claim is not available",
        [
            WFC,
            pv("theirs", "10Gi", node_names=["node-1"], claim=("default", "other")),
            pvc("c1"),
            pod("p", claims=["c1"]),
        ],
        None,
        f"0/3 nodes are available: 3 {BIND}.",
        {"node-1": [BIND], "node-2": [BIND], "node-3": [BIND]},
    ),
    (
        "claim selector must match the PV labels",
        [
            WFC,
            pv("plain", "10Gi", node_names=["node-1"]),
            pv("gold", "10Gi", node_names=["node-2"], labels={"tier": "gold"}),
            pvc("c1", spec={"selector": {"matchLabels": {"tier": "gold"}}}),
            pod("p", claims=["c1"]),
        ],
        "node-2",
        None,
        {"node-1": [BIND], "node-3": [BIND]},
    ),
    (
        "a claim already given a selected node fits only there",
        [
            DYNAMIC,
            pvc(
                "c1",
                storage_class="dyn",
                annotations={"volume.kubernetes.io/selected-node": "node-1"},
            ),
            pod("p", claims=["c1"]),
        ],
        "node-1",
        None,
        {"node-2": [BIND], "node-3": [BIND]},
    ),
    (
        "dynamic provisioning limited by allowedTopologies",
        [DYNAMIC, pvc("c1", storage_class="dyn"), pod("p", claims=["c1"])],
        "node-1",
        None,
        {"node-2": [BIND], "node-3": [BIND]},
    ),
    (
        "CSI storage capacity too small in zone a, none published for zone b",
        [
            storage_class("cap", provisioner="csi.example.com"),
            {
                "kind": "CSIDriver",
                "metadata": {"name": "csi.example.com"},
                "spec": {"storageCapacity": True},
            },
            {
                "kind": "CSIStorageCapacity",
                "metadata": {"name": "cap-a", "namespace": "kube-system"},
                "storageClassName": "cap",
                "nodeTopology": {"matchLabels": {ZONE: "a"}},
                "capacity": "5Gi",
            },
            {
                "kind": "CSIStorageCapacity",
                "metadata": {"name": "cap-b", "namespace": "kube-system"},
                "storageClassName": "cap",
                "nodeTopology": {"matchLabels": {ZONE: "b"}},
                "capacity": "100Gi",
                "maximumVolumeSize": "8Gi",
            },
            pvc("c1", request="10Gi", storage_class="cap"),
            pod("p", claims=["c1"]),
        ],
        None,
        f"0/3 nodes are available: 3 {SPACE}.",
        {"node-1": [SPACE], "node-2": [SPACE], "node-3": [SPACE]},
    ),
]


@pytest.mark.parametrize(
    ("objects", "expected_node", "expected_message", "expected_filtered"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_check_volume_binding(
    objects: list[dict[str, Any]],
    expected_node: str | None,
    expected_message: str | None,
    expected_filtered: dict[str, list[str]],
) -> None:
    decision = decide(three_nodes() + objects)
    assert decision.node == expected_node
    assert decision.message == expected_message
    assert decision.filtered == expected_filtered


def test_deleting_pv_is_never_matched() -> None:
    objects = [
        *three_nodes(),
        WFC,
        pv("doomed", "10Gi", node_names=["node-1"]),
        pvc("c1"),
        pod("p", claims=["c1"]),
    ]
    objects[4]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    assert decide(objects).filtered["node-1"] == [BIND]


def test_volume_zone_reports_a_missing_bound_pv_before_any_node() -> None:
    objects = [
        *three_nodes(),
        WFC,
        pvc("c1", volume_name="gone", bound=True),
        pod("p", claims=["c1"]),
    ]
    decision = decide(objects, zone=True)
    assert decision.message == '0/3 nodes are available: persistentvolume "gone" not found.'
    assert decision.filtered == {}


def test_smallest_pv_that_fits_is_chosen_and_scored_tightest() -> None:
    objects = [
        node("a"),
        node("b"),
        WFC,
        pv("a-200", "200Gi", node_names=["a"]),
        pv("b-100", "100Gi", node_names=["b"]),
        pv("b-500", "500Gi", node_names=["b"]),
        pvc("c1", request="50Gi"),
        pod("p", claims=["c1"]),
    ]
    cache = cluster(*objects)
    decision = scheduler_for(cache).schedule(cache.pending["default/p"])
    assert decision.scores == {"a": 25, "b": 50}
    assert decision.node == "b"
    assert claim_outcomes(decision) == {"c1": {"volume": "b-100"}}


def test_capacity_scoring_prefers_the_emptiest_fit() -> None:
    """StorageCapacityScoring's default shape (0% → 10, 100% → 0, scaled to 0..100): the
    same choices of PV score in reverse, a's 200Gi at 25% above b's 100Gi at 50%."""
    objects = [
        node("a"),
        node("b"),
        WFC,
        pv("a-200", "200Gi", node_names=["a"]),
        pv("b-100", "100Gi", node_names=["b"]),
        pvc("c1", request="50Gi"),
        pod("p", claims=["c1"]),
    ]
    cache = cluster(*objects)
    decision = scheduler_for(cache, capacity_scoring=True).schedule(cache.pending["default/p"])
    assert decision.scores == {"a": 75, "b": 50}
    assert decision.node == "a"


def test_claims_are_matched_smallest_request_first_and_each_pv_once() -> None:
    objects = [
        node("a"),
        WFC,
        pv("pv-5", "5Gi", node_names=["a"]),
        pv("pv-10", "10Gi", node_names=["a"]),
        pvc("big", request="6Gi"),
        pvc("small", request="4Gi"),
        pod("p", claims=["big", "small"]),
    ]
    cache = cluster(*objects)
    decision = scheduler_for(cache).schedule(cache.pending["default/p"])
    assert decision.node == "a"
    assert claim_outcomes(decision) == {"big": {"volume": "pv-10"}, "small": {"volume": "pv-5"}}


def test_two_claims_one_pv_leaves_the_second_claim_unmatched() -> None:
    objects = [node("a"), WFC, pv("only", "10Gi", node_names=["a"]), pvc("c1"), pvc("c2")]
    cache = cluster(*objects, pod("p", claims=["c1", "c2"]))
    decision = scheduler_for(cache).schedule(cache.pending["default/p"])
    assert decision.message == f"0/1 nodes are available: 1 {BIND}."


def test_assumed_binding_is_seen_by_the_next_pod_and_reverted_on_unreserve() -> None:
    objects = [node("a"), WFC, pv("only", "10Gi", node_names=["a"]), pvc("c1"), pvc("c2")]
    cache = cluster(*objects, pod("p1", claims=["c1"]), pod("p2", claims=["c2"]))
    scheduler = scheduler_for(cache)
    first = scheduler.schedule(cache.pending["default/p1"])
    assert first.node == "a"
    assumed_pv = cache.pvs.get("only")
    assert assumed_pv is not None and assumed_pv.claim_ref is not None
    assert assumed_pv.claim_ref.name == "c1"
    assert assumed_pv.meta.annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
    second = scheduler.schedule(cache.pending["default/p2"])
    assert second.node is None
    assert second.message == f"0/1 nodes are available: 1 {BIND}."
    scheduler.unreserve(first)
    restored = cache.pvs.get("only")
    assert restored is not None and restored.claim_ref is None
    assert "default/p1" in cache.pending
    again = scheduler.schedule(cache.pending["default/p2"])
    assert again.node == "a"


def test_provisioned_claim_carries_the_selected_node_until_reverted() -> None:
    cache = cluster(
        node("node-1", labels={ZONE: "a"}),
        DYNAMIC,
        pvc("c1", storage_class="dyn"),
        pod("p", claims=["c1"]),
    )
    scheduler = scheduler_for(cache)
    decision = scheduler.schedule(cache.pending["default/p"])
    assert claim_outcomes(decision) == {"c1": {"provision": True}}
    claim = cache.pvcs.get("default/c1")
    assert claim is not None and claim.selected_node == "node-1"
    scheduler.unreserve(decision)
    claim = cache.pvcs.get("default/c1")
    assert claim is not None and claim.selected_node is None


def test_pods_without_claims_skip_volume_binding() -> None:
    decision = decide([*three_nodes(), pod("p")])
    assert decision.node is not None
    assert decision.scores == {"node-1": 0, "node-2": 0, "node-3": 0}


def test_a_node_lists_every_volume_problem_it_has() -> None:
    zonal = pv(
        "zonal",
        "10Gi",
        claim=("default", "c-bound"),
        phase="Bound",
        spec={
            "nodeAffinity": {
                "required": {
                    "nodeSelectorTerms": [
                        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["a"]}]}
                    ]
                }
            }
        },
    )
    decision = decide(
        [
            *three_nodes(),
            WFC,
            zonal,
            pvc("c-bound", volume_name="zonal", bound=True),
            pvc("c-new"),
            pod("p", claims=["c-bound", "c-new"]),
        ]
    )
    assert decision.filtered["node-2"] == [AFFINITY, BIND]
    assert decision.filtered["node-1"] == [BIND]


def test_prebinding_keeps_an_authors_reservation() -> None:
    from tests.support import parse
    from volsched.scheduling.volumes.binder import bind_volume_to_claim

    claim = parse(pvc("c1"))
    reserved = parse(pv("mine", "10Gi", claim=("default", "c1")))
    updated, dirty = bind_volume_to_claim(reserved, claim)
    assert dirty and updated.claim_ref is not None and updated.claim_ref.uid == claim.meta.uid
    assert "pv.kubernetes.io/bound-by-controller" not in updated.meta.annotations
    again, dirty_again = bind_volume_to_claim(updated, claim)
    assert not dirty_again and again is updated
    free = parse(pv("free", "10Gi"))
    chosen, dirty = bind_volume_to_claim(free, claim)
    assert dirty and chosen.meta.annotations["pv.kubernetes.io/bound-by-controller"] == "yes"


# A cloud cluster: node names are not their hostname labels.
CLOUD_NODES = [
    node("ip-10-0-1-5.ec2.internal", labels={"kubernetes.io/hostname": "ip-10-0-1-5"}),
    node("ip-10-0-1-6.ec2.internal", labels={"kubernetes.io/hostname": "ip-10-0-1-6"}),
    node("ip-10-0-1-7.ec2.internal", labels={"kubernetes.io/hostname": "ip-10-0-1-7"}),
]


@pytest.mark.parametrize(
    ("objects", "expected_node"),
    [
        pytest.param(
            [
                WFC,
                pv(
                    "pv-1",
                    "10Gi",
                    node_names=["ip-10-0-1-6"],
                    claim=("default", "c1"),
                    phase="Bound",
                ),
                pvc("c1", volume_name="pv-1", bound=True),
                pod("p", claims=["c1"]),
            ],
            "ip-10-0-1-6.ec2.internal",
            id="a bound local PV pinned by hostname label",
        ),
        pytest.param(
            [
                WFC,
                pv("pv-1", "10Gi", node_names=["ip-10-0-1-7"]),
                pvc("c1"),
                pod("p", claims=["c1"]),
            ],
            "ip-10-0-1-7.ec2.internal",
            id="a WaitForFirstConsumer local PV matched by hostname label",
        ),
    ],
)
def test_node_names_that_are_not_their_hostname(
    objects: list[dict[str, Any]], expected_node: str
) -> None:
    decision = decide(CLOUD_NODES + objects)
    assert decision.node == expected_node
    others = {info["metadata"]["name"] for info in CLOUD_NODES} - {expected_node}
    assert set(decision.filtered) == others


def test_the_pv_index_maps_hostname_affinity_by_label_not_name() -> None:
    cache = cluster(
        *CLOUD_NODES,
        pv("pv-1", "10Gi", node_names=["ip-10-0-1-5"]),
        pv("pv-2", "10Gi", node_names=["ip-10-0-1-5.ec2.internal"]),
    )
    assert cache.pv_index.nodes_of("pv-1") == {"ip-10-0-1-5.ec2.internal"}
    # A PV naming the node's *name* as hostname matches nothing.
    assert cache.pv_index.nodes_of("pv-2") == set()
