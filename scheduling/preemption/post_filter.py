"""The PostFilter: after a cycle found no node, decide whether and whom to preempt.

Upstream's DefaultPreemption, step by step: is the pod eligible; which nodes could an
eviction help (never one rejected as UnschedulableAndUnresolvable — volumes, selectors,
taints, cordons); the victims on each such node (a dry run with every filter); then one
node by upstream's ordering. The messages are kube-scheduler's PostFilter texts.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.extension_points import filter_with_nominated_pods
from volsched.scheduling.framework.node_verdicts import Check, active_checks
from volsched.scheduling.framework.profile import Profile
from volsched.scheduling.framework.runner import Decision, Scheduler, fit_error_message
from volsched.scheduling.framework.status import Code, Status
from volsched.scheduling.preemption.choosing import candidates_wanted, pick_one_node
from volsched.scheduling.preemption.nominated import NominatedPods
from volsched.scheduling.preemption.victims import Candidate, PodChanges, select_victims_on_node

PREFIX = "preemption: "
REASON_NOT_HELPFUL = "Preemption is not helpful for scheduling"
REASON_NO_CANDIDATE = "no candidate node for preemption"
NOT_ELIGIBLE_POLICY = "not eligible due to preemptionPolicy=Never."
NOT_ELIGIBLE_TERMINATING = "not eligible due to a terminating pod on the nominated node."
PREEMPTED_BY_SCHEDULER = "PreemptionByScheduler"


@dataclass(slots=True)
class Preemption:
    """What the PostFilter decided for one pod.

    On success ``node`` is the nominated node and ``victims`` the pods to evict, most
    important first, and ``message`` is None; otherwise ``message`` is the PostFilter
    text users see. ``candidates`` and ``rejected`` say, per node, what the dry run found
    (for ``explain``). ``clear_nomination`` is set when no node is a candidate, so the
    pod's earlier nomination no longer holds: upstream's PostFilter then answers with an
    empty nominated node, and the scheduler clears ``status.nominatedNodeName``.
    ``lower_nominated`` are the pods of lower priority nominated to the chosen node,
    whose nominations upstream clears (they would not fit beside the preemptor).
    """

    node: str | None = None
    victims: tuple[Pod, ...] = ()
    message: str | None = None
    candidates: dict[str, Candidate] = field(default_factory=dict)
    rejected: dict[str, list[str]] = field(default_factory=dict)
    clear_nomination: bool = False
    lower_nominated: tuple[Pod, ...] = ()
    # Internal errors of the dry run (a filter that failed on some node).
    errors: list[str] = field(default_factory=list)
    # The reasons of the PostFilters that ran before preemption, each followed by ", ".
    lead: str = ""

    def refuse(self, text: str) -> None:
        """Preemption found no node: the PostFilter text, preemption's part last."""
        self.message = f"{self.lead}{PREFIX}{text}"


def node_fits(
    checks: list[Check],
    profile: Profile,
    state: CycleState,
    pod: Pod,
    info: NodeInfo,
    nominated: NominatedPods | None,
    cluster: ClusterCache,
) -> Status | None:
    """``checks`` (``active_checks``: the filters the cycle ran) on one node state, with
    the pending pods nominated there, by the cycle's own routine
    (``filter_with_nominated_pods``); None when the pod fits, else the rejecting
    plugin's status."""
    rejection = filter_with_nominated_pods(checks, profile, state, pod, info, nominated, cluster)
    if rejection is None:
        return None
    predicate, status = rejection
    return status.with_plugin(predicate.plugin.name)


def eligibility_problem(cluster: ClusterCache, pod: Pod, decision: Decision) -> str | None:
    """Upstream's PodEligibleToPreemptOthers: None when the pod may preempt."""
    if pod.preemption_policy == "Never":
        return NOT_ELIGIBLE_POLICY
    nominated = pod.nominated_node_name
    if not nominated or nominated in decision.unresolvable_nodes:
        return None
    info = cluster.nodes.get(nominated)
    if info is None:
        return None
    own = cluster.pod_priority(pod)
    for other in info.pods.values():
        if (
            cluster.pod_priority(other) < own
            and other.meta.deletion_timestamp is not None
            and other.disruption_reason == PREEMPTED_BY_SCHEDULER
        ):
            # Wait for the victims of the earlier preemption to go.
            return NOT_ELIGIBLE_TERMINATING
    return None


class Preemptor:
    """Runs the PostFilter for the decisions of one scheduler (any profile or policy)."""

    def __init__(self, scheduler: Scheduler, nominated: NominatedPods | None = None) -> None:
        self.scheduler = scheduler
        self.nominated = nominated

    @property
    def cluster(self) -> ClusterCache:
        return self.scheduler.cluster

    def post_filter(self, decision: Decision) -> Preemption | None:
        """None when preemption does not apply (the pod was placed, or the cycle failed
        with an internal error); otherwise the outcome, successful or not."""
        found = self.find_candidates(decision)
        if found is None or found.message is not None:
            return found
        return self.select_candidate(decision, found)

    def find_candidates(self, decision: Decision) -> Preemption | None:
        """The first half of ``post_filter``: the candidate nodes and their victims
        (``candidates``), or a final answer (``message`` set). Between the halves the
        daemon may let HTTP extenders trim the candidates (upstream's callExtenders)."""
        if decision.node is not None or decision.error is not None:
            return None
        pod = decision.pod
        lead = ""
        for plugin in self.scheduler.profile.post_filters:
            status = plugin.post_filter(decision.state, pod)
            if status.code is Code.ERROR:
                return Preemption(message=status.message)
            lead += status.message + ", "
        result = Preemption(lead=lead)
        problem = eligibility_problem(self.cluster, pod, decision)
        if problem is not None:
            result.refuse(problem)
            return result
        all_nodes = self.cluster.node_list()
        potential: list[NodeInfo] = []
        for info in all_nodes:
            if decision.unresolvable or info.name in decision.unresolvable_nodes:
                result.rejected[info.name] = [REASON_NOT_HELPFUL]
            else:
                potential.append(info)
        if not potential:
            result.clear_nomination = True
            result.refuse(fit_error_message(len(all_nodes), "", result.rejected))
            return result
        result.errors = self._dry_run(decision, potential, result)
        if not result.candidates:
            errors = result.errors
            result.clear_nomination = not errors
            if errors:
                result.refuse(errors[0])
            else:
                result.refuse(fit_error_message(len(all_nodes), "", result.rejected))
        return result

    def select_candidate(self, decision: Decision, result: Preemption) -> Preemption:
        """The second half: one node among ``result.candidates`` (upstream's
        SelectCandidate), and the lower-priority pods nominated there."""
        pod = decision.pod
        chosen = pick_one_node(list(result.candidates.values()), self.cluster.pod_priority)
        if chosen is None:
            # Extenders took every candidate away (upstream's words for it).
            result.refuse(REASON_NO_CANDIDATE)
            return result
        result.node = chosen.node
        result.victims = chosen.pods
        if self.nominated is not None:
            own = self.cluster.pod_priority(pod)
            result.lower_nominated = tuple(
                other
                for key, other in sorted(self.nominated.on_node(chosen.node).items())
                if key != pod.meta.key and self.cluster.pod_priority(other) < own
            )
        return result

    def _dry_run(
        self, decision: Decision, potential: list[NodeInfo], result: Preemption
    ) -> list[str]:
        """Victims per node until enough candidates are found; returns internal errors."""
        pod = decision.pod
        wanted = candidates_wanted(len(potential), *self.scheduler.profile.min_candidate_nodes)
        offset = 0 if wanted >= len(potential) else self.scheduler.rng.randrange(len(potential))
        ordered = potential[offset:] + potential[:offset]
        budgets = list(self.cluster.disruption_budgets.values())
        priority_of = self.cluster.pod_priority
        profile = self.scheduler.profile
        checks = active_checks(profile, decision.state)
        errors: list[str] = []
        free_of_violations = 0

        def fits(node: NodeInfo, state: CycleState) -> Status | None:
            return node_fits(checks, profile, state, pod, node, self.nominated, self.cluster)

        changes = PodChanges(profile, pod)
        for info in ordered:
            victims, status = select_victims_on_node(
                info, pod, priority_of, budgets, fits, decision.state.clone(), changes
            )
            if victims is not None:
                result.candidates[info.name] = victims
                free_of_violations += victims.pdb_violations == 0
                if free_of_violations and len(result.candidates) >= wanted:
                    break
                continue
            assert status is not None
            if status.code is Code.ERROR:
                errors.append(status.message)
            result.rejected[info.name] = list(status.reasons)
        # Candidates without a budget violation come first, as upstream lists them.
        result.candidates = dict(
            sorted(result.candidates.items(), key=lambda item: item[1].pdb_violations > 0)
        )
        return errors
