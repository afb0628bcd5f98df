"""What users see in ``kubectl describe pod`` and ``kubectl events``: Scheduled /
FailedScheduling / Preempted events and the PodScheduled condition, worded as
kube-scheduler words them.

Events are events.k8s.io/v1 Events, as kube-scheduler 1.36 records them: a repeat of an
event turns it into an EventSeries whose count grows (``event_series``), so a pod that
fails again and again for the same reason has one Event, not one per attempt.

Reporting never fails a cycle: an event or condition that cannot be written is logged
and dropped (the pod may have vanished meanwhile — a normal race).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from datetime import UTC, datetime

from volsched.cache.errors import ApiError, NotFound
from volsched.cache.objects.core import Pod
from volsched.daemon.binding.event_series import EventSeriesBook, Write, event_name, micro_time
from volsched.daemon.kube.client import KubeClient
from volsched.scheduling.framework.pre_enqueue import Hold
from volsched.scheduling.plugins.scheduling_gates import MESSAGE as GATED_MESSAGE
from volsched.scheduling.plugins.scheduling_gates import REASON as GATED_REASON

log = logging.getLogger("volsched.events")
MAX_MESSAGE_BYTES = 1024
# The heartbeat loop wakes at least this often, so a clock that jumps is noticed.
HEARTBEAT_POLL_SECONDS = 60.0


def truncate_message(message: str) -> str:
    """Upstream keeps event messages to 1024 bytes, marking the cut with an ellipsis."""
    data = message.encode("utf-8")
    if len(data) <= MAX_MESSAGE_BYTES:
        return message
    return data[: MAX_MESSAGE_BYTES - 3].decode("utf-8", "ignore") + "..."


def _timestamp(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Reporter:
    def __init__(
        self,
        client: KubeClient,
        scheduler_name: str,
        instance: str,
        clock: Callable[[], float],
        book: EventSeriesBook | None = None,
    ) -> None:
        self.client = client
        self.scheduler_name = scheduler_name
        self.instance = instance
        self.clock = clock
        self.book = book or EventSeriesBook(clock)

    def event_body(
        self, pod: Pod, event_type: str, reason: str, action: str, message: str
    ) -> dict[str, object]:
        # Each profile reports under its own name, as kube-scheduler's do; the instance
        # is the controller's name and the host's, as client-go's recorder makes it.
        controller = pod.scheduler_name or self.scheduler_name
        return {
            "apiVersion": "events.k8s.io/v1",
            "kind": "Event",
            "metadata": {
                # Explicit names: events.k8s.io rejects a generateName ending in a dot.
                "name": event_name(pod.name),
                "namespace": pod.namespace,
            },
            "eventTime": micro_time(self.clock()),
            "reportingController": controller,
            "reportingInstance": f"{controller}-{self.instance}",
            "action": action,
            "reason": reason,
            "regarding": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": pod.name,
                "namespace": pod.namespace,
                "uid": pod.meta.uid,
            },
            "note": truncate_message(message),
            "type": event_type,
        }

    async def _event(
        self, pod: Pod, event_type: str, reason: str, action: str, message: str
    ) -> None:
        write = self.book.record(self.event_body(pod, event_type, reason, action, message))
        if write is not None:
            await self._send(write)

    async def heartbeat(self) -> None:
        """Write the series counts that are due (see ``event_series``)."""
        for write in self.book.heartbeat():
            await self._send(write)

    async def keep_series(self) -> None:
        """The heartbeat, forever: sleeps until the next one is due."""
        while True:
            wait = self.book.next_heartbeat() - self.clock()
            await asyncio.sleep(min(HEARTBEAT_POLL_SECONDS, max(0.0, wait)))
            await self.heartbeat()

    async def _send(self, write: Write) -> None:
        event = write.event
        try:
            await self._write(write, str(event["metadata"]["namespace"]))
        except ApiError as exc:
            log.info(
                "could not record %s event for %s/%s: %s",
                event.get("reason"),
                event["metadata"]["namespace"],
                event["regarding"]["name"],
                exc,
            )

    async def _write(self, write: Write, namespace: str) -> None:
        event = write.event
        if write.patch is not None:
            try:
                await self.client.patch(
                    "Event",
                    event["metadata"]["name"],
                    write.patch,
                    namespace=namespace,
                    strategic=True,
                )
                return
            except NotFound:
                pass  # gone (the API server's event TTL) or never written: create it whole
        await self.client.create("Event", event, namespace=namespace, reply=False)

    async def preempted(self, victim: Pod, message: str) -> None:
        await self._event(victim, "Normal", "Preempted", "Preempting", message)

    async def scheduled(self, pod: Pod, node: str) -> None:
        """Not for a pod bound through the extender's ``/bind``: kube-scheduler records it."""
        message = f"Successfully assigned {pod.meta.key} to {node}"
        await self._event(pod, "Normal", "Scheduled", "Binding", message)

    async def failed(self, pod: Pod, message: str, reason: str) -> None:
        """``reason`` is ``Unschedulable`` (nothing fits) or ``SchedulerError``."""
        await self._event(pod, "Warning", "FailedScheduling", "Scheduling", message)
        await self._condition(pod, reason, message)

    async def gated(self, pod: Pod) -> None:
        """A gated pod: the condition only, no event (it was never attempted)."""
        await self._condition(pod, GATED_REASON, GATED_MESSAGE)

    def held(self, pod: Pod, hold: Hold) -> None:
        """A pod another PreEnqueue check holds: nothing is written, as upstream writes
        nothing for it (the recording reporter remembers it for the decisions page)."""

    async def _condition(self, pod: Pod, reason: str, message: str) -> None:
        text = truncate_message(message)
        if (pod.scheduled_reason, pod.scheduled_message) == (reason, text):
            # Unchanged: kube-scheduler sends no patch then (UpdatePodCondition).
            return
        condition = {
            "type": "PodScheduled",
            "status": "False",
            "reason": reason,
            "message": text,
            "lastProbeTime": None,
            "lastTransitionTime": _timestamp(self.clock()),
        }
        try:
            await self.client.patch(
                "Pod",
                pod.name,
                {"status": {"conditions": [condition]}},
                namespace=pod.namespace,
                subresource="status",
                strategic=True,
            )
        except ApiError as exc:
            log.info("could not set PodScheduled on %s: %s", pod.meta.key, exc)
