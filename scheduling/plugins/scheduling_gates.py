"""SchedulingGates (PreEnqueue): a pod with scheduling gates is never attempted.

Upstream's plugin keeps such a pod out of the active queue until an update removes its
last gate; no filter runs, nothing is reserved, no volume is touched (a real API server
refuses to bind a gated pod anyway). The API server itself marks the pod with a
``PodScheduled=False`` condition of reason ``SchedulingGated``.
"""

from __future__ import annotations

from volsched.cache.objects.core import Pod

REASON = "SchedulingGated"
MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


def is_gated(pod: Pod) -> bool:
    return bool(pod.scheduling_gates)
