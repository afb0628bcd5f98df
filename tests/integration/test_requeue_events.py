"""Cluster events that make a rejected pod schedulable move it back at once, against the
embedded cluster: the plugin that rejected it declared the event (kube-scheduler's
EventsToRegister), so the pod is retried within about a second of the change instead of
waiting for the 60 s flush of the unschedulable pool.

Each test checks the queue's own count of what moved the pod, so a retry for another
reason (the flush, another event) cannot pass for the event under test.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import node, pod
from tests.integration.test_pod_constraints import condition
from volsched.daemon.runtime.app import Daemon
from volsched.emulator.faults import WriteRequest
from volsched.scheduling.framework.interfaces import EnqueueExtensions
from volsched.scheduling.scheduler_config import parse_scheduler_configuration

Raw = dict[str, Any]
MERGE_PATCH = "application/merge-patch+json"
# The unschedulable pool's flush: a test passing well before it was not flushed.
FLUSH_SECONDS = 60.0
RETRY_SECONDS = 3.0
ZONE_KEY = "topology.kubernetes.io/zone"


def placed(name: str, node_name: str, labels: dict[str, str]) -> Raw:
    """A pod already running on a node (placed by someone else)."""
    body = pod(name)
    body["metadata"]["labels"] = labels
    body["spec"]["schedulerName"] = "default-scheduler"
    body["spec"]["nodeName"] = node_name
    return body


def moved_by(daemon: Daemon, event: str) -> int:
    """How many times the queue moved a pod to the active or backoff queue for ``event``."""
    incoming = daemon.queue.stats.incoming
    return incoming.get(("active", event), 0) + incoming.get(("backoff", event), 0)


def flushed(daemon: Daemon) -> int:
    return moved_by(daemon, "UnschedulableTimeout")


async def rejected(cluster: Cluster, daemon: Daemon, name: str, reason: str) -> None:
    """Wait until the pod was tried, rejected with ``reason`` and parked as unschedulable."""
    await eventually(
        lambda: reason in ((condition(cluster, name) or {}).get("message") or ""),
        what=f"{name} rejected: {reason}",
    )
    await eventually(
        lambda: daemon.queue.lengths()["unschedulable"] == 1, what=f"{name} unschedulable"
    )


def patch(cluster: Cluster, kind: str, name: str, body: Raw, namespace: str = "") -> None:
    registry = cluster.server.registry
    registry.patch(registry.core(kind), namespace, name, MERGE_PATCH, body)


async def retried_after(
    cluster: Cluster, daemon: Daemon, name: str, node_name: str, event: str, changed: float
) -> None:
    """The pod was bound to ``node_name`` soon after the change, moved by ``event``."""
    await eventually(
        lambda: cluster.node_of(name) == node_name,
        timeout=RETRY_SECONDS,
        what=f"{name} bound to {node_name} after {event}",
    )
    assert time.monotonic() - changed < RETRY_SECONDS < FLUSH_SECONDS
    assert moved_by(daemon, event) >= 1
    assert flushed(daemon) == 0


async def test_an_assigned_pod_gaining_a_label_unblocks_required_pod_affinity(
    cluster: Cluster,
) -> None:
    cluster.server.load(
        [
            node("node-1", "zone-a"),
            node("node-2", "zone-b"),
            placed("cache-0", "node-2", {"app": "cache"}),
        ]
    )
    daemon = await cluster.start_daemon()
    await eventually(lambda: "default/cache-0" in daemon.cluster.pods, what="cache-0 cached")
    client = pod("client")
    client["spec"]["affinity"] = {
        "podAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": ZONE_KEY}
            ]
        }
    }
    cluster.server.load([client])
    await rejected(cluster, daemon, "client", "didn't match pod affinity rules")

    changed = time.monotonic()
    patch(cluster, "pods", "cache-0", {"metadata": {"labels": {"app": "web"}}}, "default")
    await retried_after(cluster, daemon, "client", "node-2", "AssignedPodUpdatePodLabel", changed)


async def test_an_assigned_pod_leaving_the_selector_unblocks_topology_spread(
    cluster: Cluster,
) -> None:
    cluster.server.load(
        [
            node("node-1", "zone-a"),
            node("node-2", "zone-b"),
            placed("db-0", "node-1", {"app": "db"}),
            placed("db-1", "node-2", {"app": "db"}),
        ]
    )
    daemon = await cluster.start_daemon()
    await eventually(lambda: len(daemon.cluster.pods) == 2, what="the placed pods cached")
    # Three domains wanted and two exist: the global minimum counts as 0, so a node with
    # one matching pod already has a skew of 2 once this pod (which matches) joins it.
    spread = pod("db-2")
    spread["metadata"]["labels"] = {"app": "db"}
    spread["spec"]["topologySpreadConstraints"] = [
        {
            "maxSkew": 1,
            "minDomains": 3,
            "topologyKey": "kubernetes.io/hostname",
            "whenUnsatisfiable": "DoNotSchedule",
            "labelSelector": {"matchLabels": {"app": "db"}},
        }
    ]
    cluster.server.load([spread])
    await rejected(cluster, daemon, "db-2", "didn't match pod topology spread constraints")

    changed = time.monotonic()
    patch(cluster, "pods", "db-0", {"metadata": {"labels": {"app": "retired"}}}, "default")
    await retried_after(cluster, daemon, "db-2", "node-1", "AssignedPodUpdatePodLabel", changed)


async def test_a_node_gaining_a_label_unblocks_node_affinity(cluster: Cluster) -> None:
    cluster.server.load([node("node-1", "zone-a"), node("node-2", "zone-b")])
    daemon = await cluster.start_daemon()
    picky = pod("picky")
    picky["spec"]["nodeSelector"] = {"disk": "ssd"}
    cluster.server.load([picky])
    await rejected(cluster, daemon, "picky", "didn't match Pod's node affinity/selector")

    changed = time.monotonic()
    patch(cluster, "nodes", "node-2", {"metadata": {"labels": {"disk": "ssd"}}})
    await retried_after(cluster, daemon, "picky", "node-2", "NodeUpdateNodeLabel", changed)


async def test_a_failed_binding_frees_the_cpu_it_held_for_a_rejected_pod(
    cluster: Cluster,
) -> None:
    """The first pod's binding is held until the second pod was rejected for the cpu the
    first one holds (assumed), then refused: forgetting the assumed pod is an assigned
    pod's deletion for the queue, and the second pod takes the node."""
    server = cluster.server
    server.load([node("node-1", "zone-a", cpu="1")])
    daemon = await cluster.start_daemon()
    held = asyncio.Event()
    release = asyncio.Event()

    def first_binding(write: WriteRequest) -> bool:
        return write.method == "POST" and write.path.endswith("/pods/first/binding")

    async def hold(write: WriteRequest, status: int | None) -> None:
        held.set()
        await release.wait()

    server.faults.trip(first_binding, hold)
    server.load([pod("first", cpu="800m")])
    await asyncio.wait_for(held.wait(), timeout=10)
    server.load([pod("second", cpu="800m")])
    await rejected(cluster, daemon, "second", "Insufficient cpu")

    changed = time.monotonic()
    release.set()  # the held binding is answered 503: the binder gives the decision back
    await retried_after(cluster, daemon, "second", "node-1", "AssignedPodDelete", changed)
    assert cluster.node_of("first") is None


async def test_an_expired_assumption_frees_the_cpu_it_held_for_a_rejected_pod(
    cluster: Cluster,
) -> None:
    """A pod assumed on a node whose binding the informer never confirms is forgotten
    when its time is up (kube-scheduler's assumed-pod TTL); that frees its cpu."""
    server = cluster.server
    ghost = pod("ghost", cpu="800m")
    ghost["spec"]["schedulerName"] = "another-scheduler"
    server.load([node("node-1", "zone-a", cpu="1"), ghost])
    daemon = await cluster.start_daemon()
    await eventually(lambda: "default/ghost" in daemon.cluster.pods, what="ghost cached")
    # As if this scheduler had bound it and the confirmation never came.
    daemon.cluster.assume_pod(daemon.cluster.pods["default/ghost"], "node-1")
    expires = time.monotonic() + 2.0
    daemon.cluster.finish_binding("default/ghost", expires)
    server.load([pod("second", cpu="800m")])
    await rejected(cluster, daemon, "second", "Insufficient cpu")
    assert time.monotonic() < expires, "the test machine was too slow to reject in time"

    await eventually(
        lambda: "default/ghost" not in daemon.cluster.assumed_pods,
        timeout=RETRY_SECONDS,
        what="the assumption expired",
    )
    await retried_after(cluster, daemon, "second", "node-1", "AssignedPodDelete", time.monotonic())


TWO_PROFILES = {
    "apiVersion": "kubescheduler.config.k8s.io/v1",
    "kind": "KubeSchedulerConfiguration",
    "profiles": [
        {"schedulerName": "volsched"},
        {
            "schedulerName": "volsched-no-spread",
            "plugins": {"filter": {"disabled": [{"name": "PodTopologySpread"}]}},
        },
    ],
}


async def test_the_queue_moves_pods_by_what_each_profiles_plugins_declare(
    cluster: Cluster,
) -> None:
    profiles = parse_scheduler_configuration(TWO_PROFILES, "config.yaml").profiles
    daemon = await cluster.start_daemon(cluster.settings(profiles=profiles))
    declared: dict[str, dict[str, Any]] = {}
    for name, scheduler in daemon.profiles.by_name.items():
        table = declared.setdefault(name, {})
        for predicate in scheduler.profile.predicates:
            plugin = predicate.plugin
            assert isinstance(plugin, EnqueueExtensions), plugin.name
            table[plugin.name] = plugin.events_to_register()
    assert daemon.queue.requeue.by_profile == declared
    assert "PodTopologySpread" in declared["volsched"]
    assert "PodTopologySpread" not in declared["volsched-no-spread"]
