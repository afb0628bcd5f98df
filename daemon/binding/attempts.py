"""What the daemon last told each pod that did not get a node.

The decisions page lists pending pods with the message of their last failed attempt —
the text of the FailedScheduling event and of the PodScheduled condition ("0/9 nodes are
available: …"). ``RecordingReporter`` keeps that text as it reports it, so the page reads
it from memory instead of re-deciding every pending pod or asking the API server.

The record is bounded: at most ``limit`` pods, the least recently reported dropped first.
A pod that is bound or deleted is never asked about again and ages out the same way.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from volsched.cache.objects.core import Pod
from volsched.daemon.binding.event_series import EventSeriesBook
from volsched.daemon.binding.reporting import Reporter, truncate_message
from volsched.daemon.kube.client import KubeClient
from volsched.scheduling.framework.pre_enqueue import Hold
from volsched.scheduling.plugins.scheduling_gates import MESSAGE as GATED_MESSAGE
from volsched.scheduling.plugins.scheduling_gates import REASON as GATED_REASON

DEFAULT_LIMIT = 10_000
# The reason shown for a pod a PreEnqueue check other than scheduling gates holds (no
# condition names it: upstream writes nothing for such a pod).
HELD_REASON = "PreEnqueue"


@dataclass(frozen=True, slots=True)
class Attempt:
    """One report: the condition's reason (``Unschedulable``, ``SchedulerError``,
    ``SchedulingGated``, or ``PreEnqueue`` for a hold nothing was written about), its
    message, and when (the reporter's clock, epoch seconds)."""

    reason: str
    message: str
    at: float


class LastAttempts:
    """The last reported attempt per pod key, least recently reported first."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        self.limit = limit
        self._by_pod: OrderedDict[str, Attempt] = OrderedDict()

    def record(self, pod_key: str, attempt: Attempt) -> None:
        self._by_pod[pod_key] = attempt
        self._by_pod.move_to_end(pod_key)
        while len(self._by_pod) > self.limit:
            self._by_pod.popitem(last=False)

    def get(self, pod_key: str) -> Attempt | None:
        return self._by_pod.get(pod_key)

    def __len__(self) -> int:
        return len(self._by_pod)


class RecordingReporter(Reporter):
    """The reporter, remembering each failure it reports in ``attempts`` before it
    writes the event and the condition (a write that fails is still what was decided)."""

    def __init__(
        self,
        attempts: LastAttempts,
        client: KubeClient,
        scheduler_name: str,
        instance: str,
        clock: Callable[[], float],
        book: EventSeriesBook | None = None,
    ) -> None:
        super().__init__(client, scheduler_name, instance, clock, book)
        self.attempts = attempts

    async def failed(self, pod: Pod, message: str, reason: str) -> None:
        self.attempts.record(pod.meta.key, Attempt(reason, truncate_message(message), self.clock()))
        await super().failed(pod, message, reason)

    async def gated(self, pod: Pod) -> None:
        self.attempts.record(pod.meta.key, Attempt(GATED_REASON, GATED_MESSAGE, self.clock()))
        await super().gated(pod)

    def held(self, pod: Pod, hold: Hold) -> None:
        """Shown on the decisions page as its hold's reason: never written anywhere."""
        self.attempts.record(pod.meta.key, Attempt(HELD_REASON, hold.message, self.clock()))
