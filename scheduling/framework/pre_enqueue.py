"""PreEnqueue: what a pod must pass before it is attempted at all.

After kube-scheduler's PreEnqueue plugins: a pod one of them holds waits outside the
active queue — no filter runs for it and nothing is written about it — until the pod
changes, or a cluster event the holding plugin registered for lets it through.
SchedulingGates holds a pod that has scheduling gates (the API server writes its
``SchedulingGated`` condition); DynamicResources holds one whose ResourceClaims are not
all there yet.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.interfaces import PreEnqueuePlugin
from volsched.scheduling.plugins.scheduling_gates import MESSAGE as GATED_MESSAGE
from volsched.scheduling.plugins.scheduling_gates import is_gated

SCHEDULING_GATES = "SchedulingGates"


@dataclass(frozen=True, slots=True)
class Hold:
    """Which PreEnqueue check keeps a pod out, and why."""

    plugin: str
    message: str

    @property
    def gated(self) -> bool:
        """Held for its scheduling gates (the one hold with a condition of its own)."""
        return self.plugin == SCHEDULING_GATES


def hold_of(pod: Pod, pre_enqueuers: Iterable[PreEnqueuePlugin] = ()) -> Hold | None:
    """The first check, in upstream's order (gates first), that holds ``pod``."""
    if is_gated(pod):
        return Hold(SCHEDULING_GATES, GATED_MESSAGE)
    for plugin in pre_enqueuers:
        message = plugin.pre_enqueue(pod)
        if message is not None:
            return Hold(plugin.name, message)
    return None
