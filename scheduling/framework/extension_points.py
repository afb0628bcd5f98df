"""Each extension point's plugins run in the profile's order: kube-scheduler's
frameworkImpl (RunPreFilterPlugins, RunFilterPluginsWithNominatedPods, RunScorePlugins,
RunReservePluginsReserve, …), without the cycle around it (``runner``).

Every method returns what upstream's returns — a status, a rejection or the scores —
and none of them walks the nodes: choosing which nodes to ask is the runner's part.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.interfaces import ReservePlugin
from volsched.scheduling.framework.node_verdicts import (
    Check,
    Rejection,
    active_checks,
    first_rejection,
)
from volsched.scheduling.framework.profile import Profile
from volsched.scheduling.framework.scoring import Aligned, Scored, score
from volsched.scheduling.framework.status import Code, Status
from volsched.scheduling.preemption.nominated import NominatedPods, judge_with_nominated

# A PreFilter's narrowing: the node names every narrowing PreFilter allows, and those
# PreFilters' names (the reason given to the nodes left out).
Allowed = tuple[set[str], list[str]]
# The names of the nodes some filter can accept; it certainly rejects every other node
# (see ``Framework.screen``).
Screen = Collection[str]


class Framework:
    """The plugins of one profile, and the pods nominated to nodes by preemption (the
    daemon sets ``nominated``; ``volsched simulate`` completes each preemption at once
    and needs none)."""

    def __init__(self, profile: Profile, cluster: ClusterCache) -> None:
        self.profile = profile
        self.cluster = cluster
        self.nominated: NominatedPods | None = None

    def run_pre_filter_plugins(
        self, state: CycleState, pod: Pod
    ) -> tuple[Allowed | None, Status | None]:
        """The nodes the PreFilters narrowed the cycle to (None: every node), or the
        status that ends the cycle: the first unresolvable one or error at once, an
        unschedulable one after every PreFilter ran, as upstream orders them."""
        names: set[str] | None = None
        narrowing: list[str] = []
        pending_rejection: Status | None = None
        for plugin in self.profile.pre_filters:
            result, status = plugin.pre_filter(state, pod)
            if status.code is Code.SKIP:
                state.skip_filter.add(plugin.name)
                continue
            if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
                return None, status.with_plugin(plugin.name)
            if status.code is Code.UNSCHEDULABLE:
                pending_rejection = status.with_plugin(plugin.name)
                continue
            if status.code is Code.ERROR:
                text = f'running PreFilter plugin "{plugin.name}": {status.message}'
                return None, Status(Code.ERROR, (text,), plugin.name)
            if result is not None:
                narrowing.append(plugin.name)
                names = set(result) if names is None else names & set(result)
                if not names:
                    return None, _narrowed_to_nothing(narrowing, plugin.name)
        if pending_rejection is not None:
            return None, pending_rejection
        if names is None:
            return None, None
        return (names, narrowing), None

    def active_checks(self, state: CycleState) -> list[Check]:
        """The filters this cycle runs, in order: those whose PreFilter did not skip."""
        return active_checks(self.profile, state)

    def screen(self, state: CycleState, pod: Pod) -> Screen | None:
        """The nodes some active filter can accept, from the first filter offering them
        (None when none does): a node not among them is certainly rejected, by that
        filter or one before it."""
        skipped = state.skip_filter
        for plugin in self.profile.screeners:
            if plugin.name not in skipped:
                found = plugin.screen(state, pod)
                if found is not None:
                    return found
        return None

    def crowded_nodes(self) -> Mapping[str, object]:
        """The nodes some pod is nominated to: only there do nominated pods count."""
        return self.nominated.nodes if self.nominated is not None else {}

    def run_filter_plugins_with_nominated_pods(
        self, checks: list[Check], state: CycleState, pod: Pod, info: NodeInfo
    ) -> Rejection:
        """The first rejection of ``checks`` on the node, counting the pods nominated
        there that outrank ``pod`` (``filter_with_nominated_pods``)."""
        if info.name not in self.crowded_nodes():
            return first_rejection(checks, state, pod, info)
        return filter_with_nominated_pods(
            checks, self.profile, state, pod, info, self.nominated, self.cluster
        )

    def run_score_plugins(
        self, state: CycleState, pod: Pod, feasible: list[NodeInfo], aligned: Aligned | None
    ) -> Scored:
        """PreScore, Score, NormalizeScore and the weights (``scoring.score``)."""
        return score(self.profile.score_steps, state, pod, feasible, aligned)

    def run_reserve_plugins_reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        """Reserve in order; a failure unreserves every plugin reserved so far (itself
        included, as upstream does) and is the cycle's error."""
        done: list[ReservePlugin] = []
        for plugin in self.profile.reservers:
            try:
                status = plugin.reserve(state, pod, node_name)
            except Exception as exc:
                status = crashed("Reserve", exc)
            if not status.is_success:
                for undo in reversed([*done, plugin]):
                    undo.unreserve(state, pod, node_name)
                return Status(
                    Code.ERROR, (f'running Reserve plugin "{plugin.name}": {status.message}',)
                )
            done.append(plugin)
        return Status(Code.SUCCESS)

    def run_reserve_plugins_unreserve(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for plugin in reversed(self.profile.reservers):
            plugin.unreserve(state, pod, node_name)

    def run_post_bind_plugins(self, state: CycleState, pod: Pod, node_name: str) -> None:
        for plugin in self.profile.post_binders:
            plugin.post_bind(state, pod, node_name)


def filter_with_nominated_pods(
    checks: list[Check],
    profile: Profile,
    state: CycleState,
    pod: Pod,
    info: NodeInfo,
    nominated: NominatedPods | None,
    cluster: ClusterCache,
) -> Rejection:
    """Upstream's RunFilterPluginsWithNominatedPods for the cycle, the preemption dry run
    and the extender's preempt verb alike: ``checks`` with the still-pending pods
    nominated to the node that outrank or equal ``pod``, then without them
    (``judge_with_nominated``)."""
    return judge_with_nominated(
        lambda node_state, node: first_rejection(checks, node_state, pod, node),
        profile,
        state,
        info,
        pod,
        nominated,
        cluster.pod_priority,
        cluster.pending,
    )


def crashed(point: str, exc: Exception) -> Status:
    """An exception out of a plugin (a pod or object it could not read) as the pod's
    error status: the pod is retried with backoff, the loop goes on."""
    return Status(Code.ERROR, (f"running {point} plugins: {type(exc).__name__}: {exc}",))


def _narrowed_to_nothing(narrowing: list[str], last: str) -> Status:
    if len(narrowing) == 1:
        text = f"node(s) didn't satisfy plugin {narrowing[0]}"
    else:
        text = f"node(s) didn't satisfy plugin(s) [{' '.join(narrowing)}] simultaneously"
    return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (text,), last)
