"""Several profiles in one scheduler: each pod is decided by the profile serving its
``spec.schedulerName``, over one shared cluster cache (so each profile's decisions are
assumed before the next pod, whichever profile it belongs to)."""

from __future__ import annotations

from collections.abc import Mapping

from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.pre_enqueue import Hold
from volsched.scheduling.framework.requeue import RequeueTable
from volsched.scheduling.framework.runner import Decision, Scheduler
from volsched.scheduling.preemption.nominated import NominatedPods


class Profiles:
    def __init__(self, by_name: Mapping[str, Scheduler]) -> None:
        if not by_name:
            raise ValueError("at least one profile is needed")
        self.by_name = dict(by_name)
        self.default = next(iter(self.by_name.values()))

    @property
    def names(self) -> frozenset[str]:
        return frozenset(self.by_name)

    @property
    def nominated(self) -> NominatedPods | None:
        """The nominator the profiles share (kube-scheduler keeps one queue)."""
        return self.default.nominated

    def share_nominated(self, nominated: NominatedPods) -> None:
        for scheduler in self.by_name.values():
            scheduler.nominated = nominated

    def requeue_table(self) -> RequeueTable:
        """Each profile's plugins' events, for the scheduling queue (one queue serves
        every profile; a pod is judged by its own profile's plugins)."""
        return RequeueTable(
            {name: scheduler.profile.requeue_events() for name, scheduler in self.by_name.items()},
            default=next(iter(self.by_name)),
        )

    def for_pod(self, pod: Pod) -> Scheduler:
        """The pod's profile; the first one for a pod naming none of them (the
        extender's pods, and snapshots)."""
        return self.by_name.get(pod.scheduler_name, self.default)

    def hold(self, pod: Pod) -> Hold | None:
        """What keeps the pod from being attempted by its profile (see ``pre_enqueue``)."""
        return self.for_pod(pod).profile.hold(pod)

    def schedule(self, pod: Pod, every_reason: bool = True) -> Decision:
        return self.for_pod(pod).schedule(pod, every_reason=every_reason)

    def unreserve(self, decision: Decision) -> None:
        self.for_pod(decision.pod).unreserve(decision)

    def post_bind(self, decision: Decision) -> None:
        self.for_pod(decision.pod).post_bind(decision)
