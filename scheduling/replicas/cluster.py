"""The replica scheduler's view of the cluster, built once per scheduling pass.

``ReplicaCluster`` joins each StorageNode to its Kubernetes Node (readiness, cordon, zone)
and indexes replicas by volume, so that placing a replica never scans the object lists.
``ScheduledSpace`` holds the bytes this scheduler has promised to disks but the storage
agent has not yet reported in ``status.storageScheduled``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from volsched.cache.objects.core import LABEL_TOPOLOGY_ZONE, Node
from volsched.cache.objects.replicated import Replica, StorageNode

_T = TypeVar("_T")
_MEMO_SIZE = 8


@dataclass(frozen=True, slots=True)
class DiskInfo:
    """One configured disk, in bytes; ``schedulable`` folds allowScheduling, eviction and
    whether the agent has reported the disk at all."""

    name: str
    tags: frozenset[str]
    schedulable: bool
    maximum: int
    available: int
    reserved: int
    scheduled: int


@dataclass(frozen=True, slots=True)
class NodeInfo:
    """A storage node as placement sees it.

    ``healthy`` is everything the node stage asks of a node except the cordon, which
    depends on a setting: a Kubernetes Node that is Ready, a StorageNode that is ready,
    allows scheduling, is not evicting and is not compute-only.
    """

    name: str
    zone: str
    tags: frozenset[str]
    healthy: bool
    cordoned: bool
    disks: tuple[DiskInfo, ...]


class ScheduledSpace:
    """Bytes added to disks by placements made in this pass (or assumed by the scheduler).

    Every ``add`` bumps ``version`` so that views computed from this object know when
    they are stale.
    """

    __slots__ = ("_by_node", "_node_versions", "_version")

    def __init__(self) -> None:
        self._by_node: dict[str, dict[str, int]] = {}
        self._node_versions: dict[str, int] = {}
        self._version = 0

    def add(self, node: str, disk: str, size: int) -> None:
        disks = self._by_node.setdefault(node, {})
        disks[disk] = disks.get(disk, 0) + size
        self._version += 1
        self._node_versions[node] = self._version

    def node_version(self, node: str) -> int:
        """Changes whenever bytes are added to one of the node's disks (0: never)."""
        return self._node_versions.get(node, 0)

    @property
    def node_versions(self) -> Mapping[str, int]:
        """``node_version`` for every node that has one; do not modify."""
        return self._node_versions

    def get(self, node: str, disk: str) -> int:
        disks = self._by_node.get(node)
        return disks.get(disk, 0) if disks else 0

    def on_node(self, node: str) -> dict[str, int] | None:
        """The node's disks with added bytes (None when there are none); do not modify."""
        return self._by_node.get(node)

    def copy(self) -> ScheduledSpace:
        other = ScheduledSpace()
        other._by_node = {node: dict(disks) for node, disks in self._by_node.items()}
        other._node_versions = dict(self._node_versions)
        other._version = self._version
        return other

    def items(self) -> Iterator[tuple[str, str, int]]:
        for node, disks in sorted(self._by_node.items()):
            for disk, size in sorted(disks.items()):
                yield node, disk, size

    @property
    def version(self) -> int:
        return self._version


def _disk_info(storage_node: StorageNode) -> tuple[DiskInfo, ...]:
    disks = []
    for disk in storage_node.disks:
        status = disk.status
        disks.append(
            DiskInfo(
                name=disk.name,
                tags=frozenset(disk.tags),
                schedulable=(
                    disk.allow_scheduling and not disk.eviction_requested and status is not None
                ),
                maximum=status.storage_maximum if status else 0,
                available=status.storage_available if status else 0,
                reserved=disk.storage_reserved,
                scheduled=status.storage_scheduled if status else 0,
            )
        )
    return tuple(disks)


class ReplicaCluster:
    """A read-only view of nodes, storage nodes and replicas for one scheduling pass.

    ``nodes`` are the storage nodes sorted by name; positions in that tuple are the node
    indexes the scheduler works with, so index order is name order.
    """

    def __init__(
        self,
        nodes: Iterable[Node],
        storage_nodes: Iterable[StorageNode],
        replicas: Iterable[Replica],
    ) -> None:
        kube = {node.name: node for node in nodes}
        # Nodes without the zone label share one empty zone.
        self._zones = {
            name: node.labels.get(LABEL_TOPOLOGY_ZONE, "") for name, node in kube.items()
        }
        infos = []
        for storage in sorted(storage_nodes, key=lambda s: s.name):
            node = kube.get(storage.name)
            healthy = (
                node is not None
                and node.ready
                and storage.ready
                and storage.allow_scheduling
                and not storage.eviction_requested
                and not storage.compute_only
            )
            infos.append(
                NodeInfo(
                    name=storage.name,
                    zone=self._zones.get(storage.name, ""),
                    tags=frozenset(storage.tags),
                    healthy=healthy,
                    cordoned=node is not None and node.unschedulable,
                    disks=_disk_info(storage),
                )
            )
        self.nodes: tuple[NodeInfo, ...] = tuple(infos)
        self.index: dict[str, int] = {info.name: i for i, info in enumerate(infos)}
        by_volume: dict[str, list[Replica]] = {}
        for replica in replicas:
            by_volume.setdefault(replica.volume_name, []).append(replica)
        self._replicas = {
            volume: tuple(sorted(items, key=lambda r: r.name))
            for volume, items in by_volume.items()
        }
        self._available: dict[bool, tuple[int, ...]] = {}
        self._memo: dict[str, dict[Any, Any]] = {}

    def replicas_of(self, volume: str) -> tuple[Replica, ...]:
        """The volume's Replica objects, sorted by name."""
        return self._replicas.get(volume, ())

    def zone_of(self, node: str) -> str | None:
        """The node's zone ("" when unlabelled), None for a node nobody knows."""
        zone = self._zones.get(node)
        if zone is None and node in self.index:
            return self.nodes[self.index[node]].zone
        return zone

    def available_nodes(self, cordon_blocks: bool) -> tuple[int, ...]:
        """Indexes of the nodes that survive the node stage's drops (before tags)."""
        cached = self._available.get(cordon_blocks)
        if cached is None:
            cached = tuple(
                i
                for i, info in enumerate(self.nodes)
                if info.healthy and not (cordon_blocks and info.cordoned)
            )
            self._available[cordon_blocks] = cached
        return cached

    def memo(self, kind: str, key: Any, build: Callable[[], _T]) -> _T:
        """A small cache of views derived from this cluster, a few per kind, most
        recently used kept (keys must name everything the view was built from)."""
        entries = self._memo.setdefault(kind, {})
        if key in entries:
            value: _T = entries.pop(key)
        else:
            value = build()
            if len(entries) >= _MEMO_SIZE:
                entries.pop(next(iter(entries)))
        entries[key] = value
        return value
