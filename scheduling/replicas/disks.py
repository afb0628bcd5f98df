"""The disk stage: which disks of a node can take one replica of a volume.

A disk qualifies when it allows scheduling and is not evicting, carries every tag of the
volume's disk selector, and passes Longhorn's two space conditions, in integer bytes::

    StorageMaximum > 0 and StorageAvailable > 0
    StorageAvailable − ActualSize  >  StorageMaximum × minimal% // 100
    Size + StorageScheduled        ≤  (StorageMaximum − StorageReserved) × overProvisioning% // 100

``StorageScheduled`` is the disk's reported figure plus what this pass has placed on it.

Everything but the size condition is the same for all volumes with the same actual size
and disk selector, so ``DiskClass`` keeps it per node and redoes a node only when this
pass schedules bytes onto it; ``DiskStage`` then picks, per request, the disks with
enough headroom for the replica's size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from volsched.scheduling.replicas import reasons
from volsched.scheduling.replicas.cluster import DiskInfo, ReplicaCluster, ScheduledSpace
from volsched.scheduling.replicas.settings import ReplicaSchedulingSettings

# A qualifying disk: (name, usable bytes = available − reserved − scheduled (≥ 0),
# available − reserved, headroom = over-provisioning limit − scheduled).
Candidate = tuple[str, int, int, int]
# A node's qualifying disks in disk-name order, with the sum of their usable bytes.
NodeCandidates = tuple[tuple[Candidate, ...], int]
# One node's candidates for selection: (node index, node name, disks, their usable sum).
Group = tuple[int, str, tuple[Candidate, ...], int]
NO_CANDIDATES: NodeCandidates = ((), 0)


def minimal_available(maximum: int, percentage: int) -> int:
    """Bytes that must stay free on a disk after the replica's data lands on it."""
    return maximum * percentage // 100


def over_provisioning_limit(maximum: int, reserved: int, percentage: int) -> int:
    """The most bytes of replicas a disk may be promised."""
    return (maximum - reserved) * percentage // 100


def space_fits(
    disk: DiskInfo,
    extra_scheduled: int,
    size: int,
    actual_size: int,
    settings: ReplicaSchedulingSettings,
) -> bool:
    """Both of Longhorn's space conditions for one replica of ``size`` bytes."""
    maximum = disk.maximum
    available = disk.available
    if maximum <= 0 or available <= 0:
        return False
    if available - actual_size <= minimal_available(
        maximum, settings.storage_minimal_available_percentage
    ):
        return False
    limit = over_provisioning_limit(
        maximum, disk.reserved, settings.storage_over_provisioning_percentage
    )
    return size + disk.scheduled + extra_scheduled <= limit


def selector_matches(
    tags: frozenset[str], selector: frozenset[str], allow_empty_selector: bool
) -> bool:
    """Longhorn's tag rule: every selector tag present; an empty selector takes any
    node or disk when allowed, else only untagged ones."""
    if not selector:
        return allow_empty_selector or not tags
    return selector <= tags


class DiskClass:
    """Per node, the disks that pass every check but the size one, for volumes sharing
    an actual size and a disk selector.

    A disk then takes a replica of ``size`` bytes exactly when ``size ≤ headroom``, so a
    request of any size filters these lists instead of re-running the checks.  Each
    node's list is recomputed only when ``scheduled`` adds bytes to that node.
    """

    def __init__(
        self,
        cluster: ReplicaCluster,
        settings: ReplicaSchedulingSettings,
        actual_size: int,
        disk_selector: frozenset[str],
        scheduled: ScheduledSpace,
    ) -> None:
        self.cluster = cluster
        self.settings = settings
        self.actual_size = actual_size
        self.disk_selector = disk_selector
        self.scheduled = scheduled
        count = len(cluster.nodes)
        self.names = tuple(info.name for info in cluster.nodes)
        self._entries: list[tuple[int, NodeCandidates] | None] = [None] * count
        self._versions = [0] * count

    def entry(self, i: int) -> tuple[int, NodeCandidates]:
        """(smallest headroom, candidates) of node ``i`` with this pass's placements."""
        name = self.names[i]
        version = self.scheduled.node_version(name)
        cached = self._entries[i]
        if cached is None or self._versions[i] != version:
            cached = self._compute(i, self.scheduled.on_node(name), None)
            self._entries[i] = cached
            self._versions[i] = version
        return cached

    def _compute(
        self, i: int, added: Mapping[str, int] | None, extra: Mapping[str, int] | None
    ) -> tuple[int, NodeCandidates]:
        settings = self.settings
        min_pct = settings.storage_minimal_available_percentage
        over_pct = settings.storage_over_provisioning_percentage
        selector = self.disk_selector
        allow_empty = settings.allow_empty_disk_selector_volume
        check_tags = bool(selector) or not allow_empty
        actual = self.actual_size
        found: list[Candidate] = []
        total = 0
        smallest: int | None = None
        for disk in self.cluster.nodes[i].disks:
            maximum = disk.maximum
            available = disk.available
            if not disk.schedulable or maximum <= 0 or available <= 0:
                continue
            if available - actual <= maximum * min_pct // 100:
                continue
            if check_tags and not selector_matches(disk.tags, selector, allow_empty):
                continue
            scheduled = disk.scheduled
            if added:
                scheduled += added.get(disk.name, 0)
            if extra:
                scheduled += extra.get(disk.name, 0)
            headroom = (maximum - disk.reserved) * over_pct // 100 - scheduled
            room = available - disk.reserved
            usable = room - scheduled
            if usable < 0:
                usable = 0
            found.append((disk.name, usable, room, headroom))
            total += usable
            if smallest is None or headroom < smallest:
                smallest = headroom
        # With no disk at all, no size fits: -1 is below any size (sizes are ≥ 0).
        return (-1 if smallest is None else smallest), (tuple(found), total)

    def gather(
        self, nodes: Sequence[int], size: int, extra: Mapping[int, Mapping[str, int]]
    ) -> list[Group]:
        """The nodes' disks that can take ``size`` more bytes, as selection groups, for
        nodes with at least one; ``extra`` holds bytes the current call placed.

        The hot loop of the scheduler: ``entry`` and ``fitting`` inlined.
        """
        names = self.names
        entries = self._entries
        versions = self._versions
        node_versions = self.scheduled.node_versions
        groups: list[Group] = []
        for i in nodes:
            name = names[i]
            if i in extra:
                current = self.with_extra(i, extra[i])
            else:
                cached = entries[i]
                if cached is None or versions[i] != node_versions.get(name, 0):
                    cached = self.entry(i)
                current = cached
            smallest, (disks, total) = current
            if not disks:
                continue
            if size > smallest:
                disks = tuple(disk for disk in disks if size <= disk[3])
                if not disks:
                    continue
                total = sum(disk[1] for disk in disks)
            groups.append((i, name, disks, total))
        return groups

    def with_extra(self, i: int, extra: Mapping[str, int]) -> tuple[int, NodeCandidates]:
        """Like ``entry``, with ``extra`` bytes this call placed on the node's disks."""
        name = self.cluster.nodes[i].name
        return self._compute(i, self.scheduled.on_node(name), extra)


def fitting(entry: tuple[int, NodeCandidates], size: int) -> NodeCandidates:
    """The entry's disks that can take ``size`` more bytes."""
    smallest, candidates = entry
    if size <= smallest:
        return candidates
    disks = tuple(disk for disk in candidates[0] if size <= disk[3])
    return disks, sum(disk[1] for disk in disks)


class DiskStage:
    """Nodes and disks one volume request may use, before anti-affinity.

    Tied to one version of ``scheduled``; placements made by the current call are
    passed in as ``extra`` bytes.  Requests that are the same (``place_for_new_volume``
    asked for many candidate pod nodes) share one stage and its first-tier choices.
    """

    def __init__(
        self,
        cluster: ReplicaCluster,
        settings: ReplicaSchedulingSettings,
        size: int,
        actual_size: int,
        node_selector: frozenset[str],
        disk_selector: frozenset[str],
        scheduled: ScheduledSpace,
    ) -> None:
        self.cluster = cluster
        self.settings = settings
        self.size = size
        self.scheduled = scheduled
        self.disks = cluster.memo(
            "disk-class",
            (settings, actual_size, disk_selector, scheduled),
            lambda: DiskClass(cluster, settings, actual_size, disk_selector, scheduled),
        )
        cordon_blocks = settings.disable_scheduling_on_cordoned_node
        self.available: tuple[int, ...] = cluster.available_nodes(cordon_blocks)
        self.available_set: frozenset[int] = cluster.memo(
            "available-set", cordon_blocks, lambda: frozenset(self.available)
        )
        allow_empty = settings.allow_empty_node_selector_volume
        nodes = cluster.nodes

        def eligible() -> tuple[tuple[int, ...], frozenset[int]]:
            chosen = tuple(
                i
                for i in self.available
                if selector_matches(nodes[i].tags, node_selector, allow_empty)
            )
            return chosen, frozenset(chosen)

        self.eligible, self.eligible_set = cluster.memo(
            "eligible", (cordon_blocks, node_selector, allow_empty), eligible
        )
        self.zones: tuple[str, ...] = cluster.memo(
            "zones", None, lambda: tuple(info.zone for info in nodes)
        )
        self.names: tuple[str, ...] = self.disks.names
        # First-tier choices, keyed by what they depend on (see Placer._first_tier).
        self.first_tier_choices: dict[object, tuple[int, str] | None] = {}

    def candidates(self, i: int) -> NodeCandidates:
        return fitting(self.disks.entry(i), self.size)

    def node_reasons(self, i: int, extra: Mapping[str, int] | None) -> set[str]:
        """Why node ``i`` has no qualifying disk, as longhorn-manager words it.

        Space is checked before tags, as longhorn-manager's filterNodeDisksForReplica
        does in every release whose source was read for this (up to the one that words
        each disk's reason in full), so a full disk with the wrong tags reports
        ``insufficient storage``. A release that checks tags first would report ``tags
        not fulfilled`` for it; follow the current release if that order changes.
        """
        info = self.cluster.nodes[i]
        disks = [disk for disk in info.disks if disk.schedulable]
        if not disks:
            return {reasons.DISK_UNAVAILABLE}
        found: set[str] = set()
        allow_empty = self.settings.allow_empty_disk_selector_volume
        actual = self.disks.actual_size
        selector = self.disks.disk_selector
        for disk in disks:
            added = self.scheduled.get(info.name, disk.name)
            if extra:
                added += extra.get(disk.name, 0)
            if not space_fits(disk, added, self.size, actual, self.settings):
                found.add(reasons.INSUFFICIENT_STORAGE)
            elif not selector_matches(disk.tags, selector, allow_empty):
                found.add(reasons.TAGS_NOT_FULFILLED)
        return found


def disk_stage(
    cluster: ReplicaCluster,
    settings: ReplicaSchedulingSettings,
    size: int,
    actual_size: int,
    node_selector: Sequence[str],
    disk_selector: Sequence[str],
    scheduled: ScheduledSpace,
) -> DiskStage:
    """The stage for this request, shared with earlier identical requests of the pass
    as long as ``scheduled`` has not changed since."""
    nodes = frozenset(node_selector)
    disks = frozenset(disk_selector)
    key = (settings, size, actual_size, nodes, disks, scheduled, scheduled.version)
    return cluster.memo(
        "disk-stage",
        key,
        lambda: DiskStage(cluster, settings, size, actual_size, nodes, disks, scheduled),
    )
