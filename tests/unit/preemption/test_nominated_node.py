"""One nominated-node path for the daemon and ``simulate``: the nominated node is tried
first (upstream's evaluateNominatedNode), a nomination that no node can honour any more
is cleared, and the pods of lower priority nominated to a node chosen for preemption lose
their nomination (upstream's prepareCandidate)."""

from __future__ import annotations

from typing import Any

from tests.support import cluster, node, pod
from tests.unit.preemption.builders import preemptor, running
from tests.unit.preemption.test_affinity_and_spread import scheduler_for
from volsched.scheduling.preemption.nominated import NominatedPods
from volsched.scheduling.preemption.post_filter import Preemptor

Raw = dict[str, Any]


def nominated_to(raw: Raw, node_name: str) -> Raw:
    raw["status"] = {**(raw.get("status") or {}), "nominatedNodeName": node_name}
    return raw


def test_the_nominated_node_is_tried_first_and_kept_when_it_fits() -> None:
    cache = cluster(
        node("roomy", cpu="8"),
        node("busy", cpu="8"),
        running("tenant", "busy", 0, cpu="6"),
        nominated_to(pod("p", cpu="1"), "busy"),
    )
    scheduler = scheduler_for(cache)
    # Scored alone, the emptier node wins ...
    assert scheduler.find_node(cache.pending["default/p"]).node == "roomy"
    # ... but the node a preemption cleared for the pod comes first.
    decision = scheduler.schedule(cache.pending["default/p"])
    assert decision.node == "busy"


def test_a_nominated_node_that_no_longer_fits_is_passed_over() -> None:
    cache = cluster(
        node("roomy", cpu="8"),
        node("busy", cpu="8"),
        running("tenant", "busy", 0, cpu="8"),
        nominated_to(pod("p", cpu="1"), "busy"),
    )
    assert scheduler_for(cache).schedule(cache.pending["default/p"]).node == "roomy"


def test_the_nominator_s_word_comes_before_the_pod_s_status() -> None:
    cache = cluster(
        node("a", cpu="8"),
        node("b", cpu="8"),
        nominated_to(pod("p", cpu="1"), "a"),
    )
    scheduler = scheduler_for(cache)
    scheduler.nominated = NominatedPods()
    scheduler.nominated.nominate(cache.pending["default/p"], "b")
    assert scheduler.schedule(cache.pending["default/p"]).node == "b"


def test_no_candidate_clears_the_nomination_and_ineligibility_keeps_it() -> None:
    full = [node("n1", cpu="2"), running("peer", "n1", 100, cpu="2")]
    cache = cluster(*full, nominated_to(preemptor(cpu="2"), "n1"))
    scheduler = scheduler_for(cache)
    decision = scheduler.schedule(cache.pending["default/high"])
    outcome = Preemptor(scheduler).post_filter(decision)
    assert outcome is not None and outcome.node is None
    assert outcome.clear_nomination

    never = preemptor(cpu="2", preemptionPolicy="Never")
    cache = cluster(*full, nominated_to(never, "n1"))
    scheduler = scheduler_for(cache)
    outcome = Preemptor(scheduler).post_filter(scheduler.schedule(cache.pending["default/high"]))
    assert outcome is not None and outcome.message == (
        "no new claims to deallocate, preemption: not eligible due to preemptionPolicy=Never."
    )
    assert not outcome.clear_nomination


def test_lower_priority_pods_nominated_to_the_chosen_node_lose_their_nomination() -> None:
    # The higher-priority nominated pod keeps its room in the dry run (1 of 3 CPUs).
    cache = cluster(
        node("n1", cpu="3"),
        running("low", "n1", 1, cpu="2"),
        pod("waiting-low", cpu="1", priority=5),
        pod("waiting-high", cpu="1", priority=500),
        preemptor(cpu="2"),
    )
    scheduler = scheduler_for(cache)
    nominated = NominatedPods()
    nominated.nominate(cache.pending["default/waiting-low"], "n1")
    nominated.nominate(cache.pending["default/waiting-high"], "n1")
    scheduler.nominated = nominated
    decision = scheduler.schedule(cache.pending["default/high"])
    assert decision.node is None
    outcome = Preemptor(scheduler, nominated).post_filter(decision)
    assert outcome is not None and outcome.node == "n1"
    assert [p.meta.key for p in outcome.lower_nominated] == ["default/waiting-low"]
