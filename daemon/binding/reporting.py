"""What users see in ``kubectl describe pod``: Scheduled / FailedScheduling events and the
PodScheduled condition, worded as kube-scheduler words them.

Events are core/v1 Events, counted, combined and rate-limited before they are written
(``event_correlation``), as kube-scheduler's recorder does: a pod that fails again and
again for the same reason has one event whose ``count`` grows, not one event per attempt.

Reporting never fails a cycle: an event or condition that cannot be written is logged
and dropped (the pod may have vanished meanwhile — a normal race).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from datetime import UTC, datetime

from volsched.cache.errors import ApiError, NotFound
from volsched.cache.objects.core import Pod
from volsched.daemon.binding.event_correlation import Correlated, EventCorrelator, event_name
from volsched.daemon.kube.client import KubeClient
from volsched.scheduling.plugins.scheduling_gates import MESSAGE as GATED_MESSAGE
from volsched.scheduling.plugins.scheduling_gates import REASON as GATED_REASON

log = logging.getLogger("volsched.events")
MAX_MESSAGE_BYTES = 1024


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
        correlator: EventCorrelator | None = None,
    ) -> None:
        self.client = client
        self.scheduler_name = scheduler_name
        self.instance = instance
        self.clock = clock
        self.correlator = correlator or EventCorrelator(clock)

    def event_body(
        self, pod: Pod, event_type: str, reason: str, action: str, message: str
    ) -> dict[str, object]:
        moment = datetime.fromtimestamp(self.clock(), UTC)
        # One formatting for the three stamps: second precision, and eventTime's micro.
        second = moment.strftime("%Y-%m-%dT%H:%M:%S")
        return {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {
                # Explicit names: events.k8s.io rejects a generateName ending in a dot.
                "name": event_name(pod.name),
                "namespace": pod.namespace,
            },
            "involvedObject": {
                "apiVersion": "v1",
                "kind": "Pod",
                "name": pod.name,
                "namespace": pod.namespace,
                "uid": pod.meta.uid,
            },
            "reason": reason,
            "message": truncate_message(message),
            "type": event_type,
            "action": action,
            # Each profile reports under its own name, as kube-scheduler's do.
            "source": {"component": pod.scheduler_name or self.scheduler_name},
            "reportingComponent": pod.scheduler_name or self.scheduler_name,
            "reportingInstance": self.instance,
            "firstTimestamp": f"{second}Z",
            "lastTimestamp": f"{second}Z",
            "eventTime": f"{second}.{moment.microsecond:06d}Z",
            "count": 1,
        }

    async def _event(
        self, pod: Pod, event_type: str, reason: str, action: str, message: str
    ) -> None:
        body = self.event_body(pod, event_type, reason, action, message)
        correlated = self.correlator.correlate(body)
        if correlated is None:
            log.debug("%s event for %s not written: too many events about it", reason, pod.meta.key)
            return
        try:
            await self._write(correlated, pod.namespace)
        except ApiError as exc:
            log.info("could not record %s event for %s: %s", reason, pod.meta.key, exc)

    async def _write(self, correlated: Correlated, namespace: str) -> None:
        event = correlated.event
        if correlated.patch is not None:
            try:
                await self.client.patch(
                    "Event",
                    event["metadata"]["name"],
                    correlated.patch,
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
