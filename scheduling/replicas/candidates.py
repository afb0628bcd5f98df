"""The node stage: which replicas a volume already has, and the tiers of nodes to try.

Existing replicas matter twice.  They *count* toward ``numberOfReplicas`` (so fewer new
ones are needed) and they *occupy* a node, a zone and a disk (so anti-affinity keeps new
ones away).  longhorn-manager's rules, as the issue fixes them:

- a replica counts when it has a node, is not being deleted, is not evicting, and is
  healthy or failed-but-reusable;
- a replica occupies when it has a node, is not being deleted, and is healthy or
  failed-but-reusable — an evicting replica still occupies, but its node and zone may be
  reused when every replica there is evicting (longhorn/longhorn#3076);
- failed-but-reusable means ``rebuildRetryCount < 5``, still on its node and disk, not
  evicting, and the replenishment wait (from ``status.lastDegradedAt``) not yet over;
  the wait runs only while the volume is degraded — a healthy volume's failed replicas
  are always waited for;
- disk anti-affinity keeps new replicas off a disk holding any replica that may still be
  reused, even once the wait is over (longhorn-manager's filterDisksWithMatchingReplicas).

The tiers, tried in order until one yields a disk: a new node in a new zone; then, with
hard zone anti-affinity, only nodes and zones whose replicas are all evicting; with soft
zone but hard node anti-affinity, a new node in a used zone, then nodes whose replicas
are all evicting; with both soft, a new node in a used zone, then a used node.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from volsched.cache.objects.replicated import ROBUSTNESS_DEGRADED, Replica, Volume
from volsched.scheduling.replicas.cluster import ReplicaCluster
from volsched.scheduling.replicas.settings import ReplicaSchedulingSettings


def replenishment_wait_over(
    volume: Volume | None, settings: ReplicaSchedulingSettings, now: float
) -> bool:
    """Whether failed replicas should now be replaced rather than waited for.

    Only a degraded volume replenishes; longhorn-manager never replaces the failed
    replicas of a volume in another state.  The wait runs from ``status.lastDegradedAt``;
    a degraded volume that recorded no such time has nothing to wait from, so its failed
    replicas are replaced at once, as longhorn-manager does when it cannot read that time.
    """
    if volume is not None and volume.robustness != ROBUSTNESS_DEGRADED:
        return False
    if volume is None or volume.last_degraded_at is None:
        return True
    return now > volume.last_degraded_at + settings.replica_replenishment_wait_interval_seconds


def reusable(replica: Replica, wait_over: bool) -> bool:
    return replica.potentially_reusable and not wait_over


def occupies(replica: Replica, wait_over: bool) -> bool:
    if not replica.node_id or replica.deleting:
        return False
    return not replica.failed or reusable(replica, wait_over)


def counts(replica: Replica, wait_over: bool) -> bool:
    return occupies(replica, wait_over) and not replica.eviction_requested


def fillable(replica: Replica) -> bool:
    """A Replica object waiting for a node.  longhorn-manager never schedules one that
    failed before it was ever healthy; such an object is neither filled nor counted."""
    if replica.node_id or replica.deleting:
        return False
    return not (replica.failed and replica.healthy_at is None)


@dataclass(frozen=True, slots=True)
class VolumeReplicas:
    counted: int
    to_fill: tuple[Replica, ...]
    occupying: tuple[Replica, ...]
    # Failed replicas past the wait that may still be reused: they hold only their disk.
    holding_disks: tuple[Replica, ...] = ()
    # Replica objects waiting for a node that failed before they were ever healthy.
    unused_failed: tuple[Replica, ...] = ()

    def missing(self, wanted: int) -> int:
        """How many placements to try: the waiting objects, then new replicas."""
        return len(self.to_fill) + max(0, wanted - self.counted - len(self.to_fill))


def classify(replicas: Sequence[Replica], wait_over: bool) -> VolumeReplicas:
    return VolumeReplicas(
        counted=sum(1 for r in replicas if counts(r, wait_over)),
        to_fill=tuple(r for r in replicas if fillable(r)),
        occupying=tuple(r for r in replicas if occupies(r, wait_over)),
        holding_disks=tuple(
            r
            for r in replicas
            if r.potentially_reusable and not r.deleting and not occupies(r, wait_over)
        ),
        unused_failed=tuple(
            r
            for r in replicas
            if not r.node_id and not r.deleting and r.failed and r.healthy_at is None
        ),
    )


class Occupancy:
    """Nodes, zones and disks a volume's replicas hold, growing with each placement."""

    __slots__ = (
        "_evicting_nodes",
        "_evicting_zones",
        "_steady_nodes",
        "_steady_zones",
        "healthy_nodes",
        "used_disks",
        "used_nodes",
        "used_zones",
    )

    def __init__(self) -> None:
        self.used_nodes: set[str] = set()
        self.used_zones: set[str] = set()
        self.used_disks: dict[str, set[str]] = {}
        self.healthy_nodes: set[str] = set()
        self._steady_nodes: set[str] = set()
        self._steady_zones: set[str] = set()
        self._evicting_nodes: set[str] = set()
        self._evicting_zones: set[str] = set()

    @classmethod
    def of(
        cls,
        cluster: ReplicaCluster,
        replicas: Sequence[Replica],
        holding_disks: Sequence[Replica] = (),
    ) -> Occupancy:
        occupancy = cls()
        for replica in holding_disks:
            occupancy.used_disks.setdefault(replica.node_id, set()).add(replica.disk_id)
        for replica in replicas:
            occupancy.add(
                replica.node_id,
                cluster.zone_of(replica.node_id),
                replica.disk_id,
                evicting=replica.eviction_requested,
                healthy=not replica.failed,
            )
        return occupancy

    def add(
        self, node: str, zone: str | None, disk: str, evicting: bool = False, healthy: bool = True
    ) -> None:
        self.used_nodes.add(node)
        if disk:
            self.used_disks.setdefault(node, set()).add(disk)
        if healthy:
            self.healthy_nodes.add(node)
        (self._evicting_nodes if evicting else self._steady_nodes).add(node)
        if zone is not None:
            self.used_zones.add(zone)
            (self._evicting_zones if evicting else self._steady_zones).add(zone)

    @property
    def evicting_only_nodes(self) -> set[str]:
        return self._evicting_nodes - self._steady_nodes

    @property
    def evicting_only_zones(self) -> set[str]:
        return self._evicting_zones - self._steady_zones


def first_tier(pool: Sequence[int], zones: Sequence[str], occupancy: Occupancy) -> list[int]:
    """New nodes in new zones (a node in an unused zone is itself unused)."""
    used_zones = occupancy.used_zones
    return [i for i in pool if zones[i] not in used_zones]


def later_tiers(
    pool: Sequence[int],
    names: Sequence[str],
    zones: Sequence[str],
    occupancy: Occupancy,
    zone_soft: bool,
    node_soft: bool,
) -> Iterator[list[int]]:
    """The tiers after the first, as the module docstring lists them, built lazily."""
    if not zone_soft:
        # Hard zone anti-affinity implies hard node anti-affinity.
        evicting_nodes = occupancy.evicting_only_nodes
        evicting_zones = occupancy.evicting_only_zones
        yield [i for i in pool if names[i] in evicting_nodes and zones[i] in evicting_zones]
        return
    used_nodes = occupancy.used_nodes
    yield [i for i in pool if names[i] not in used_nodes]
    if not node_soft:
        evicting_nodes = occupancy.evicting_only_nodes
        yield [i for i in pool if names[i] in evicting_nodes]
    else:
        yield [i for i in pool if names[i] in used_nodes]
