"""The scheduling cycle for one pod: pre-filter, filter, score, select, reserve.

Serial and pure: it reads the cluster cache and, on success, leaves the decision in the
cache's assume layer. What it returns is everything a user may ask about the decision:
the chosen node, or upstream's "0/N nodes are available" message with the per-node
reasons, and the weighted score of every feasible node.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, field
from typing import Any

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import UNKNOWN, NodeInfo
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.interfaces import (
    ReservePlugin,
)
from volsched.scheduling.framework.node_verdicts import (
    Check,
    Rejection,
    active_checks,
    filter_key,
    first_rejection,
    remembered_rejection,
)
from volsched.scheduling.framework.profile import Predicate, Profile
from volsched.scheduling.framework.scoring import Scored, best, score
from volsched.scheduling.framework.shape_columns import ShapeColumns, put_window, window
from volsched.scheduling.framework.status import Code, Status
from volsched.scheduling.preemption.nominated import NominatedPods, judge_with_nominated

MIN_FEASIBLE_NODES_TO_FIND = 100
# A node whose objects no plugin could read (a damaged stored view): passed over, never a
# reason for the whole cycle to fail.
REASON_UNREADABLE = "node(s) could not be evaluated"
MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND = 5


@dataclass(slots=True)
class Decision:
    """The outcome of one cycle.

    ``filtered`` maps each rejected node to its reasons and ``rejected_by`` to the
    predicate (policy name) that rejected it; ``scores`` holds the weighted totals of the
    feasible nodes and ``score_parts`` each priority's normalized score (before weight).
    ``error`` is set for an internal failure (SchedulerError), ``message`` whenever the
    pod was not placed.
    """

    pod: Pod
    node: str | None = None
    message: str | None = None
    error: str | None = None
    filtered: dict[str, list[str]] = field(default_factory=dict)
    rejected_by: dict[str, str] = field(default_factory=dict)
    # What the Score phase worked out, in the order of the feasible nodes: ``scores``
    # and ``priority_scores`` are built from it when first read (the explain and
    # decisions pages, extenders), never by the loop itself.
    scored: Scored | None = None
    _scores: dict[str, int] | None = None
    _priority_scores: dict[str, list[int]] | None = None
    # The nodes the filters were run on, in order (``evaluated`` names them): kept as
    # the nodes, since naming 500 of them costs more than the cycle's lookups.
    evaluated_nodes: list[NodeInfo] = field(default_factory=list)
    state: CycleState = field(default_factory=CycleState)
    unresolvable: bool = False
    failed_plugins: set[str] = field(default_factory=set)
    rejected_plugin: dict[str, str] = field(default_factory=dict)
    # Rejected nodes whose failure no eviction can fix (UnschedulableAndUnresolvable).
    unresolvable_nodes: set[str] = field(default_factory=set)
    # A PreFilter rejected the pod before any node was looked at: (the predicate's
    # policy name, its reason), which every node's row shows.
    pre_filter_rejection: tuple[str, str] | None = None
    # Nodes passed over because a plugin could not read them: node → what went wrong.
    unreadable: dict[str, str] = field(default_factory=dict)
    # The nodes every filter passed (``find_feasible``), and how many were considered.
    feasible: list[NodeInfo] = field(default_factory=list)
    total_nodes: int = 0
    # When ``feasible`` is one window of the cluster's node list (every node walked
    # fits): that list, the feasible list, and where the window starts. The Score
    # phase then reads its kept rows as slices, as long as both lists are the same.
    feasible_window: tuple[list[NodeInfo], list[NodeInfo], int] | None = None

    # (extension point, start ns, end ns): what tracing shows; never read by a decision.
    phases: list[tuple[str, int, int]] = field(default_factory=list)

    def forget_diagnosis(self) -> None:
        """Drop what explains the choice (per-node reasons and scores), keeping what
        the binding needs: the pod, the node and the cycle state to undo it."""
        self.filtered = {}
        self.rejected_by = {}
        self.rejected_plugin = {}
        self.unresolvable_nodes = set()
        self.evaluated_nodes = []
        self.scored = None
        self.feasible_window = None
        self._scores = None
        self._priority_scores = None
        self.feasible = []

    @property
    def scores(self) -> dict[str, int]:
        """The weighted total of each feasible node (with the extenders' scores)."""
        if self._scores is None:
            scored = self.scored
            self._scores = (
                {} if scored is None else dict(zip(scored.names(), scored.totals, strict=True))
            )
        return self._scores

    @scores.setter
    def scores(self, totals: dict[str, int]) -> None:
        self._scores = totals

    @property
    def priority_scores(self) -> dict[str, list[int]]:
        """Each priority's normalized scores, in the order of ``scores``."""
        if self._priority_scores is None:
            scored = self.scored
            self._priority_scores = {} if scored is None else scored.by_priority()
        return self._priority_scores

    @property
    def evaluated(self) -> list[str]:
        return [info.name for info in self.evaluated_nodes]

    @property
    def score_parts(self) -> dict[str, dict[str, int]]:
        """Per feasible node, each priority's normalized score (before its weight)."""
        parts: dict[str, dict[str, int]] = {name: {} for name in self.scores}
        for priority, values in self.priority_scores.items():
            for name, value in zip(self.scores, values, strict=True):
                parts[name][priority] = value
        return parts


def num_feasible_nodes_to_find(percentage: int, all_nodes: int) -> int:
    if all_nodes < MIN_FEASIBLE_NODES_TO_FIND:
        return all_nodes
    if percentage <= 0:
        percentage = max(50 - all_nodes // 125, MIN_FEASIBLE_NODES_PERCENTAGE_TO_FIND)
    wanted = all_nodes * min(percentage, 100) // 100
    return max(wanted, MIN_FEASIBLE_NODES_TO_FIND)


def fit_error_message(
    all_nodes: int, pre_filter_message: str, filtered: dict[str, list[str]]
) -> str:
    """Upstream's FitError text: the pre-filter message, or the sorted reason histogram."""
    message = f"0/{all_nodes} nodes are available:"
    if pre_filter_message:
        return f"{message} {pre_filter_message}."
    counts: dict[str, int] = {}
    for reasons in filtered.values():
        for reason in reasons:
            counts[reason] = counts.get(reason, 0) + 1
    histogram = sorted(f"{count} {reason}" for reason, count in counts.items())
    if histogram:
        message += " " + ", ".join(histogram) + "."
    return message


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
        self.profile = profile
        self.rng = rng
        self.clock_ns = clock_ns
        self.next_start_node_index = 0
        # The kept verdicts and score rows of recent pod shapes over the node list.
        self.columns = ShapeColumns(cluster.node_changes)
        # Pods nominated to nodes by preemption (the daemon sets it; simulate completes
        # each preemption at once and needs none).
        self.nominated: NominatedPods | None = None

    def schedule(self, pod: Pod, nominated_node: str | None = None) -> Decision:
        """Decide one pod — its nominated node first — and, when a node is chosen,
        reserve it (assume)."""
        return self.commit(self.find_node_nominated_first(pod, nominated_node))

    def nominated_node_of(self, pod: Pod) -> str:
        """The node a preemption cleared for the pod: the nominator's word, else the
        pod's ``status.nominatedNodeName`` (written before a restart, or by another
        leader)."""
        held = self.nominated.node_of(pod.meta.key) if self.nominated is not None else ""
        return held or pod.nominated_node_name

    def find_node_nominated_first(self, pod: Pod, nominated_node: str | None = None) -> Decision:
        """Upstream's evaluateNominatedNode: a pod with a nominated node is tried there
        alone first, and goes there if it fits; otherwise every node is judged as for
        any pod. ``nominated_node`` overrides the pod's own (a preemption just done)."""
        node = self.nominated_node_of(pod) if nominated_node is None else nominated_node
        if node and node in self.cluster.nodes:
            decision = self.find_node(pod, only={node})
            if decision.node is not None:
                return decision
        return self.find_node(pod)

    def commit(self, decision: Decision) -> Decision:
        """Reserve the node a ``find_node`` chose and assume the pod there; a failed
        Reserve leaves the decision without a node, with the error."""
        pod = decision.pod
        if decision.node is not None:
            started = self.clock_ns()
            status = self.reserve(decision.state, pod, decision.node)
            decision.phases.append(("Reserve", started, self.clock_ns()))
            if not status.is_success:
                decision.error = status.message
                decision.message = status.message
                decision.node = None
                return decision
            try:
                self.cluster.assume_pod(pod, decision.node)
            except Exception as exc:
                # A pod view the cache cannot count on a node: give everything back.
                self.unreserve(decision)
                decision.error = decision.message = _crashed("Reserve", exc).message
                decision.node = None
        return decision

    def reserve(self, state: CycleState, pod: Pod, node_name: str) -> Status:
        done: list[ReservePlugin] = []
        for plugin in self.profile.reservers:
            try:
                status = plugin.reserve(state, pod, node_name)
            except Exception as exc:
                status = _crashed("Reserve", exc)
            if not status.is_success:
                for undo in reversed([*done, plugin]):
                    undo.unreserve(state, pod, node_name)
                return Status(
                    Code.ERROR, (f'running Reserve plugin "{plugin.name}": {status.message}',)
                )
            done.append(plugin)
        return Status(Code.SUCCESS)

    def post_bind(self, decision: Decision) -> None:
        """The decision's pod is bound: plugins drop what they kept to undo it."""
        if decision.node is None:
            return
        for plugin in self.profile.post_binders:
            plugin.post_bind(decision.state, decision.pod, decision.node)

    def unreserve(self, decision: Decision) -> None:
        """Roll a reserved decision back (its binding failed)."""
        if decision.node is None:
            return
        for plugin in reversed(self.profile.reservers):
            plugin.unreserve(decision.state, decision.pod, decision.node)
        self.cluster.forget_pod(decision.pod.meta.key)

    def find_node(self, pod: Pod, only: set[str] | None = None) -> Decision:
        """Filter and score; ``only`` restricts the candidates to those nodes and
        evaluates every one of them (the extender's question: "which of these?")."""
        decision = self.find_feasible(pod, only)
        if decision.feasible:
            self.select(decision)
        return decision

    def find_feasible(self, pod: Pod, only: set[str] | None = None) -> Decision:
        """PreFilter and Filter: the decision's ``feasible`` nodes, or why there are
        none. ``select`` scores and chooses among them; between the two the daemon may
        ask HTTP extenders to filter further and to add their scores."""
        decision = Decision(pod)
        state = decision.state
        all_nodes = self.cluster.node_list()
        if only is not None:
            all_nodes = [info for info in all_nodes if info.name in only]
        total = decision.total_nodes = len(all_nodes)

        clock = self.clock_ns
        started = clock()
        try:
            allowed, pre_filter_status = self._run_pre_filters(state, pod)
        except Exception as exc:
            allowed, pre_filter_status = None, _crashed("PreFilter", exc)
        decision.phases.append(("PreFilter", started, clock()))
        if pre_filter_status is not None:
            if pre_filter_status.code is Code.ERROR:
                decision.error = pre_filter_status.message
                decision.message = pre_filter_status.message
            else:
                decision.message = fit_error_message(total, pre_filter_status.message, {})
                decision.unresolvable = (
                    pre_filter_status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
                )
                decision.failed_plugins.add(pre_filter_status.plugin)
                decision.pre_filter_rejection = (
                    self.profile.predicate_name(pre_filter_status.plugin),
                    pre_filter_status.message,
                )
            return decision

        nodes = all_nodes
        if allowed is not None:
            names, plugins = allowed
            absent = f"node(s) didn't satisfy plugin(s) [{' '.join(sorted(plugins))}]"
            nodes = [info for info in all_nodes if info.name in names]
            decision.failed_plugins.update(plugins)
            # Every other node gets the same reason: computed once, not per node.
            plugin = sorted(plugins)[0]
            policy_name = self.profile.predicate_name(plugin)
            excluded = [info.name for info in all_nodes if info.name not in names]
            decision.filtered.update(zip(excluded, ([absent] for _ in excluded), strict=True))
            decision.rejected_by.update(dict.fromkeys(excluded, policy_name))
            decision.rejected_plugin.update(dict.fromkeys(excluded, plugin))
            decision.unresolvable_nodes.update(excluded)

        started = clock()
        feasible = self._find_feasible(state, pod, nodes, decision, every=only is not None)
        decision.phases.append(("Filter", started, clock()))
        if decision.error is not None:
            return decision
        if not feasible:
            decision.message = fit_error_message(total, "", decision.filtered)
            return decision
        decision.feasible = feasible
        return decision

    def select(self, decision: Decision, extra_scores: Mapping[str, int] | None = None) -> None:
        """Score the feasible nodes, add ``extra_scores`` (the extenders', already
        weighted) to their totals and choose the best, ties at random."""
        feasible = decision.feasible
        started = self.clock_ns()
        window = decision.feasible_window
        aligned = (
            (self.columns, window[0], window[2])
            if window is not None
            and window[1] is feasible
            and window[0] is self.cluster.node_list()
            else None
        )
        try:
            scored = score(
                self.profile.score_steps, decision.state, decision.pod, feasible, aligned
            )
        except Exception as exc:
            decision.error = decision.message = _crashed("Score", exc).message
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

    def _run_pre_filters(
        self, state: CycleState, pod: Pod
    ) -> tuple[tuple[set[str], list[str]] | None, Status | None]:
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
                    if len(narrowing) == 1:
                        text = f"node(s) didn't satisfy plugin {narrowing[0]}"
                    else:
                        text = f"node(s) didn't satisfy plugin(s) [{' '.join(narrowing)}] simultaneously"
                    return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (text,), plugin.name)
        if pending_rejection is not None:
            return None, pending_rejection
        if names is None:
            return None, None
        return (names, narrowing), None

    def _find_feasible(
        self,
        state: CycleState,
        pod: Pod,
        nodes: list[NodeInfo],
        decision: Decision,
        every: bool = False,
    ) -> list[NodeInfo]:
        count = len(nodes)
        if count == 0:
            return []
        wanted = (
            count
            if every
            else num_feasible_nodes_to_find(self.profile.percentage_of_nodes_to_score, count)
        )
        checks = active_checks(self.profile, state)
        # The common case: every filter node-local, the verdict kept on the node, and
        # the walk over the cluster's whole node list: the verdicts are read as slices
        # of the shape's column.
        verdict_key = filter_key(self.profile, state, pod)
        feasible: list[NodeInfo] = []
        start = 0 if every else self.next_start_node_index % count
        nominated = self.nominated
        crowded_nodes = nominated.nodes if nominated is not None else {}
        # Kept verdicts are read a batch at a time; with nominated pods about, node by
        # node (a crowded node is judged with them, never from the memo).
        batch_key = verdict_key if not crowded_nodes else None
        column = (
            self.columns.column(batch_key, nodes, UNKNOWN)
            if batch_key is not None and nodes is self.cluster.node_list()
            else None
        )
        whole = column is not None
        processed = 0
        # Batches of as many nodes as feasible ones are still wanted: the cycle stops
        # after the same node as a node-by-node walk would.
        while processed < count and len(feasible) < wanted:
            size = min(wanted - len(feasible), count - processed)
            batch = window(nodes, start + processed, size)
            if batch_key is None:
                # Nothing kept to read (a volume's filters, or nominated pods about):
                # every node is asked, judged and recorded in one pass.
                erred = self._ask_each(batch, checks, state, pod, verdict_key, decision, feasible)
                if erred is not None:
                    index, rejection = erred
                    self._fail(decision, rejection)
                    decision.evaluated_nodes.extend(window(nodes, start, processed + index + 1))
                    if not every:
                        self._advance_start(processed + index + 1)
                    return []
                processed += len(batch)
                continue
            if column is not None:
                verdicts = window(column, start + processed, size)
            else:
                verdicts = [info.memo.get(batch_key, UNKNOWN) for info in batch]
            # The few nodes without a kept verdict (between two pods of a shape, the one
            # that took the last pod) are judged now, in walk order, found by
            # list.index (in C): the rest of the batch is never walked in Python.
            erred_at, unreadable = self._judge_unknown(
                batch, verdicts, checks, state, pod, batch_key
            )
            if erred_at is not None:
                self._record(decision, batch[:erred_at], verdicts[:erred_at], [])
                self._fail(decision, verdicts[erred_at])
                decision.evaluated_nodes.extend(window(nodes, start, processed + erred_at + 1))
                if not every:
                    self._advance_start(processed + erred_at + 1)
                return []
            if column is not None:
                kept = (
                    [UNKNOWN if isinstance(v, Exception) else v for v in verdicts]
                    if unreadable
                    else verdicts
                )
                put_window(column, start + processed, kept)
            processed += len(batch)
            if verdicts.count(None) == len(batch):
                feasible.extend(batch)
            else:
                whole = False
                self._record(decision, batch, verdicts, feasible)
        decision.evaluated_nodes.extend(window(nodes, start, processed))
        if whole:
            decision.feasible_window = (nodes, feasible, start)
        if not every:
            self._advance_start(processed)
        return feasible

    def _advance_start(self, processed: int) -> None:
        """Upstream's nextStartNodeIndex: moved on by the nodes this walk looked at,
        modulo the whole cluster — also after a PreFilter narrowed the walk to a few
        nodes, so such a pod does not send the next walk back to the first node."""
        total = len(self.cluster.node_list())
        if total:
            self.next_start_node_index = (self.next_start_node_index + processed) % total

    def _ask_each(
        self,
        batch: list[NodeInfo],
        checks: list[Check],
        state: CycleState,
        pod: Pod,
        verdict_key: Hashable | None,
        decision: Decision,
        feasible: list[NodeInfo],
    ) -> tuple[int, tuple[Predicate, Status]] | None:
        """Judge every node of the batch in walk order, recording each verdict; the
        index and rejection of the first node whose filter erred, else None."""
        crowded_nodes = self.nominated.nodes if self.nominated is not None else {}
        for index, info in enumerate(batch):
            try:
                if crowded_nodes and info.name in crowded_nodes:
                    rejection = self._judge_with_nominated(checks, state, pod, info)
                elif verdict_key is not None:
                    rejection = remembered_rejection(verdict_key, checks, state, pod, info)
                else:
                    rejection = first_rejection(checks, state, pod, info)
            except Exception as exc:
                self._unreadable(decision, info.name, exc)
                continue
            if rejection is None:
                feasible.append(info)
            elif rejection[1].code is Code.ERROR:
                return index, rejection
            else:
                self._reject(decision, info.name, *rejection)
        return None

    @staticmethod
    def _fail(decision: Decision, rejection: tuple[Predicate, Status]) -> None:
        rejecting, status = rejection
        text = f'running "{rejecting.plugin.name}" filter plugin: {status.message}'
        decision.error = text
        decision.message = text

    def _judge_unknown(
        self,
        batch: list[NodeInfo],
        verdicts: list[Any],
        checks: list[Check],
        state: CycleState,
        pod: Pod,
        verdict_key: Hashable,
    ) -> tuple[int | None, bool]:
        """Fill in the batch's UNKNOWN verdicts in walk order (kept verdicts, so no pod
        is nominated anywhere): a rejection, None for a fit, or the exception a node
        could not be read with (a damaged stored object: passed over, named in the
        decision, and the cycle goes on). The index of the first node whose filter
        erred (the walk ends there), else None; and whether a node could not be read."""
        index = -1
        unreadable = False
        while True:
            try:
                index = verdicts.index(UNKNOWN, index + 1)
            except ValueError:
                return None, unreadable
            try:
                rejection = remembered_rejection(verdict_key, checks, state, pod, batch[index])
            except Exception as exc:
                verdicts[index] = exc
                unreadable = True
                continue
            verdicts[index] = rejection
            if rejection is not None and rejection[1].code is Code.ERROR:
                return index, unreadable

    def _record(
        self,
        decision: Decision,
        batch: list[NodeInfo],
        verdicts: list[Any],
        feasible: list[NodeInfo],
    ) -> None:
        """The judged batch into the decision, in walk order: fits into ``feasible``,
        rejections and unreadable nodes as the reasons of each."""
        for info, verdict in zip(batch, verdicts, strict=True):
            if verdict is None:
                feasible.append(info)
            elif isinstance(verdict, Exception):
                self._unreadable(decision, info.name, verdict)
            else:
                self._reject(decision, info.name, *verdict)

    def _judge_with_nominated(
        self, checks: list[Check], state: CycleState, pod: Pod, info: NodeInfo
    ) -> Rejection:
        """The node must fit with the pods nominated there that outrank this one, and
        as it is (``judge_with_nominated``)."""
        return judge_with_nominated(
            lambda node_state, node: first_rejection(checks, node_state, pod, node),
            self.profile,
            state,
            info,
            pod,
            self.nominated,
            self.cluster.pod_priority,
            self.cluster.pending,
        )

    @staticmethod
    def _unreadable(decision: Decision, node: str, exc: Exception) -> None:
        decision.filtered[node] = [REASON_UNREADABLE]
        decision.rejected_by[node] = REASON_UNREADABLE
        decision.unresolvable_nodes.add(node)
        decision.unreadable[node] = f"{type(exc).__name__}: {exc}"

    @staticmethod
    def _reject(decision: Decision, node: str, predicate: Predicate, status: Status) -> None:
        decision.filtered[node] = list(status.reasons)
        decision.rejected_by[node] = predicate.policy_name
        decision.rejected_plugin[node] = predicate.plugin.name
        decision.failed_plugins.add(predicate.plugin.name)
        if status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
            decision.unresolvable_nodes.add(node)


def _crashed(point: str, exc: Exception) -> Status:
    """An exception out of a plugin (a pod or object it could not read) as the pod's
    error status: the pod is retried with backoff, the loop goes on."""
    return Status(Code.ERROR, (f"running {point} plugins: {type(exc).__name__}: {exc}",))
