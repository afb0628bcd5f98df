"""What the routing decision needs and the cache does not hold: the webhook reads exactly
that from the API server before it decides."""

from __future__ import annotations

from typing import Any

from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.registry import KINDS
from volsched.scheduling.routing import ObjectRef, RoutingRules, decide_routing, unknown_objects

RULES = RoutingRules(scheduler_name="volsched", provisioners=frozenset({"replicated.volsched.io"}))
Raw = dict[str, Any]


def cache_of(*objects: Raw) -> ClusterCache:
    cluster = ClusterCache()
    for raw in objects:
        cluster.upsert(raw["kind"], KINDS[raw["kind"]].parse(raw))
    return cluster


def storage_class(name: str) -> Raw:
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name, "resourceVersion": "1"},
        "provisioner": "replicated.volsched.io",
    }


def claim(name: str, class_name: str, volume: str = "") -> Raw:
    spec: Raw = {"storageClassName": class_name, "accessModes": ["ReadWriteOnce"]}
    if volume:
        spec["volumeName"] = volume
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "shop", "resourceVersion": "2"},
        "spec": spec,
    }


def pod(*volumes: Raw, **metadata: Any) -> Raw:
    return {
        "metadata": {"name": "web-0", **metadata},
        "spec": {"containers": [{"name": "c"}], "volumes": list(volumes)},
    }


def uses(claim_name: str) -> Raw:
    return {"name": claim_name, "persistentVolumeClaim": {"claimName": claim_name}}


def test_an_unknown_claim_is_wanted_and_the_pod_is_not_routed_without_it() -> None:
    cluster = cache_of(storage_class("replicated"))
    admitted = pod(uses("data-web-0"))
    assert unknown_objects(admitted, "shop", cluster, RULES) == [
        ObjectRef("PersistentVolumeClaim", "data-web-0", "shop")
    ]
    assert not decide_routing(admitted, "shop", cluster, RULES).route
    cluster.upsert(
        "PersistentVolumeClaim",
        KINDS["PersistentVolumeClaim"].parse(claim("data-web-0", "replicated")),
    )
    assert unknown_objects(admitted, "shop", cluster, RULES) == []
    assert decide_routing(admitted, "shop", cluster, RULES).route


def test_a_known_claim_leads_to_its_volume_and_its_class() -> None:
    cluster = cache_of(claim("bound", "new-class", volume="pv-1"))
    assert unknown_objects(pod(uses("bound")), "shop", cluster, RULES) == [
        ObjectRef("PersistentVolume", "pv-1"),
        ObjectRef("StorageClass", "new-class"),
    ]


def test_an_ephemeral_volumes_unknown_class_is_wanted() -> None:
    template = {"spec": {"storageClassName": "fresh", "accessModes": ["ReadWriteOnce"]}}
    scratch = {"name": "scratch", "ephemeral": {"volumeClaimTemplate": template}}
    assert unknown_objects(pod(scratch), "shop", ClusterCache(), RULES) == [
        ObjectRef("StorageClass", "fresh")
    ]


def test_nothing_is_wanted_when_the_volumes_do_not_decide() -> None:
    cluster = ClusterCache()
    opted_out = pod(uses("x"), labels={"volsched.io/scheduler-routing": "disabled"})
    assert unknown_objects(opted_out, "shop", cluster, RULES) == []
    other = pod(uses("x"))
    other["spec"]["schedulerName"] = "gpu-scheduler"
    assert unknown_objects(other, "shop", cluster, RULES) == []


def test_a_listed_class_needs_no_read() -> None:
    rules = RoutingRules(scheduler_name="volsched", storage_classes=frozenset({"local-nvme"}))
    cluster = cache_of(claim("data", "local-nvme"))
    assert unknown_objects(pod(uses("data")), "shop", cluster, rules) == []
    assert str(ObjectRef("PersistentVolumeClaim", "data", "shop")) == "claim shop/data"
