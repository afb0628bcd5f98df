"""The plugins' queueing hints: which changes may make a pod they rejected schedulable."""

from __future__ import annotations

from typing import Any

from tests.support import cluster, node, parse, pod, pvc
from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.core import Node, Pod
from volsched.cache.objects.storage import PersistentVolumeClaim
from volsched.scheduling.plugins.csi_limits import CSILimits
from volsched.scheduling.plugins.inter_pod_affinity import InterPodAffinity
from volsched.scheduling.plugins.node_affinity import NodeAffinity
from volsched.scheduling.plugins.node_ports import NodePorts
from volsched.scheduling.plugins.node_resources import NodeResourcesFit
from volsched.scheduling.plugins.node_unschedulable import NodeUnschedulable
from volsched.scheduling.plugins.pod_topology_spread import PodTopologySpread
from volsched.scheduling.plugins.taint_toleration import TaintToleration
from volsched.scheduling.plugins.volume_restrictions import VolumeRestrictions
from volsched.scheduling.plugins.volume_zone import VolumeZone

ZONE = "topology.kubernetes.io/zone"


def a_pod(name: str = "p", **kwargs: Any) -> Pod:
    view: Pod = parse(pod(name, **kwargs))
    return view


def placed(name: str, node_name: str = "n1", **kwargs: Any) -> Pod:
    return a_pod(name, node_name=node_name, **kwargs)


def a_node(name: str = "n1", **kwargs: Any) -> Node:
    view: Node = parse(node(name, **kwargs))
    return view


def claim(name: str, namespace: str = "default") -> PersistentVolumeClaim:
    view: PersistentVolumeClaim = parse(pvc(name, namespace=namespace))
    return view


def term(app: str, key: str = ZONE) -> dict[str, Any]:
    return {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": key}


def affinity(together: str | None = None, apart: str | None = None) -> dict[str, Any]:
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    spec: dict[str, Any] = {}
    if together:
        spec["podAffinity"] = {required: [term(together)]}
    if apart:
        spec["podAntiAffinity"] = {required: [term(apart)]}
    return {"affinity": spec}


# -- InterPodAffinity ----------------------------------------------------------------


def test_pod_affinity_retries_when_a_placed_pod_gains_the_label_it_wants() -> None:
    plugin = InterPodAffinity(ClusterCache())
    wants_web = a_pod(spec=affinity(together="web"))
    before, after = placed("w", labels={"app": "db"}), placed("w", labels={"app": "web"})
    assert plugin.after_pod_change(wants_web, before, after)
    assert not plugin.after_pod_change(wants_web, after, before)
    assert plugin.after_pod_change(wants_web, None, after)
    assert not plugin.after_pod_change(wants_web, None, before)
    # A pending pod counts for nobody's affinity.
    assert not plugin.after_pod_change(wants_web, None, a_pod("w", labels={"app": "web"}))


def test_pod_anti_affinity_retries_when_the_pod_in_the_way_leaves_or_goes() -> None:
    plugin = InterPodAffinity(ClusterCache())
    avoids_web = a_pod(spec=affinity(apart="web"))
    web, db = placed("w", labels={"app": "web"}), placed("w", labels={"app": "db"})
    assert plugin.after_pod_change(avoids_web, web, db)
    assert not plugin.after_pod_change(avoids_web, db, web)
    assert plugin.after_pod_change(avoids_web, web, None)
    assert not plugin.after_pod_change(avoids_web, db, None)
    # A deleted pod whose own anti-affinity may have kept this one away (symmetry).
    keeper = placed("k", labels={"app": "db"}, spec=affinity(apart="x"))
    assert plugin.after_pod_change(a_pod(), keeper, None)


def test_pod_affinity_retries_on_a_node_carrying_a_topology_key() -> None:
    plugin = InterPodAffinity(ClusterCache())
    wants_web = a_pod(spec=affinity(together="web"))
    assert plugin.after_node_change(wants_web, None, a_node(labels={ZONE: "b"}))
    assert not plugin.after_node_change(wants_web, None, a_node())


# -- PodTopologySpread ---------------------------------------------------------------


def spread(name: str = "p", namespace: str = "default") -> Pod:
    constraint = {
        "maxSkew": 1,
        "topologyKey": ZONE,
        "whenUnsatisfiable": "DoNotSchedule",
        "labelSelector": {"matchLabels": {"app": "db"}},
    }
    return a_pod(
        name,
        namespace=namespace,
        labels={"app": "db"},
        spec={"topologySpreadConstraints": [constraint]},
    )


def test_topology_spread_retries_when_a_placed_pod_enters_or_leaves_the_selector() -> None:
    plugin = PodTopologySpread(ClusterCache())
    db, other = placed("d", labels={"app": "db"}), placed("d", labels={"app": "web"})
    assert plugin.after_pod_change(spread(), db, other)
    assert plugin.after_pod_change(spread(), other, db)
    assert not plugin.after_pod_change(spread(), other, placed("d", labels={"app": "cache"}))
    assert plugin.after_pod_change(spread(), db, None)
    assert not plugin.after_pod_change(spread(), other, None)
    # Pods of another namespace are not counted.
    elsewhere = placed("d", namespace="other", labels={"app": "db"})
    assert not plugin.after_pod_change(spread(), elsewhere, None)


def test_topology_spread_retries_on_nodes_that_change_its_domains() -> None:
    plugin = PodTopologySpread(ClusterCache())
    zone_a, zone_b = a_node(labels={ZONE: "a"}), a_node(labels={ZONE: "b"})
    assert plugin.after_node_change(spread(), None, zone_a)
    assert not plugin.after_node_change(spread(), None, a_node())
    assert plugin.after_node_change(spread(), zone_a, zone_b)
    assert not plugin.after_node_change(spread(), zone_a, a_node(labels={ZONE: "a", "x": "y"}))
    assert plugin.after_node_change(spread(), zone_a, None)


# -- node rules ----------------------------------------------------------------------


def test_node_affinity_retries_only_when_a_node_starts_to_match() -> None:
    plugin = NodeAffinity(ClusterCache())
    picky = a_pod(spec={"nodeSelector": {"disk": "ssd"}})
    ssd = a_node(labels={"disk": "ssd"})
    assert plugin.after_node_change(picky, a_node(), ssd)
    assert plugin.after_node_change(picky, None, ssd)
    assert not plugin.after_node_change(picky, ssd, a_node(labels={"disk": "ssd", "x": "y"}))
    assert not plugin.after_node_change(picky, None, a_node())


def test_node_resources_fit_retries_when_room_is_made() -> None:
    plugin = NodeResourcesFit(ClusterCache())
    big = a_pod(cpu="3")
    assert plugin.after_pod_change(big, placed("o", cpu="1"), None)
    assert not plugin.after_pod_change(big, a_pod("o", cpu="1"), None)
    assert plugin.after_pod_change(big, placed("o", cpu="2"), placed("o", cpu="1"))
    assert not plugin.after_pod_change(big, placed("o", cpu="1"), placed("o", cpu="2"))
    assert plugin.after_node_change(big, None, a_node(cpu="4"))
    assert not plugin.after_node_change(big, None, a_node(cpu="2"))
    assert plugin.after_node_change(big, a_node(cpu="2"), a_node(cpu="4"))
    assert not plugin.after_node_change(big, a_node(cpu="4"), a_node(cpu="4", memory="16Gi"))


def test_taints_and_cordons_retry_when_lifted() -> None:
    taint = [{"key": "maintenance", "effect": "NoSchedule"}]
    tainted, clean = a_node(taints=taint), a_node()
    assert TaintToleration(ClusterCache()).after_node_change(a_pod(), tainted, clean)
    assert not TaintToleration(ClusterCache()).after_node_change(a_pod(), clean, tainted)
    cordoned = a_node(unschedulable=True)
    assert NodeUnschedulable(ClusterCache()).after_node_change(a_pod(), cordoned, clean)
    assert not NodeUnschedulable(ClusterCache()).after_node_change(a_pod(), clean, cordoned)


def test_node_ports_retry_when_the_port_is_freed() -> None:
    def with_port(name: str, port: int, node_name: str = "") -> Pod:
        container = {"name": "c", "ports": [{"containerPort": port, "hostPort": port}]}
        return a_pod(name, node_name=node_name or None, spec={"containers": [container]})

    plugin = NodePorts(ClusterCache())
    assert plugin.after_pod_deleted(with_port("p", 80), with_port("o", 80, "n1"), None)
    assert not plugin.after_pod_deleted(with_port("p", 80), with_port("o", 81, "n1"), None)


# -- volume rules --------------------------------------------------------------------


def test_volume_rules_retry_for_the_pods_own_claims() -> None:
    cache = cluster()
    user = a_pod(claims=["data"])
    mine, theirs = claim("data"), claim("data", namespace="other")
    assert VolumeZone(cache).after_claim_change(user, None, mine)
    assert not VolumeZone(cache).after_claim_change(user, None, theirs)
    assert VolumeRestrictions(cache).after_claim_added(user, None, mine)
    assert CSILimits(cache).after_claim_added(user, None, mine)
    assert not CSILimits(cache).after_claim_added(a_pod(), None, mine)


def test_volume_restrictions_retry_when_a_pod_sharing_a_claim_goes() -> None:
    plugin = VolumeRestrictions(cluster())
    user = a_pod(claims=["data"])
    assert plugin.after_pod_deleted(user, placed("o", claims=["data"]), None)
    assert not plugin.after_pod_deleted(user, placed("o", claims=["logs"]), None)
