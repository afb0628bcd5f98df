"""What the decisions page shows, read from the daemon's live cache: plain data for the
templates, every list cut to a bound with a count of the rest.

Nothing here waits, writes or decides anew except ``pod_explanation``, which runs one
scheduling cycle for one pod (``scheduling.explanation.explain_pod``: nothing reserved).
Everything runs on the event loop between two scheduling cycles, so what the page shows
is one consistent moment of the cache; the bounds keep that moment short.
"""

from __future__ import annotations

import heapq
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.core import LABEL_TOPOLOGY_ZONE, Pod
from volsched.cache.objects.replicated import StorageNode, Volume
from volsched.daemon.binding.attempts import Attempt, LastAttempts
from volsched.scheduling.explanation import explain_json, explain_pod, node_names
from volsched.scheduling.framework.profiles import Profiles

NO_ZONE = "(no zone)"
# Replicas of different volumes are told apart by colour; the palette repeats.
PALETTE = (
    "#4e79a7",
    "#f28e2b",
    "#59a14f",
    "#b07aa1",
    "#e15759",
    "#76b7b2",
    "#edc948",
    "#9c755f",
    "#ff9da7",
    "#bab0ac",
)
RESULT_ORDER = {"chosen": 0, "feasible": 1, "rejected": 2, "not-evaluated": 3}


@dataclass(frozen=True, slots=True)
class PageLimits:
    """How much one page lists at most; the rest is counted, not shown."""

    pending_pods: int = 100
    volumes: int = 50
    storage_nodes: int = 100
    node_rows: int = 200


@dataclass(frozen=True, slots=True)
class DecisionsSource:
    """What the page reads: the cache, the profiles deciding over it, and the record of
    the messages the daemon reported."""

    cluster: ClusterCache
    profiles: Profiles
    attempts: LastAttempts
    limits: PageLimits = PageLimits()
    # In shadow mode: the comparison report (``/shadow/report``'s body).
    shadow_report: Callable[[], dict[str, Any]] | None = None


@dataclass(frozen=True, slots=True)
class PendingRow:
    key: str
    namespace: str
    name: str
    scheduler_name: str
    attempt: Attempt | None
    nominated_node: str


@dataclass(frozen=True, slots=True)
class PendingView:
    rows: list[PendingRow]
    total: int
    binding: int

    @property
    def more(self) -> int:
        return self.total - len(self.rows)


def pending_view(source: DecisionsSource) -> PendingView:
    """The pending pods of the schedulers this daemon serves, by namespace and name, at
    most ``limits.pending_pods`` of them (``heapq`` keeps the cost linear in the pods)."""
    names = source.profiles.names
    served = [pod for pod in source.cluster.pending.values() if pod.scheduler_name in names]
    shown = heapq.nsmallest(source.limits.pending_pods, served, key=lambda pod: pod.meta.key)
    rows = [
        PendingRow(
            key=pod.meta.key,
            namespace=pod.meta.namespace,
            name=pod.meta.name,
            scheduler_name=pod.scheduler_name,
            attempt=source.attempts.get(pod.meta.key),
            nominated_node=pod.nominated_node_name,
        )
        for pod in shown
    ]
    return PendingView(rows, len(served), len(source.cluster.assumed_pods))


# -- where replicas live ----------------------------------------------------------------


@dataclass(slots=True)
class ReplicaChip:
    volume: str
    label: str
    colour: str
    primary: bool = False
    failed: bool = False
    synced: bool = True
    assumed: bool = False

    @property
    def state(self) -> str:
        if self.failed:
            return "failed"
        if self.assumed:
            return "assumed"
        return "rebuilding" if not self.synced else "healthy"


@dataclass(slots=True)
class DiskBox:
    name: str
    tags: tuple[str, ...] = ()
    replicas: list[ReplicaChip] = field(default_factory=list)


@dataclass(slots=True)
class NodeBox:
    name: str
    ready: bool = True
    schedulable: bool = True
    disks: dict[str, DiskBox] = field(default_factory=dict)


@dataclass(slots=True)
class ZoneBox:
    name: str
    nodes: list[NodeBox] = field(default_factory=list)


@dataclass(frozen=True, slots=True)
class VolumeRow:
    name: str
    label: str
    colour: str
    claim: str
    size: int
    wanted: int
    placed: int
    assumed: int
    robustness: str


@dataclass(frozen=True, slots=True)
class ReplicaView:
    volumes: list[VolumeRow]
    zones: list[ZoneBox]
    more_volumes: int
    more_nodes: int


def _claim_of(cluster: ClusterCache, volume: str) -> str:
    pv = cluster.pvs.get(volume)
    ref = pv.claim_ref if pv is not None else None
    return f"{ref.namespace}/{ref.name}" if ref is not None else ""


def _node_box(cluster: ClusterCache, name: str, storage: StorageNode | None) -> NodeBox:
    info = cluster.nodes.get(name)
    box = NodeBox(
        name,
        ready=storage is not None and storage.ready,
        schedulable=storage is not None
        and storage.allow_scheduling
        and not storage.eviction_requested
        and not (info is not None and info.node.unschedulable),
    )
    for disk in storage.disks if storage is not None else ():
        box.disks[disk.name] = DiskBox(disk.name, disk.tags)
    return box


def _zone_of(cluster: ClusterCache, node: str) -> str:
    info = cluster.nodes.get(node)
    if info is None:
        return NO_ZONE
    return info.node.meta.labels.get(LABEL_TOPOLOGY_ZONE) or NO_ZONE


def replica_view(source: DecisionsSource) -> ReplicaView:
    """Zones → nodes → disks, each disk with the replicas of the listed volumes on it
    (those the storage system reports, and those this scheduler decided and the agent has
    not created yet). Volumes are listed by name up to ``limits.volumes``; nodes holding
    a replica come first, then the other storage nodes, up to ``limits.storage_nodes``."""
    cluster = source.cluster
    limits = source.limits
    storage = cluster.storage
    all_volumes: list[Volume] = list(storage.volumes.values())
    shown = heapq.nsmallest(limits.volumes, all_volumes, key=lambda volume: volume.meta.name)
    boxes: dict[str, NodeBox] = {}

    def box_of(node: str) -> NodeBox:
        box = boxes.get(node)
        if box is None:
            box = boxes[node] = _node_box(cluster, node, storage.storage_nodes.get(node))
        return box

    rows: list[VolumeRow] = []
    for index, volume in enumerate(shown):
        name = volume.meta.name
        colour = PALETTE[index % len(PALETTE)]
        claim = _claim_of(cluster, name)
        # The claim's name is what a person knows a volume by; a PV name is a uuid.
        label = claim.partition("/")[2] or name
        replicas = sorted(cluster.replicas_by_volume.get(name, {}).values(), key=lambda r: r.name)
        for replica in replicas:
            if not replica.node_id:
                continue
            box = box_of(replica.node_id)
            disk = box.disks.setdefault(replica.disk_id, DiskBox(replica.disk_id or "?"))
            disk.replicas.append(
                ReplicaChip(name, label, colour, replica.primary, replica.failed, replica.synced)
            )
        # A decided placement stays assumed until the agent counts it; once its Replica
        # exists, the Replica shows instead.
        created = {(replica.node_id, replica.disk_id) for replica in replicas}
        assumed = [
            placement
            for placement in cluster.assumed_replicas.get(name, [])
            if (placement.node, placement.disk) not in created
        ]
        for placement in assumed:
            box = box_of(placement.node)
            disk = box.disks.setdefault(placement.disk, DiskBox(placement.disk))
            disk.replicas.append(
                ReplicaChip(name, label, colour, synced=placement.synced, assumed=True)
            )
        placed = sum(1 for replica in replicas if replica.node_id and not replica.failed)
        rows.append(
            VolumeRow(
                name,
                label,
                colour,
                claim,
                volume.size,
                volume.number_of_replicas,
                placed,
                len(assumed),
                volume.robustness,
            )
        )
    room = max(limits.storage_nodes - len(boxes), 0)
    others = sorted(name for name in storage.storage_nodes if name not in boxes)
    for name in others[:room]:
        box_of(name)
    more_nodes = len(others) - min(room, len(others))
    by_zone: dict[str, list[NodeBox]] = defaultdict(list)
    for name, box in boxes.items():
        by_zone[_zone_of(cluster, name)].append(box)
    zones = [
        ZoneBox(zone, sorted(nodes, key=lambda box: box.name))
        for zone, nodes in sorted(by_zone.items())
    ]
    return ReplicaView(rows, zones, len(all_volumes) - len(shown), more_nodes)


# -- one pod, node by node --------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class PodExplanation:
    pod: Pod
    served: bool
    attempt: Attempt | None
    # None for a pod that is not pending (``bound_to`` says where it runs).
    report: dict[str, Any] | None
    rows: list[dict[str, Any]]
    more_rows: int
    bound_to: str


def pod_explanation(source: DecisionsSource, pod: Pod) -> PodExplanation:
    """For a pending pod, the per-node filter and score rows ``volsched explain`` prints,
    decided now against the live cache; chosen and feasible nodes first (best total
    first), then the rejected ones, at most ``limits.node_rows`` rows."""
    cluster = source.cluster
    key = pod.meta.key
    served = pod.scheduler_name in source.profiles.names
    attempt = source.attempts.get(key)
    if key not in cluster.pending:
        bound_to = pod.node_name or cluster.assumed_pods.get(key, "")
        return PodExplanation(pod, served, attempt, None, [], 0, bound_to)
    scheduler = source.profiles.for_pod(pod)
    outcome = explain_pod(scheduler, pod)
    report = explain_json(outcome, scheduler.profile, node_names(cluster), cluster.nodes)
    ordered = sorted(
        report["nodes"],
        key=lambda row: (RESULT_ORDER.get(row["result"], 9), -row.get("total", 0), row["node"]),
    )
    shown = ordered[: source.limits.node_rows]
    return PodExplanation(pod, served, attempt, report, shown, len(ordered) - len(shown), "")
