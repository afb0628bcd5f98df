"""PodTopologySpread (policy names EvenPodsSpread and EvenPodsSpreadPriority).

Upstream's plugin. Filter (``DoNotSchedule`` constraints): PreFilter counts, per
constraint and topology domain, the pods of the incoming pod's namespace that match the
constraint's selector, over the nodes that carry every constraint's topology key and
that the constraint's inclusion policies admit (``nodeAffinityPolicy: Honor``, the
default, counts only nodes the pod's nodeSelector / required node affinity allow;
``nodeTaintsPolicy: Honor`` only nodes whose taints it tolerates — default Ignore). A
node passes when ``matching pods in its domain + 1 (if the pod matches itself) −
global minimum ≤ maxSkew``, the minimum being 0 while fewer domains than ``minDomains``
exist. A node without a constraint's key is UnschedulableAndUnresolvable; a skew too
large is Unschedulable (evicting pods can even it out).

Score (``ScheduleAnyway`` constraints, or — for a pod with no constraints of its own
that a Service, ReplicaSet, StatefulSet or ReplicationController selects — the system
defaults: hostname maxSkew 3 and zone maxSkew 5): per node, the sum over constraints of
``matching pods in its domain × log(domains + 2) + maxSkew − 1``, rounded, then
normalized so the emptiest domain scores 100; filtered nodes missing a key score 0.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import LABEL_HOSTNAME, LABEL_TOPOLOGY_ZONE, Node, Pod
from volsched.cache.objects.pod_constraints import (
    DO_NOT_SCHEDULE,
    HONOR,
    SCHEDULE_ANYWAY,
    SpreadConstraint,
)
from volsched.cache.objects.selectors import LabelSelector
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.events import (
    ADD,
    DELETE,
    NODE,
    POD,
    UPDATE_NODE_LABEL,
    UPDATE_NODE_TAINT,
    UPDATE_POD_LABEL,
    ClusterEventWithHint,
    on,
)
from volsched.scheduling.framework.interfaces import MAX_NODE_SCORE
from volsched.scheduling.framework.status import SKIP, SUCCESS, Status, unresolvable, unschedulable
from volsched.scheduling.go_arithmetic import round_half_away
from volsched.scheduling.plugins.node_affinity import matches_required_node_affinity
from volsched.scheduling.plugins.pod_rule_events import (
    spread_after_node_change,
    spread_after_pod_change,
)
from volsched.scheduling.plugins.selector_spread import default_selector
from volsched.scheduling.plugins.taint_toleration import untolerated_hard_taint

REASON_CONSTRAINTS = "node(s) didn't match pod topology spread constraints"
REASON_MISSING_LABEL = f"{REASON_CONSTRAINTS} (missing required label)"
SYSTEM = "System"
LIST = "List"

_SKEW = unschedulable(REASON_CONSTRAINTS)
_MISSING = unresolvable(REASON_MISSING_LABEL)


@dataclass(frozen=True, slots=True)
class DefaultConstraint:
    """A profile's default constraint (``defaultConstraints``): no selector of its own,
    the pod's Services and controller give it one."""

    max_skew: int
    topology_key: str
    when_unsatisfiable: str = SCHEDULE_ANYWAY


SYSTEM_DEFAULT_CONSTRAINTS = (
    DefaultConstraint(3, LABEL_HOSTNAME),
    DefaultConstraint(5, LABEL_TOPOLOGY_ZONE),
)


@dataclass(slots=True)
class _FilterState:
    constraints: tuple[SpreadConstraint, ...]
    counts: list[dict[str, int]] = field(default_factory=list)
    minimum: list[int] = field(default_factory=list)
    self_match: list[bool] = field(default_factory=list)

    def clone(self) -> _FilterState:
        return _FilterState(
            self.constraints,
            [dict(domains) for domains in self.counts],
            list(self.minimum),
            list(self.self_match),
        )


@dataclass(slots=True)
class _ScoreState:
    constraints: tuple[SpreadConstraint, ...]
    weights: list[float]
    domain_counts: list[dict[str, int]]
    ignored: set[str]


def _has_keys(labels: dict[str, str], constraints: Sequence[SpreadConstraint]) -> bool:
    return all(c.topology_key in labels for c in constraints)


def _admits(constraint: SpreadConstraint, pod: Pod, node: NodeInfo) -> bool:
    """The constraint's node inclusion policies."""
    if constraint.node_affinity_policy == HONOR and not matches_required_node_affinity(pod, node):
        return False
    return not (
        constraint.node_taints_policy == HONOR and untolerated_hard_taint(pod, node) is not None
    )


def _counts_pods(selector: LabelSelector | None) -> bool:
    """Upstream's countPodsMatchSelector counts no pod for a missing selector and none for
    an empty one (``labelSelector: {}``), though the empty one matches every pod's labels."""
    return selector is not None and not selector.is_empty()


def _minimum(constraint: SpreadConstraint, domains: dict[str, int]) -> int:
    if constraint.min_domains is not None and len(domains) < constraint.min_domains:
        # Too few domains: the missing ones count as holding no matching pod.
        return 0
    return min(domains.values()) if domains else 0


def _count(node: NodeInfo, constraint: SpreadConstraint, namespace: str) -> int:
    selector = constraint.selector
    if selector is None or not _counts_pods(selector):
        return 0
    count = 0
    for pod in node.pods.values():
        if (
            pod.namespace == namespace
            and pod.meta.deletion_timestamp is None
            and selector.matches(pod.labels)
        ):
            count += 1
    return count


class PodTopologySpread:
    name = "PodTopologySpread"

    def __init__(
        self,
        cluster: ClusterCache,
        default_constraints: Sequence[DefaultConstraint] = SYSTEM_DEFAULT_CONSTRAINTS,
        defaulting_type: str = SYSTEM,
    ) -> None:
        self.cluster = cluster
        self.default_constraints = tuple(default_constraints)
        self.defaulting_type = defaulting_type
        self._filter_key = f"PreFilter{self.name}"
        self._score_key = f"PreScore{self.name}"
        self._domain_cache: dict[tuple[str, ...], tuple[int, list[set[str]]]] = {}

    def _defaulted(self, pod: Pod, when: str) -> tuple[SpreadConstraint, ...]:
        """The profile's default constraints for a pod without its own (or none)."""
        defaults = [d for d in self.default_constraints if d.when_unsatisfiable == when]
        if not defaults:
            return ()
        selector: LabelSelector | None = default_selector(self.cluster, pod)
        if selector is None:
            return ()
        return tuple(
            SpreadConstraint(d.max_skew, d.topology_key, d.when_unsatisfiable, selector)
            for d in defaults
        )

    def _constraints(self, pod: Pod, when: str) -> tuple[SpreadConstraint, ...]:
        if pod.spread_constraints:
            return tuple(c for c in pod.spread_constraints if c.when_unsatisfiable == when)
        return self._defaulted(pod, when)

    # -- requeue ---------------------------------------------------------------------

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """Upstream's: placed pods added, relabelled or deleted change the counts; nodes
        added, deleted, relabelled or retainted change the domains."""
        return (
            on(POD, ADD | UPDATE_POD_LABEL | DELETE, self.after_pod_change),
            on(
                NODE,
                ADD | DELETE | UPDATE_NODE_LABEL | UPDATE_NODE_TAINT,
                self.after_node_change,
            ),
        )

    def after_pod_change(self, pod: Pod, old: Pod | None, new: Pod | None) -> bool:
        return spread_after_pod_change(pod, old, new, self._constraints(pod, DO_NOT_SCHEDULE))

    def after_node_change(self, pod: Pod, old: Node | None, new: Node | None) -> bool:
        return spread_after_node_change(old, new, self._constraints(pod, DO_NOT_SCHEDULE))

    # -- filter ----------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[Collection[str] | None, Status]:
        constraints = self._constraints(pod, DO_NOT_SCHEDULE)
        if not constraints:
            return None, SKIP
        filter_state = _FilterState(constraints)
        if self._every_node_with_the_keys_counts(pod, constraints):
            counts = self._counts_from_index(pod, constraints)
        else:
            counts = self._counts_by_scan(pod, constraints)
        filter_state.counts = counts
        for index, constraint in enumerate(constraints):
            filter_state.minimum.append(_minimum(constraint, counts[index]))
            filter_state.self_match.append(constraint.counts(pod.labels))
        state.write(self._filter_key, filter_state)
        return None, SUCCESS

    @staticmethod
    def _every_node_with_the_keys_counts(
        pod: Pod, constraints: tuple[SpreadConstraint, ...]
    ) -> bool:
        """True when the inclusion policies admit every node: then the domains are the
        label values of the nodes, and the counts come from the pods matching."""
        constrained = bool(pod.node_selector) or pod.required_affinity is not None
        return all(
            c.node_taints_policy != HONOR and (c.node_affinity_policy != HONOR or not constrained)
            for c in constraints
        )

    def _domains(self, constraints: tuple[SpreadConstraint, ...]) -> list[set[str]]:
        """Each constraint's domains: its key's values among nodes with every key."""
        keys = tuple(c.topology_key for c in constraints)
        cached = self._domain_cache.get(keys)
        generation = self.cluster.node_labels_generation
        if cached is None or cached[0] != generation:
            values: list[set[str]] = [set() for _ in keys]
            for info in self.cluster.nodes.values():
                labels = info.node.meta.labels
                if all(key in labels for key in keys):
                    for index, key in enumerate(keys):
                        values[index].add(labels[key])
            cached = (generation, values)
            self._domain_cache[keys] = cached
        return cached[1]

    def _counts_from_index(
        self, pod: Pod, constraints: tuple[SpreadConstraint, ...]
    ) -> list[dict[str, int]]:
        counts = [dict.fromkeys(domains, 0) for domains in self._domains(constraints)]
        namespace = pod.namespace
        for index, constraint in enumerate(constraints):
            selector = constraint.selector
            if selector is None or not _counts_pods(selector):
                continue
            found = self.cluster.pod_index.candidates(selector)
            candidates = (
                found
                if found is not None
                else ((p, info) for info in self.cluster.node_list() for p in info.pods.values())
            )
            domain = counts[index]
            for other, info in candidates:
                if (
                    other.namespace != namespace
                    or other.meta.deletion_timestamp is not None
                    or not selector.matches(other.labels)
                ):
                    continue
                labels = info.node.meta.labels
                if _has_keys(labels, constraints):
                    value = labels[constraint.topology_key]
                    domain[value] = domain.get(value, 0) + 1
        return counts

    def _counts_by_scan(
        self, pod: Pod, constraints: tuple[SpreadConstraint, ...]
    ) -> list[dict[str, int]]:
        counts: list[dict[str, int]] = [{} for _ in constraints]
        namespace = pod.namespace
        for info in self.cluster.node_list():
            labels = info.node.meta.labels
            if not _has_keys(labels, constraints):
                continue
            for index, constraint in enumerate(constraints):
                if not _admits(constraint, pod, info):
                    continue
                value = labels[constraint.topology_key]
                domain = counts[index]
                domain[value] = domain.get(value, 0) + _count(info, constraint, namespace)
        return counts

    # -- pods added and removed (preemption's dry run, nominated pods) -------------------

    def add_pod(self, state: CycleState, pod: Pod, added: Pod, node: NodeInfo) -> None:
        self._update(state, pod, added, node, 1)

    def remove_pod(self, state: CycleState, pod: Pod, removed: Pod, node: NodeInfo) -> None:
        self._update(state, pod, removed, node, -1)

    def _update(self, state: CycleState, pod: Pod, other: Pod, node: NodeInfo, delta: int) -> None:
        """Upstream's updateWithPod: a pod of the same namespace placed on (or taken off)
        a node that carries every key and that a constraint's inclusion policies admit
        counts in that constraint's domain if its selector matches the pod's labels.
        As upstream, the selector is matched as it is here (an empty one matches), and
        a terminating pod is not passed over."""
        filter_state: _FilterState | None = state.read(self._filter_key)
        if filter_state is None or other.namespace != pod.namespace:
            return
        labels = node.node.meta.labels
        constraints = filter_state.constraints
        if not _has_keys(labels, constraints):
            return
        for index, constraint in enumerate(constraints):
            if not _admits(constraint, pod, node):
                continue
            if constraint.selector is None or not constraint.selector.matches(other.labels):
                continue
            domains = filter_state.counts[index]
            value = labels[constraint.topology_key]
            domains[value] = domains.get(value, 0) + delta
            filter_state.minimum[index] = _minimum(constraint, domains)

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        filter_state: _FilterState | None = state.read(self._filter_key)
        if filter_state is None:
            self.pre_filter(state, pod)
            filter_state = state.read(self._filter_key)
            if filter_state is None:
                return None
        labels = node.node.meta.labels
        for index, constraint in enumerate(filter_state.constraints):
            value = labels.get(constraint.topology_key)
            if value is None:
                return _MISSING
            skew = (
                filter_state.counts[index].get(value, 0)
                + filter_state.self_match[index]
                - filter_state.minimum[index]
            )
            if skew > constraint.max_skew:
                return _SKEW
        return None

    def explain(self, state: CycleState, pod: Pod, node: NodeInfo) -> str | None:
        """Which constraint rejected ``node``, with the skew (for ``volsched explain``)."""
        filter_state: _FilterState | None = state.read(self._filter_key)
        if filter_state is None:
            return None
        labels = node.node.meta.labels
        for index, constraint in enumerate(filter_state.constraints):
            key = constraint.topology_key
            value = labels.get(key)
            where = f"constraint {index} (topologyKey {key}, maxSkew {constraint.max_skew})"
            if value is None:
                return f"{where}: the node has no {key} label"
            matching = filter_state.counts[index].get(value, 0)
            skew = matching + filter_state.self_match[index] - filter_state.minimum[index]
            if skew > constraint.max_skew:
                return (
                    f"{where}: {key}={value} has {matching} matching pod(s), the minimum is "
                    f"{filter_state.minimum[index]}: skew {skew} > {constraint.max_skew}"
                )
        return None

    # -- score -----------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: Pod, nodes: list[NodeInfo]) -> Status:
        own = bool(pod.spread_constraints)
        constraints = self._constraints(pod, SCHEDULE_ANYWAY)
        if not constraints:
            return SKIP
        # Constraints a pod writes itself need every key on a node; defaulted ones do not.
        require_all = own or self.defaulting_type != SYSTEM
        ignored: set[str] = set()
        domain_counts: list[dict[str, int]] = [{} for _ in constraints]
        for info in nodes:
            labels = info.node.meta.labels
            if require_all and not _has_keys(labels, constraints):
                ignored.add(info.name)
                continue
            for index, constraint in enumerate(constraints):
                if constraint.topology_key == LABEL_HOSTNAME:
                    continue
                domain_counts[index].setdefault(labels.get(constraint.topology_key, ""), 0)
        weights = []
        for index, constraint in enumerate(constraints):
            size = len(domain_counts[index])
            if constraint.topology_key == LABEL_HOSTNAME:
                size = len(nodes) - len(ignored)
            weights.append(math.log(size + 2))
        namespace = pod.namespace
        for info in self.cluster.node_list():
            labels = info.node.meta.labels
            if require_all and not _has_keys(labels, constraints):
                continue
            for index, constraint in enumerate(constraints):
                if constraint.topology_key == LABEL_HOSTNAME or not _admits(constraint, pod, info):
                    continue
                domains = domain_counts[index]
                value = labels.get(constraint.topology_key, "")
                if value in domains:
                    domains[value] += _count(info, constraint, namespace)
        state.write(self._score_key, _ScoreState(constraints, weights, domain_counts, ignored))
        return SUCCESS

    def score(self, state: CycleState, pod: Pod, node: NodeInfo) -> int:
        score_state: _ScoreState | None = state.read(self._score_key)
        if score_state is None or node.name in score_state.ignored:
            return 0
        labels = node.node.meta.labels
        total = 0.0
        for index, constraint in enumerate(score_state.constraints):
            value = labels.get(constraint.topology_key)
            if value is None:
                continue
            if constraint.topology_key == LABEL_HOSTNAME:
                count = _count(node, constraint, pod.namespace)
            else:
                count = score_state.domain_counts[index].get(value, 0)
            total += count * score_state.weights[index] + (constraint.max_skew - 1)
        return round_half_away(total)

    def normalize(self, state: CycleState, pod: Pod, scores: dict[str, int]) -> None:
        score_state: _ScoreState | None = state.read(self._score_key)
        ignored = score_state.ignored if score_state is not None else set()
        counted = [value for name, value in scores.items() if name not in ignored]
        if not counted:
            for name in scores:
                scores[name] = 0
            return
        low = min(counted)
        high = max(counted)
        for name, value in scores.items():
            if name in ignored:
                scores[name] = 0
            elif high == 0:
                scores[name] = MAX_NODE_SCORE
            else:
                scores[name] = MAX_NODE_SCORE * (high + low - value) // high
