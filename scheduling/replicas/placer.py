"""Placing one volume's replicas, one at a time (longhorn-manager's way).

Each replica goes through the node stage (``candidates``), the disk stage (``disks``)
and a selection strategy (``selection``); each placement counts for the next — its node,
zone and disk become occupied and its bytes scheduled.  When one replica cannot be
placed, the later ones of the same volume cannot either (nothing changed in between), so
the volume stops there and reports why.

Data locality: ``best-effort`` prefers the volume's node among the disks of the winning
tier while that node holds no healthy replica; ``strict-local`` is a hard node affinity
to the volume's node (``hard affinity cannot be satisfied`` when that node cannot take
replicas at all).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from volsched.scheduling.replicas import reasons
from volsched.scheduling.replicas.candidates import Occupancy, first_tier, later_tiers
from volsched.scheduling.replicas.disks import NO_CANDIDATES, DiskStage, Group
from volsched.scheduling.replicas.results import DiskPlacement, VolumePlacement
from volsched.scheduling.replicas.selection import select


@dataclass(frozen=True, slots=True)
class PlacementRequest:
    """One volume's placement problem, with its anti-affinity overrides resolved."""

    volume: str
    size: int
    attempts: int
    local_node: str  # the volume's node when data locality applies, else ""
    strict: bool
    node_soft: bool
    zone_soft: bool
    disk_soft: bool
    strategy: str


class Placer:
    """One volume's placements in one call; the stage is shared, everything else is not."""

    def __init__(self, stage: DiskStage, request: PlacementRequest, occupancy: Occupancy) -> None:
        self.stage = stage
        self.request = request
        self.occupancy = occupancy
        self.extra: dict[int, dict[str, int]] = {}
        self.reasons: set[str] = set()

    def run(self) -> VolumePlacement:
        placed: list[DiskPlacement] = []
        for _ in range(self.request.attempts):
            choice = self._place_one()
            if choice is None:
                break
            node, disk = choice
            self._record(node, disk)
            placed.append(DiskPlacement(self.stage.names[node], disk))
        unplaced = self.request.attempts - len(placed)
        found = reasons.normalized(self.reasons) if unplaced else ()
        return VolumePlacement(self.request.volume, tuple(placed), unplaced, found)

    def _pool(self) -> Sequence[int] | None:
        """The nodes this replica may use, or None (with a reason) when none can."""
        stage = self.stage
        if self.request.strict:
            index = stage.cluster.index.get(self.request.local_node)
            if index is None or index not in stage.available_set:
                self.reasons.add(reasons.HARD_AFFINITY_NOT_SATISFIED)
                return None
            return (index,) if index in stage.eligible_set else ()
        if not stage.available:
            self.reasons.add(reasons.NODE_UNAVAILABLE)
            return None
        return stage.eligible

    def _place_one(self) -> tuple[int, str] | None:
        pool = self._pool()
        if pool is None:
            return None
        request = self.request
        stage = self.stage
        occupancy = self.occupancy
        local: int | None = None
        if request.local_node and request.local_node not in occupancy.healthy_nodes:
            local = stage.cluster.index.get(request.local_node)
        choice = self._first_tier(pool, local)
        if choice is not None:
            return choice
        tried = [first_tier(pool, stage.zones, occupancy)]
        node_tiers = later_tiers(
            pool, stage.names, stage.zones, occupancy, request.zone_soft, request.node_soft
        )
        for nodes in node_tiers:
            choice = self._choose(self._groups(nodes), local)
            if choice is not None:
                return choice
            tried.append(nodes)
        self._explain(tried)
        return None

    def _first_tier(self, pool: Sequence[int], local: int | None) -> tuple[int, str] | None:
        """New nodes in new zones.

        None of this call's placements or occupied disks lie in an unused zone, so the
        outcome depends only on the pool, the used zones and the local node — and the
        local node only when it is in the tier with a disk to offer.  Without it, the
        choice is shared by every call on this stage (``place_for_new_volume`` asked
        for many pod nodes), which makes those calls cheap.
        """
        stage = self.stage
        used_zones = self.occupancy.used_zones
        if local is not None and stage.zones[local] not in used_zones:
            in_pool = local in pool if self.request.strict else local in stage.eligible_set
            disks, total = stage.candidates(local) if in_pool else NO_CANDIDATES
            if disks:
                group: Group = (local, stage.names[local], disks, total)
                return select([group], self.request.size, self.request.strategy)
        key = (tuple(pool) if self.request.strict else None, frozenset(used_zones))
        if key in stage.first_tier_choices:
            return stage.first_tier_choices[key]
        nodes = first_tier(pool, stage.zones, self.occupancy)
        choice = self._choose(self._groups(nodes), None)
        stage.first_tier_choices[key] = choice
        return choice

    def _groups(self, nodes: Sequence[int]) -> list[Group]:
        """The tier's candidate disks, after disk anti-affinity."""
        groups = self.stage.disks.gather(nodes, self.request.size, self.extra)
        used = self.occupancy.used_disks
        if not groups or not used:
            return groups
        free: list[Group] = []
        for group in groups:
            taken = used.get(group[1])
            if not taken:
                free.append(group)
                continue
            disks = tuple(disk for disk in group[2] if disk[0] not in taken)
            if disks:
                free.append((group[0], group[1], disks, sum(disk[1] for disk in disks)))
        if free:
            return free
        # Every candidate disk already holds a replica of this volume.
        return groups if self.request.disk_soft else []

    def _choose(self, groups: list[Group], local: int | None) -> tuple[int, str] | None:
        if not groups:
            return None
        if local is not None:
            on_local = [group for group in groups if group[0] == local]
            if on_local:
                groups = on_local
        return select(groups, self.request.size, self.request.strategy)

    def _explain(self, tried: list[list[int]]) -> None:
        """Reasons of every disk of the tried tiers' nodes that did not qualify.

        As longhorn-manager's filterNodeDisksForReplica, each disk's reason counts
        whether or not another disk of the node qualified: when disk anti-affinity then
        removes the only qualifying disk, the others' reasons (``tags not fulfilled``)
        are what the user reads, not ``replica scheduling failed``."""
        stage = self.stage
        seen: set[int] = set()
        for nodes in tried:
            for i in nodes:
                if i in seen:
                    continue
                seen.add(i)
                self.reasons |= stage.node_reasons(i, self.extra.get(i))

    def _record(self, node: int, disk: str) -> None:
        stage = self.stage
        self.occupancy.add(stage.names[node], stage.zones[node], disk)
        extra = self.extra.setdefault(node, {})
        extra[disk] = extra.get(disk, 0) + self.request.size
