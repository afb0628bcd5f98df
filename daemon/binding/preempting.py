"""Carrying out a preemption the PostFilter decided: nominate, evict, report.

The order makes a crash harmless. The preemptor's ``status.nominatedNodeName`` is written
first, so a leader that restarts (or takes over) sees where the pod was headed; then each
victim gets kube-scheduler's ``DisruptionTarget`` condition (reason
``PreemptionByScheduler``) and is deleted, with a ``Preempted`` event. A kill anywhere in
between leaves either victims still running — the next cycle preempts again, choosing the
same or another node — or victims gone, and the pod simply fits. Nothing is left half
done that a later cycle would not redo.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from datetime import UTC, datetime

from volsched.cache.errors import ApiError, NotFound
from volsched.cache.objects.core import Pod
from volsched.daemon.binding.reporting import Reporter
from volsched.daemon.kube.client import KubeClient
from volsched.scheduling.preemption.post_filter import PREEMPTED_BY_SCHEDULER, Preemption

log = logging.getLogger("volsched.preempt")

DISRUPTION_TARGET = "DisruptionTarget"


def disruption_message(preemptor: Pod) -> str:
    return f"{preemptor.scheduler_name}: preempting to accommodate a higher priority pod"


def preempted_message(preemptor: Pod, node: str) -> str:
    return f"Preempted by pod {preemptor.meta.uid} on node {node}"


class Preempting:
    def __init__(self, client: KubeClient, reporter: Reporter, clock: Callable[[], float]) -> None:
        self.client = client
        self.reporter = reporter
        self.clock = clock

    async def nominate(self, pod: Pod, node: str) -> bool:
        """Write ``status.nominatedNodeName`` ("" clears it)."""
        try:
            await self.client.patch(
                "Pod",
                pod.name,
                {"status": {"nominatedNodeName": node or None}},
                namespace=pod.namespace,
                subresource="status",
            )
        except NotFound:
            return False
        except ApiError as exc:
            log.info("could not nominate %s to %s: %s", pod.meta.key, node, exc)
            return False
        return True

    async def evict(self, preemptor: Pod, victim: Pod, node: str) -> bool:
        """Mark the victim as disrupted by the scheduler, delete it, record the event."""
        condition = {
            "type": DISRUPTION_TARGET,
            "status": "True",
            "reason": PREEMPTED_BY_SCHEDULER,
            "message": disruption_message(preemptor),
            "lastTransitionTime": datetime.fromtimestamp(self.clock(), UTC).strftime(
                "%Y-%m-%dT%H:%M:%SZ"
            ),
        }
        try:
            await self.client.patch(
                "Pod",
                victim.name,
                {"status": {"conditions": [condition]}},
                namespace=victim.namespace,
                subresource="status",
                strategic=True,
            )
            await self.client.delete("Pod", victim.name, namespace=victim.namespace)
        except NotFound:
            return True  # already gone: what the preemption wanted
        except ApiError as exc:
            log.warning("could not preempt %s: %s", victim.meta.key, exc)
            return False
        await self.reporter.preempted(victim, preempted_message(preemptor, node))
        return True

    async def carry_out(self, preemptor: Pod, preemption: Preemption) -> bool:
        """Nominate, evict every victim, and clear the nominations of lower-priority pods
        on the node (upstream's prepareCandidate); False when any step failed (the pod's
        next cycle decides again from what is left)."""
        node = preemption.node
        if node is None:
            return False
        if not await self.nominate(preemptor, node):
            return False
        evicted = True
        for victim in preemption.victims:
            evicted = await self.evict(preemptor, victim, node) and evicted
        await self.clear_nominations(preemption.lower_nominated)
        return evicted

    async def clear_nominations(self, pods: Iterable[Pod]) -> None:
        """``status.nominatedNodeName`` cleared on each pod (upstream's
        ClearNominatedNodeName)."""
        for pod in pods:
            await self.nominate(pod, "")
