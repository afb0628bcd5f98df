"""The replica scheduler: where each replica of a replicated volume lives.

Longhorn / SUSE Storage semantics, pure: the caller builds a ``ReplicaCluster`` from the
snapshot, keeps one ``ScheduledSpace`` for the pass, and calls ``schedule_volumes`` (or
``schedule_volume`` for each volume in name order), and ``place_for_new_volume`` to test
a claim against a pod's candidate node.  Time comes in as ``now``; nothing here reads a clock or does I/O.
"""

from volsched.scheduling.replicas.cluster import ReplicaCluster, ScheduledSpace
from volsched.scheduling.replicas.results import DiskPlacement, VolumePlacement
from volsched.scheduling.replicas.scheduler import (
    place_for_new_volume,
    replicas_to_fill,
    schedule_volume,
    schedule_volumes,
)
from volsched.scheduling.replicas.settings import ReplicaSchedulingSettings, settings_from_mapping

__all__ = [
    "DiskPlacement",
    "ReplicaCluster",
    "ReplicaSchedulingSettings",
    "ScheduledSpace",
    "VolumePlacement",
    "place_for_new_volume",
    "replicas_to_fill",
    "schedule_volume",
    "schedule_volumes",
    "settings_from_mapping",
]
