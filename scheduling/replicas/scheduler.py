"""The replica scheduler's entry points: existing volumes, and volumes about to be created.

The placement itself is ``placer.Placer``; this module decides what there is to place
(which replicas count, which Replica objects wait for a node, whether the replenishment
wait is over) and records the outcome in the pass's ``ScheduledSpace``.
"""

from __future__ import annotations

from collections.abc import Iterable

from volsched.cache.objects.replicated import (
    ANTI_AFFINITY_DISABLED,
    ANTI_AFFINITY_ENABLED,
    DATA_LOCALITIES,
    DATA_LOCALITY_DISABLED,
    DATA_LOCALITY_STRICT_LOCAL,
    Replica,
    Volume,
)
from volsched.scheduling.replicas import reasons
from volsched.scheduling.replicas.candidates import Occupancy, classify, replenishment_wait_over
from volsched.scheduling.replicas.cluster import ReplicaCluster, ScheduledSpace
from volsched.scheduling.replicas.disks import disk_stage
from volsched.scheduling.replicas.placer import PlacementRequest, Placer
from volsched.scheduling.replicas.results import VolumePlacement
from volsched.scheduling.replicas.settings import ReplicaSchedulingSettings


def _soft(override: str, setting: bool) -> bool:
    """A volume's ``enabled``/``disabled`` override, or the cluster setting (``ignored``)."""
    if override == ANTI_AFFINITY_ENABLED:
        return True
    if override == ANTI_AFFINITY_DISABLED:
        return False
    return setting


def replicas_to_fill(volume: Volume, cluster: ReplicaCluster) -> tuple[Replica, ...]:
    """The volume's Replica objects without a node that ``schedule_volume`` fills, in the
    order of its first placements."""
    return classify(cluster.replicas_of(volume.name), wait_over=False).to_fill


def schedule_volume(
    volume: Volume,
    cluster: ReplicaCluster,
    settings: ReplicaSchedulingSettings,
    now: float,
    scheduled: ScheduledSpace,
) -> VolumePlacement | None:
    """Place the missing replicas of one volume; records its placements into ``scheduled``.

    None means there was nothing to try, and the volume is not listed: it has all its
    replicas, it is being deleted, or it is ``strict-local`` and detached (placed once
    attached).  ``now`` is epoch seconds, for the replenishment wait.
    """
    if volume.meta.deletion_timestamp is not None:
        return None
    if volume.data_locality == DATA_LOCALITY_STRICT_LOCAL and not volume.node_id:
        return None
    wait_over = replenishment_wait_over(volume, settings, now)
    replicas = classify(cluster.replicas_of(volume.name), wait_over)
    attempts = replicas.missing(volume.number_of_replicas)
    if attempts == 0:
        return None
    if replicas.unused_failed:
        # longhorn-manager's ScheduleReplica refuses such an object before it looks at
        # any disk; the volume's pass ends there, its reason on the volume.
        return VolumePlacement(volume.name, (), attempts, (reasons.UNUSED_FAILED_REPLICA,))
    request = PlacementRequest(
        volume=volume.name,
        size=volume.size,
        attempts=attempts,
        local_node="" if volume.data_locality == DATA_LOCALITY_DISABLED else volume.node_id,
        strict=volume.data_locality == DATA_LOCALITY_STRICT_LOCAL,
        node_soft=_soft(
            volume.replica_node_level_soft_anti_affinity,
            settings.replica_node_level_soft_anti_affinity,
        ),
        zone_soft=_soft(
            volume.replica_zone_level_soft_anti_affinity,
            settings.replica_zone_level_soft_anti_affinity,
        ),
        disk_soft=_soft(
            volume.replica_disk_level_soft_anti_affinity,
            settings.replica_disk_level_soft_anti_affinity,
        ),
        strategy=settings.disk_selection,
    )
    stage = disk_stage(
        cluster,
        settings,
        volume.size,
        volume.actual_size,
        volume.node_selector,
        volume.disk_selector,
        scheduled,
    )
    result = Placer(
        stage, request, Occupancy.of(cluster, replicas.occupying, replicas.holding_disks)
    ).run()
    for placement in result.placed:
        scheduled.add(placement.node, placement.disk, volume.size)
    return result


def schedule_volumes(
    volumes: Iterable[Volume],
    cluster: ReplicaCluster,
    settings: ReplicaSchedulingSettings,
    now: float,
    scheduled: ScheduledSpace,
) -> list[VolumePlacement]:
    """Every volume of a snapshot, in name order, each seeing the placements before it;
    only the volumes this pass tried to place are returned."""
    results = []
    for volume in sorted(volumes, key=lambda v: v.name):
        result = schedule_volume(volume, cluster, settings, now, scheduled)
        if result is not None:
            results.append(result)
    return results


def place_for_new_volume(
    size: int,
    number_of_replicas: int,
    data_locality: str,
    node_selector: tuple[str, ...],
    disk_selector: tuple[str, ...],
    attached_node: str,
    cluster: ReplicaCluster,
    settings: ReplicaSchedulingSettings,
    scheduled: ScheduledSpace,
    volume_name: str = "",
) -> VolumePlacement:
    """All replicas of a volume not yet created, as if attached to ``attached_node``.

    Does not modify ``scheduled`` (the caller commits on success).  Calls that differ
    only in ``attached_node`` share their disk stage and first-tier choices, so asking
    for hundreds of candidate nodes costs little more than asking once.  Raises
    ``ValueError`` for an unknown ``data_locality``, fewer than one replica, or
    ``strict-local`` with other than one replica (callers validate StorageClass
    parameters first).
    """
    if data_locality not in DATA_LOCALITIES:
        raise ValueError(f"dataLocality {data_locality!r} is not one of {DATA_LOCALITIES}")
    if number_of_replicas < 1:
        raise ValueError(f"numberOfReplicas must be at least 1, not {number_of_replicas}")
    strict = data_locality == DATA_LOCALITY_STRICT_LOCAL
    if strict and number_of_replicas != 1:
        raise ValueError(f"strict-local needs numberOfReplicas 1, not {number_of_replicas}")
    local = "" if data_locality == DATA_LOCALITY_DISABLED else attached_node
    request = PlacementRequest(
        volume=volume_name,
        size=size,
        attempts=number_of_replicas,
        local_node=local,
        strict=strict,
        node_soft=settings.replica_node_level_soft_anti_affinity,
        zone_soft=settings.replica_zone_level_soft_anti_affinity,
        disk_soft=settings.replica_disk_level_soft_anti_affinity,
        strategy=settings.disk_selection,
    )
    stage = disk_stage(cluster, settings, size, 0, node_selector, disk_selector, scheduled)
    return Placer(stage, request, Occupancy()).run()
