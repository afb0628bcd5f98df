"""Why a replica could not be placed: longhorn-manager's own reason strings.

Operators search for these, so they are upstream's text exactly.  A volume's message is
its distinct reasons, sorted, joined by ``"; "``.
"""

from __future__ import annotations

from collections.abc import Iterable

INSUFFICIENT_STORAGE = "insufficient storage"
DISK_UNAVAILABLE = "disks are unavailable"
TAGS_NOT_FULFILLED = "tags not fulfilled"
NODE_UNAVAILABLE = "nodes are unavailable"
HARD_AFFINITY_NOT_SATISFIED = "hard affinity cannot be satisfied"
# What longhorn-manager reports when the scheduler found no candidate and gave no reason
# (every node filtered out by tags or anti-affinity).
SCHEDULING_FAILED = "replica scheduling failed"
# A Replica object waiting for a node that failed before it was ever healthy: Longhorn
# never schedules it (ScheduleReplica), and nothing is placed for its volume meanwhile.
UNUSED_FAILED_REPLICA = "unused failed replica is not supported"


def normalized(reasons: Iterable[str]) -> tuple[str, ...]:
    """Distinct and sorted; ``SCHEDULING_FAILED`` when there is nothing more specific."""
    distinct = tuple(sorted(set(reasons)))
    return distinct or (SCHEDULING_FAILED,)


def joined(reasons: Iterable[str]) -> str:
    return "; ".join(reasons)
