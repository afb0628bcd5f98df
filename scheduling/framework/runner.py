"""The scheduling cycle for one pod: kube-scheduler's schedulePod and the steps of
scheduleOne around it.

Serial and pure: it reads the cluster cache and, on success, leaves the decision in the
cache's assume layer. The phases, each in its own module:

- PreFilter, Filter: ``find_feasible`` (findNodesThatFitPod) — the PreFilters here,
  the walk over the nodes in ``node_walk``;
- Score and the choice: ``select`` (prioritizeNodes, selectHost) — the plugins in
  ``scoring``;
- Reserve, Unreserve, PostBind: ``commit``, ``unreserve``, ``post_bind``.

Each extension point's plugins run in ``extension_points.Framework``; what earlier cycles
worked out is asked of ``kept_results.KeptResults``.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Mapping

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.decision import REASON_UNREADABLE, Decision, fit_error_message
from volsched.scheduling.framework.extension_points import Framework, crashed
from volsched.scheduling.framework.kept_results import KeptResults
from volsched.scheduling.framework.node_walk import Walk, find_nodes_that_pass_filters
from volsched.scheduling.framework.profile import Profile
from volsched.scheduling.framework.scoring import best
from volsched.scheduling.framework.status import Code, Status
from volsched.scheduling.preemption.nominated import NominatedPods

__all__ = [
    "REASON_UNREADABLE",
    "Decision",
    "Scheduler",
    "fit_error_message",
    "num_feasible_nodes_to_find",
]

MIN_FEASIBLE_NODES_TO_FIND = 100
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


def num_feasible_nodes_to_find(percentage: int, all_nodes: int) -> int:
    if all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return all_nodes
    if percentage <= 0:
        percentage = max(50 - all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    wanted = all_nodes * min(percentage, 100) // 100
    return max(wanted, MIN_FEASIBLE_NODES_TO_FIND)


class Scheduler:
    """Runs cycles of one profile over one cluster cache."""

    def __init__(
        self,
        cluster: ClusterCache,
        profile: Profile,
        rng: random.Random,
        clock_ns: Callable[[], int] = time.time_ns,
    ) -> None:
        self.cluster = cluster
        self.rng = rng
        self.clock_ns = clock_ns
        self.framework = Framework(profile, cluster)
        self.kept = KeptResults(cluster)
        self.next_start_node_index = 0

    @property
    def profile(self) -> Profile:
        return self.framework.profile

    @property
    def nominated(self) -> NominatedPods | None:
        """Pods nominated to nodes by preemption (``Framework.nominated``)."""
        return self.framework.nominated

    @nominated.setter
    def nominated(self, nominated: NominatedPods | None) -> None:
        self.framework.nominated = nominated

    def schedule(
        self, pod: Pod, nominated_node: str | None = None, every_reason: bool = True
    ) -> Decision:
        """Decide one pod — its nominated node first — and, when a node is chosen,
        reserve it (assume). ``every_reason`` as in ``find_feasible``."""
        return self.commit(self.find_node_nominated_first(pod, nominated_node, every_reason))

    def nominated_node_of(self, pod: Pod) -> str:
        """The node a preemption cleared for the pod: the nominator's word, else the
        pod's ``status.nominatedNodeName`` (written before a restart, or by another
        leader)."""
        held = self.nominated.node_of(pod.meta.key) if self.nominated is not None else ""
        return held or pod.nominated_node_name

    def find_node_nominated_first(
        self, pod: Pod, nominated_node: str | None = None, every_reason: bool = True
    ) -> Decision:
        """Upstream's evaluateNominatedNode: a pod with a nominated node is tried there
        alone first, and goes there if it fits; otherwise every node is judged as for
        any pod. ``nominated_node`` overrides the pod's own (a preemption just done)."""
        node = self.nominated_node_of(pod) if nominated_node is None else nominated_node
        if node and node in self.cluster.nodes:
            decision = self.find_node(pod, only={node})
            if decision.node is not None:
                return decision
        return self.find_node(pod, every_reason=every_reason)

    def find_node(
        self, pod: Pod, only: set[str] | None = None, every_reason: bool = True
    ) -> Decision:
        """Filter and score; ``only`` restricts the candidates to those nodes and
        evaluates every one of them (the extender's question: "which of these?")."""
        decision = self.find_feasible(pod, only, every_reason)
        if decision.feasible:
            self.select(decision)
        return decision

    def find_feasible(
        self, pod: Pod, only: set[str] | None = None, every_reason: bool = True
    ) -> Decision:
        """PreFilter and Filter (upstream's findNodesThatFitPod): the decision's
        ``feasible`` nodes, or why there are none. ``select`` scores and chooses among
        them; between the two the daemon may ask HTTP extenders to filter further and
        to add their scores.

        Without ``every_reason`` (the daemon's own cycle, which forgets the rejected
        nodes' reasons once the pod is placed), a node a filter's screen rules out is
        not asked why, unless no node fits: the same nodes are found either way."""
        decision = Decision(pod)
        all_nodes = self.cluster.node_list()
        if only is not None:
            all_nodes = [info for info in all_nodes if info.name in only]
        total = decision.total_nodes = len(all_nodes)

        started = self.clock_ns()
        try:
            allowed, rejection = self.framework.run_pre_filter_plugins(decision.state, pod)
        except Exception as exc:
            allowed, rejection = None, crashed("PreFilter", exc)
        decision.phases.append(("PreFilter", started, self.clock_ns()))
        if rejection is not None:
            self._pre_filter_rejected(decision, rejection)
            return decision

        nodes = all_nodes
        if allowed is not None:
            names, plugins = allowed
            nodes = [info for info in all_nodes if info.name in names]
            self._narrowed_out(
                decision, [info.name for info in all_nodes if info.name not in names], plugins
            )

        started = self.clock_ns()
        every = only is not None
        walk = self._walk(nodes, every)
        screen = None if every or every_reason else self.framework.screen(decision.state, pod)
        already = len(decision.evaluated_nodes)
        processed, screened = find_nodes_that_pass_filters(
            self.framework, self.kept, decision, walk, screen
        )
        if screened and not decision.feasible and decision.error is None:
            # Unschedulable: every node's reason makes the message and guides preemption
            # and requeueing, so the nodes ruled out unasked are asked after all.
            del decision.evaluated_nodes[already:]
            processed, _ = find_nodes_that_pass_filters(self.framework, self.kept, decision, walk)
        if processed and not every:
            self._advance_start(processed)
        decision.phases.append(("Filter", started, self.clock_ns()))
        if decision.error is None and not decision.feasible:
            decision.message = fit_error_message(total, "", decision.filtered)
        return decision

    def select(self, decision: Decision, extra_scores: Mapping[str, int] | None = None) -> None:
        """Score the feasible nodes (prioritizeNodes), add ``extra_scores`` (the
        extenders', already weighted) to their totals and choose the best, ties at
        random (selectHost)."""
        started = self.clock_ns()
        aligned = self.kept.score_columns(decision.feasible_window, decision.feasible)
        try:
            scored = self.framework.run_score_plugins(
                decision.state, decision.pod, decision.feasible, aligned
            )
        except Exception as exc:
            decision.fail(crashed("Score", exc).message)
            return
        decision.scored = scored
        if extra_scores:
            for name, extra in extra_scores.items():
                if name in decision.scores:
                    decision.scores[name] += extra
            totals = decision.scores
            decision.node = best(list(totals), list(totals.values()), self.rng)
        else:
            decision.node = scored.best(self.rng)
        decision.phases.append(("Score", started, self.clock_ns()))

    def commit(self, decision: Decision) -> Decision:
        """Reserve the node a ``find_node`` chose and assume the pod there; a failed
        Reserve leaves the decision without a node, with the error."""
        pod = decision.pod
        if decision.node is not None:
            started = self.clock_ns()
            status = self.reserve(decision.state, pod, decision.node)
            decision.phases.append(("Reserve", started, self.clock_ns()))
            if not status.is_success:
                decision.fail(status.message)
                decision.node = None
                return decision
            try:
                self.cluster.assume_pod(pod, decision.node)
            except Exception as exc:
                # A pod view the cache cannot count on a node: give everything back.
                self.unreserve(decision)
                decision.fail(crashed("Reserve", exc).message)
                decision.node = None
        return decision

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        return self.framework.run_reserve_plugins_reserve(state, pod, node_name)

    def post_bind(self, decision: Decision) -> None:
        """The decision's pod is bound: plugins drop what they kept to undo it."""
        if decision.node is not None:
            self.framework.run_post_bind_plugins(decision.state, decision.pod, decision.node)

    def unreserve(self, decision: Decision) -> None:
        """Roll a reserved decision back (its binding failed)."""
        if decision.node is None:
            return
        self.framework.run_reserve_plugins_unreserve(decision.state, decision.pod, decision.node)
        self.cluster.forget_pod(decision.pod.meta.key)

    def _pre_filter_rejected(self, decision: Decision, status: Status) -> None:
        """A PreFilter ended the cycle before any node was looked at."""
        if status.code is Code.ERROR:
            decision.fail(status.message)
            return
        decision.message = fit_error_message(decision.total_nodes, status.message, {})
        decision.unresolvable = status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        decision.failed_plugins.add(status.plugin)
        decision.pre_filter_rejection = (self.profile.predicate_name(status.plugin), status.message)

    def _narrowed_out(self, decision: Decision, excluded: list[str], plugins: list[str]) -> None:
        """The nodes a PreFilter's narrowing left out: one reason, computed once."""
        absent = f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]"
        decision.failed_plugins.update(plugins)
        plugin = sorted(plugins)[0]
        policy_name = self.profile.predicate_name(plugin)
        decision.filtered.update(zip(excluded, ([absent] for _ in excluded), strict=True))
        decision.rejected_by.update(dict.fromkeys(excluded, policy_name))
        decision.rejected_plugin.update(dict.fromkeys(excluded, plugin))
        decision.unresolvable_nodes.update(excluded)

    def _walk(self, nodes: list[NodeInfo], every: bool) -> Walk:
        """Every node from the first (the extender's "which of these?"), or from where
        the last walk stopped until enough fit (upstream's adaptive share)."""
        count = len(nodes)
        if every or not count:
            return Walk(nodes, start=0, wanted=count)
        wanted = num_feasible_nodes_to_find(self.profile.percentage_of_nodes_to_score, count)
        return Walk(nodes, start=self.next_start_node_index % count, wanted=wanted)

    def _advance_start(self, processed: int) -> None:
        """Upstream's nextStartNodeIndex: moved on by the nodes this walk looked at,
        modulo the whole cluster — also after a PreFilter narrowed the walk to a few
        nodes, so such a pod does not send the next walk back to the first node."""
        total = len(self.cluster.node_list())
        if total:
            self.next_start_node_index = (self.next_start_node_index + processed) % total
