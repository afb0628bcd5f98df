"""Preemption and local volumes: no eviction makes a PV bigger, moves it to another node
or frees it from the claim it is bound to, so such nodes are never preemption targets."""

from __future__ import annotations

from typing import Any

from tests.support import node, pod, pv, pvc, storage_class
from tests.unit.preemption.builders import preempt, running

Raw = dict[str, Any]
NO_PV = "node(s) didn't find available persistent volumes to bind"


def claimant(name: str, claim: str, cpu: str = "2", priority: int = 100) -> Raw:
    return pod(name, cpu=cpu, priority=priority, claims=[claim])


def test_a_node_whose_only_free_local_pv_is_too_small_is_never_a_candidate() -> None:
    outcome = preempt(
        storage_class("local"),
        node("n1", cpu="2"),
        node("n2", cpu="2"),
        pv("small-n1", "5Gi", node_names=["n1"]),
        pv("big-n2", "20Gi", node_names=["n2"]),
        running("cheap", "n1", 1, cpu="2"),
        running("dearer", "n2", 50, cpu="2"),
        pvc("data", "10Gi"),
        claimant("high", "data"),
    )
    # n1's victim is cheaper, but no eviction gives n1 a 10Gi volume.
    assert outcome.node == "n2"
    assert [v.meta.key for v in outcome.victims] == ["default/dearer"]
    assert "n1" not in outcome.candidates
    assert outcome.rejected["n1"] == [NO_PV]


def test_a_node_with_a_fitting_wait_for_first_consumer_pv_and_low_pods_is_chosen() -> None:
    outcome = preempt(
        storage_class("local", mode="WaitForFirstConsumer"),
        node("n1", cpu="2"),
        pv("fits-n1", "10Gi", node_names=["n1"]),
        running("batch-1", "n1", 1, cpu="1"),
        running("batch-2", "n1", 1, cpu="1"),
        pvc("data", "10Gi"),
        claimant("high", "data"),
    )
    assert outcome.node == "n1"
    assert sorted(v.meta.key for v in outcome.victims) == ["default/batch-1", "default/batch-2"]


def test_evicting_a_pod_does_not_free_its_claims_pv() -> None:
    outcome = preempt(
        storage_class("local"),
        node("n1", cpu="2"),
        pv("only-n1", "10Gi", node_names=["n1"], claim=("default", "theirs"), phase="Bound"),
        pvc("theirs", "10Gi", volume_name="only-n1", bound=True),
        running("holder", "n1", 1, cpu="2", claims=["theirs"]),
        pvc("mine", "10Gi"),
        claimant("high", "mine"),
    )
    assert outcome.node is None
    assert outcome.victims == ()
    assert outcome.message == f"preemption: 0/1 nodes are available: 1 {NO_PV}."


def test_a_node_ruled_out_by_volumes_at_filter_time_is_not_helpful() -> None:
    # The node has room; only the volume is wrong: UnschedulableAndUnresolvable.
    outcome = preempt(
        storage_class("local"),
        node("n1", cpu="4"),
        pv("small-n1", "5Gi", node_names=["n1"]),
        running("cheap", "n1", 1, cpu="1"),
        pvc("data", "10Gi"),
        claimant("high", "data"),
    )
    assert outcome.node is None
    assert outcome.message == (
        "preemption: 0/1 nodes are available: 1 Preemption is not helpful for scheduling."
    )
