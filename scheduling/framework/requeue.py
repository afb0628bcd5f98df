"""Which cluster events move which rejected pods: the table the scheduling queue asks.

Built from the profiles — each plugin declares its own events (``events_to_register``),
so the table cannot drift from the plugins — and read the way kube-scheduler's queue
reads its queueing-hint map (``isPodWorthRequeuing``): a pod parked as unschedulable is
moved by an event when one of the plugins that rejected it registered that event and
the registration's hint, if any, says the change may help. Where the table cannot tell,
it says move:

- a pod that no plugin rejected (no node at all, say) moves on any event some plugin
  registered;
- a rejecting plugin the table does not know, or a hint that fails, counts as "move".

An event no plugin of any profile registered moves nothing.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.events import ClusterEvent, ClusterEventWithHint

# plugin name → what it registered, for one profile.
PluginEvents = Mapping[str, tuple[ClusterEventWithHint, ...]]


def _hint_says_queue(registered: ClusterEventWithHint, pod: Pod, old: Any, new: Any) -> bool:
    if registered.hint is None:
        return True
    try:
        return bool(registered.hint(pod, old, new))
    except Exception:
        # Upstream's rule: a hint that errs means Queue, so no pod is stranded.
        return True


class RequeueTable:
    def __init__(self, by_profile: Mapping[str, PluginEvents], default: str = "") -> None:
        self.by_profile = {name: dict(events) for name, events in by_profile.items()}
        self.default = default if default in self.by_profile else next(iter(self.by_profile), "")
        self._registered = [
            registered.event
            for events in self.by_profile.values()
            for declared in events.values()
            for registered in declared
        ]
        self._interest: dict[ClusterEvent, bool] = {}

    def plugin_events(self, scheduler_name: str) -> PluginEvents:
        """The table of the pod's profile (the default one for a profile not served)."""
        return self.by_profile.get(scheduler_name) or self.by_profile.get(self.default, {})

    def interested(self, event: ClusterEvent) -> bool:
        """Whether some plugin of some profile registered the event (asked for every
        informer event: answered once per kind of event)."""
        known = self._interest.get(event)
        if known is None:
            known = self._interest[event] = any(
                registered.matches(event) for registered in self._registered
            )
        return known

    def worth_requeueing(
        self,
        pod: Pod,
        failed_plugins: Collection[str],
        event: ClusterEvent,
        old: Any = None,
        new: Any = None,
    ) -> bool:
        """Whether ``event`` may make ``pod``, rejected by ``failed_plugins``, schedulable."""
        if not failed_plugins:
            return self.interested(event)
        table = self.plugin_events(pod.scheduler_name)
        for plugin in failed_plugins:
            declared = table.get(plugin)
            if declared is None:
                return True
            for registered in declared:
                if registered.event.matches(event) and _hint_says_queue(registered, pod, old, new):
                    return True
        return False


def merge(events: Iterable[tuple[str, tuple[ClusterEventWithHint, ...]]]) -> PluginEvents:
    """Plugin name → events, joining the declarations of plugins that share a name
    (two ``labelsPresence`` rules are two NodeLabel instances)."""
    table: dict[str, tuple[ClusterEventWithHint, ...]] = {}
    for name, declared in events:
        known = table.get(name, ())
        table[name] = known + tuple(e for e in declared if e not in known)
    return table
