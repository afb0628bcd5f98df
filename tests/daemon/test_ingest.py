"""The ingest keeps one copy of each object — the one the cache accepted — and counts
what a relist found gone per kind of its own owner."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import pytest

from tests.integration.objects import claim, local_pv, node, pod, storage_node
from tests.support import pod as placed_pod
from tests.unit.longhorn.objects import longhorn_node
from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.core import parse_pod
from volsched.daemon.queue.queueing import SchedulingQueue
from volsched.daemon.watch.ingest import Ingest
from volsched.scheduling.framework.events import ClusterEvent
from volsched.scheduling.preemption.nominated import NominatedPods

Raw = dict[str, Any]


def test_a_relist_of_volsched_storage_nodes_never_counts_longhorn_nodes_as_vanished() -> None:
    cluster = ClusterCache()
    ingest = Ingest(cluster, None, "volsched")
    ingest.upsert("LonghornNode", longhorn_node("n1"))
    ingest.upsert("StorageNode", storage_node("n2"))

    assert ingest.replace("StorageNode", [storage_node("n2")], "10") == 0
    assert ingest.replace("LonghornNode", [longhorn_node("n1")], "11") == 0
    assert set(cluster.storage.storage_nodes) == {"n1", "n2"}

    assert ingest.replace("StorageNode", [], "12") == 1
    assert set(cluster.storage.storage_nodes) == {"n1"}


class RecordingStore:
    """The store's side of the ingest, keeping what it was told to persist."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], Raw] = {}

    def put_object(self, kind: str, key: str, raw: Mapping[str, Any]) -> None:
        self.objects[kind, key] = dict(raw)

    def delete_object(self, kind: str, key: str) -> None:
        self.objects.pop((kind, key), None)

    def set_resume_point(self, kind: str, resource_version: str) -> None:
        pass

    def replace_kind(
        self, kind: str, objects: Mapping[str, str | Mapping[str, Any]], resource_version: str
    ) -> None:
        pass


def at_version(raw: Raw, version: int, **labels: str) -> Raw:
    changed = copy.deepcopy(raw)
    changed["metadata"]["resourceVersion"] = str(version)
    changed["metadata"]["labels"] = labels
    return changed


@pytest.mark.parametrize(
    ("kind", "raw"),
    [
        ("PersistentVolume", local_pv("pv-1", "node-1")),
        ("PersistentVolumeClaim", claim("data", "local")),
        ("Node", node("node-1")),
        ("StorageNode", storage_node("n1")),
    ],
)
def test_an_event_older_than_the_cache_changes_nothing_anywhere(kind: str, raw: Raw) -> None:
    cluster = ClusterCache()
    store = RecordingStore()
    woken: list[tuple[str, str]] = []
    ingest = Ingest(
        cluster, None, "volsched", store, on_change=lambda k, key: woken.append((k, key))
    )
    assert ingest.upsert(kind, at_version(raw, 12, revision="12"))
    key = next(key for k, key in store.objects if k == kind)
    woken.clear()

    # The watch delivers rv 11 after the binder took rv 12 from its own write's answer.
    assert not ingest.upsert(kind, at_version(raw, 11, revision="11"))

    held = cluster.get(kind, key)
    assert held.meta.resource_version == 12
    assert held.meta.labels == {"revision": "12"}
    assert store.objects[kind, key]["metadata"]["resourceVersion"] == "12"
    assert woken == []
    if kind in ("PersistentVolume", "PersistentVolumeClaim"):
        body = ingest.raw_object(kind, key)
        assert body is not None and body["metadata"]["labels"] == {"revision": "12"}
        assert body["metadata"]["resourceVersion"] == "12"
    assert ingest.views()[kind][key] is held


class RecordingQueue(SchedulingQueue):
    """The queue, keeping the labels of the cluster events it was told of."""

    def __init__(self) -> None:
        super().__init__(lambda _: 0, lambda: 0.0)
        self.events: list[str] = []

    def on_cluster_event(self, event: ClusterEvent, old: Any = None, new: Any = None) -> int:
        self.events.append(event.label)
        return super().on_cluster_event(event, old, new)


def running(name: str, version: int, **labels: str) -> Raw:
    body = placed_pod(name, node_name="node-1", labels=labels or None)
    body["metadata"]["resourceVersion"] = str(version)
    return body


def test_an_assigned_pods_label_change_is_an_event_and_its_status_is_not() -> None:
    queue = RecordingQueue()
    ingest = Ingest(ClusterCache(), queue, "volsched")
    ingest.upsert("Node", node("node-1"))
    ingest.upsert("Pod", running("web", 1, app="web"))
    status_only = running("web", 2, app="web")
    status_only["status"] = {"phase": "Running"}
    ingest.upsert("Pod", status_only)
    relabelled = running("web", 3, app="db")
    relabelled["status"] = {"phase": "Running"}
    ingest.upsert("Pod", relabelled)
    ingest.delete_key("Pod", "default/web")
    assert queue.events == [
        "NodeAdd",
        "AssignedPodAdd",
        "AssignedPodUpdatePodLabel",
        "AssignedPodDelete",
    ]


def test_a_node_heartbeat_is_no_event_and_a_new_label_is_one() -> None:
    queue = RecordingQueue()
    ingest = Ingest(ClusterCache(), queue, "volsched")
    ingest.upsert("Node", node("node-1"))
    ingest.upsert("Node", at_version(node("node-1"), 50, **node("node-1")["metadata"]["labels"]))
    labels = {**node("node-1")["metadata"]["labels"], "disk": "ssd"}
    ingest.upsert("Node", at_version(node("node-1"), 51, **labels))
    assert queue.events == ["NodeAdd", "NodeUpdateNodeLabel"]


def test_an_assumed_pod_deleted_frees_its_node() -> None:
    queue = RecordingQueue()
    cluster = ClusterCache()
    ingest = Ingest(cluster, queue, "volsched")
    ingest.upsert("Node", node("node-1"))
    pending = pod("web")
    pending["spec"]["schedulerName"] = "volsched"
    ingest.upsert("Pod", pending)
    cluster.assume_pod(cluster.pods["default/web"], "node-1")
    ingest.delete_key("Pod", "default/web")
    assert queue.events == ["NodeAdd", "AssignedPodDelete"]


def test_a_bound_pod_is_cached_as_parsing_it_whole_would_and_forgotten_after() -> None:
    """The binding's event is read from metadata and status (the spec parsed when the
    pod was pending is reused); the cache holds what a whole parse gives, and nothing
    of the pod is kept once it is bound or gone."""
    cluster = ClusterCache()
    ingest = Ingest(cluster, None, "volsched")
    ingest.upsert("Node", node("node-1"))
    for name in ("web", "db"):
        pending = at_version(pod(name, cpu="250m"), 10, app=name)
        ingest.upsert("Pod", pending)
    bound = at_version(pod("web", cpu="250m"), 11, app="web")
    bound["spec"]["nodeName"] = "node-1"
    bound["status"] = {"phase": "Running", "startTime": "2026-01-02T00:00:00Z"}
    ingest.upsert("Pod", bound)
    assert cluster.pods["default/web"] == parse_pod(bound)
    assert cluster.nodes["node-1"].requested["cpu"] == 250
    ingest.delete_key("Pod", "default/db")
    assert ingest._unbound == {}


def _nominated_pod(name: str, node_name: str = "", bound_to: str = "") -> dict[str, Any]:
    raw = placed_pod(name, node_name=bound_to or None)
    raw["spec"]["schedulerName"] = "volsched"
    if node_name:
        raw["status"] = {"nominatedNodeName": node_name}
    return raw


@pytest.mark.parametrize(
    ("change", "left"),
    [
        pytest.param("delete", {}, id="a nominated pod deleted while pending leaves"),
        pytest.param("bind", {}, id="a nominated pod bound elsewhere leaves"),
        pytest.param("renominate", {"n2": ["default/p"]}, id="a new nomination moves it"),
        pytest.param("foreign", {}, id="a pod handed to another scheduler leaves"),
    ],
)
def test_the_nominator_follows_pod_events(change: str, left: dict[str, list[str]]) -> None:
    """Before, a nominated pod deleted while pending stayed in the nominator for good,
    and the preemption dry run kept counting it on that node."""
    cluster = ClusterCache()
    queue = SchedulingQueue(lambda p: p.priority or 0, lambda: 0.0)
    ingest = Ingest(cluster, queue, "volsched")
    ingest.nominated = NominatedPods()
    ingest.upsert("Pod", _nominated_pod("p", node_name="n1"))
    assert dict(ingest.nominated.nodes) == {"n1": {"default/p": cluster.pods["default/p"]}}
    if change == "delete":
        ingest.delete("Pod", _nominated_pod("p", node_name="n1"))
    elif change == "bind":
        ingest.upsert("Pod", _nominated_pod("p", node_name="n1", bound_to="n3"))
    elif change == "renominate":
        ingest.upsert("Pod", _nominated_pod("p", node_name="n2"))
    else:
        foreign = _nominated_pod("p", node_name="n1")
        foreign["spec"]["schedulerName"] = "other"
        ingest.upsert("Pod", foreign)
    assert {node: sorted(pods) for node, pods in ingest.nominated.nodes.items()} == left
