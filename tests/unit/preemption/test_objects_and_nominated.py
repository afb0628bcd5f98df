"""The objects preemption reads (PodDisruptionBudgets, the Pod's preemption fields) and
upstream's nominator rule: pods nominated to a node of higher or equal priority take
their room there when other pods are filtered."""

from __future__ import annotations

import pytest

from tests.support import cluster, meta, node, parse, pod
from tests.unit.preemption.builders import budget, running, scheduler_for
from volsched.cache.errors import ObjectError
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.node_verdicts import active_checks
from volsched.scheduling.preemption.nominated import NominatedPods
from volsched.scheduling.preemption.post_filter import node_fits


def test_a_budget_is_read_with_its_selector_allowance_and_disrupted_pods() -> None:
    parsed = parse(budget("guard", {"app": "db"}, 2, disrupted=("db-0",)))
    assert parsed.disruptions_allowed == 2
    assert parsed.disrupted_pods == frozenset({"db-0"})
    assert parsed.protects("default", {"app": "db", "x": "y"})
    assert not parsed.protects("other", {"app": "db"})
    assert not parsed.protects("default", {})


@pytest.mark.parametrize("spec", [{}, {"selector": {}}], ids=["no selector", "empty selector"])
def test_a_budget_without_a_selector_protects_no_pod(spec: dict[str, object]) -> None:
    raw = {"kind": "PodDisruptionBudget", "metadata": meta("b", "default"), "spec": spec}
    assert not parse(raw).protects("default", {"app": "db"})


def test_a_malformed_budget_names_its_field() -> None:
    raw = budget("guard", {"app": "db"}, 0)
    raw["status"]["disruptionsAllowed"] = -1
    with pytest.raises(ObjectError, match="disruptionsAllowed"):
        parse(raw)


def test_the_pod_fields_preemption_reads() -> None:
    raw = pod("p", spec={"preemptionPolicy": "Never"})
    raw["status"] = {
        "nominatedNodeName": "n1",
        "startTime": "2026-01-01T00:00:00Z",
        "conditions": [
            {"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}
        ],
    }
    parsed: Pod = parse(raw)
    assert parsed.preemption_policy == "Never"
    assert parsed.nominated_node_name == "n1"
    assert parsed.start_time is not None
    assert parsed.disruption_reason == "PreemptionByScheduler"
    default: Pod = parse(pod("q"))
    assert (default.preemption_policy, default.nominated_node_name) == ("PreemptLowerPriority", "")


def test_an_unknown_preemption_policy_names_its_field() -> None:
    with pytest.raises(ObjectError, match="preemptionPolicy"):
        parse(pod("p", spec={"preemptionPolicy": "Sometimes"}))


@pytest.mark.parametrize(
    ("nominated_priority", "fits"),
    [
        pytest.param(200, False, id="a higher nominated pod holds its room"),
        pytest.param(100, False, id="so does one of equal priority"),
        pytest.param(50, True, id="a lower nominated pod does not"),
    ],
)
def test_nominated_pods_count_on_their_node(nominated_priority: int, fits: bool) -> None:
    cache = cluster(
        node("n1", cpu="2"),
        running("r", "n1", 0, cpu="1"),
        pod("waiting", cpu="1", priority=nominated_priority),
        pod("new", cpu="1", priority=100),
    )
    scheduler = scheduler_for(cache)
    nominated = NominatedPods()
    nominated.nominate(cache.pending["default/waiting"], "n1")
    new = cache.pending["default/new"]
    decision = scheduler.find_node(new)
    checks = active_checks(scheduler.profile, decision.state)
    status = node_fits(
        checks, scheduler.profile, decision.state, new, cache.nodes["n1"], nominated, cache
    )
    assert (status is None) == fits
    # The cache's own node is never changed by the check.
    assert set(cache.nodes["n1"].pods) == {"default/r"}


def test_a_nominated_pod_no_longer_pending_holds_no_room_in_the_dry_run() -> None:
    """The preemption dry run and the cycle share one routine: a nominated pod that is
    gone (deleted, bound elsewhere) counts in neither. Before, the dry run kept
    counting it on its node."""
    cache = cluster(
        node("n1", cpu="2"),
        running("r", "n1", 0, cpu="1"),
        pod("waiting", cpu="1", priority=200),
        pod("new", cpu="1", priority=100),
    )
    scheduler = scheduler_for(cache)
    nominated = NominatedPods()
    nominated.nominate(cache.pending["default/waiting"], "n1")
    cache.delete("Pod", "default/waiting")
    new = cache.pending["default/new"]
    decision = scheduler.find_node(new)
    checks = active_checks(scheduler.profile, decision.state)
    assert (
        node_fits(
            checks, scheduler.profile, decision.state, new, cache.nodes["n1"], nominated, cache
        )
        is None
    )


def test_the_nominator_forgets_and_moves_pods() -> None:
    first: Pod = parse(pod("a"))
    nominated = NominatedPods()
    nominated.nominate(first, "n1")
    nominated.nominate(first, "n2")
    assert nominated.node_of("default/a") == "n2"
    assert dict(nominated.on_node("n1")) == {}
    nominated.forget("default/a")
    assert nominated.node_of("default/a") == ""


@pytest.mark.parametrize(
    ("nominated_priority", "still_pending", "node"),
    [
        pytest.param(200, True, None, id="the cycle keeps a higher nominated pod's room"),
        pytest.param(50, True, "n1", id="a lower nominated pod holds nothing"),
        pytest.param(200, False, "n1", id="a nominated pod no longer pending holds nothing"),
    ],
)
def test_a_scheduling_cycle_counts_nominated_pods(
    nominated_priority: int, still_pending: bool, node: str | None
) -> None:
    cache = cluster(
        _one_node(),
        running("r", "n1", 0, cpu="1"),
        pod("waiting", cpu="1", priority=nominated_priority),
        pod("new", cpu="1", priority=100),
    )
    scheduler = scheduler_for(cache)
    scheduler.nominated = NominatedPods()
    scheduler.nominated.nominate(cache.pending["default/waiting"], "n1")
    if not still_pending:
        cache.delete("Pod", "default/waiting")
    decision = scheduler.find_node(cache.pending["default/new"])
    assert decision.node == node
    if node is None:
        assert decision.message == "0/1 nodes are available: 1 Insufficient cpu."


def _one_node() -> dict[str, object]:
    return node("n1", cpu="2")
