"""DefaultPreemptionArgs are read and honoured: the dry run stops after
minCandidateNodesPercentage % of the nodes, at least minCandidateNodesAbsolute of them
(upstream's calculateNumCandidates), and both zero is refused as upstream refuses it."""

from __future__ import annotations

import random
from typing import Any

import pytest

from tests.support import cluster, node
from tests.unit.preemption.builders import preemptor, running
from volsched.cache.errors import ConfigError
from volsched.scheduling.framework.runner import Scheduler
from volsched.scheduling.preemption.choosing import candidates_wanted
from volsched.scheduling.preemption.post_filter import Preemptor
from volsched.scheduling.profile_builder import PluginFactory, build_profile
from volsched.scheduling.scheduler_config import parse_scheduler_configuration

Raw = dict[str, Any]


@pytest.mark.parametrize(
    ("nodes", "percentage", "absolute", "wanted"),
    [
        (5000, 10, 100, 500),  # upstream's defaults on a large cluster
        (300, 10, 100, 100),  # at least the absolute number
        (50, 10, 100, 50),  # never more than there are
        (300, 0, 5, 5),
        (300, 50, 0, 150),
    ],
)
def test_how_many_candidates_the_dry_run_looks_for(
    nodes: int, percentage: int, absolute: int, wanted: int
) -> None:
    assert candidates_wanted(nodes, percentage, absolute) == wanted


def configuration(args: Raw | None) -> Raw:
    profile: Raw = {"schedulerName": "volsched"}
    if args is not None:
        profile["pluginConfig"] = [{"name": "DefaultPreemption", "args": args}]
    return {
        "apiVersion": "kubescheduler.config.k8s.io/v1",
        "kind": "KubeSchedulerConfiguration",
        "profiles": [profile],
    }


@pytest.mark.parametrize(
    ("args", "candidates"),
    [
        (None, 6),
        ({"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 2}, 2),
        ({"minCandidateNodesPercentage": 50, "minCandidateNodesAbsolute": 1}, 3),
    ],
)
def test_the_arguments_bound_the_dry_run(args: Raw | None, candidates: int) -> None:
    config = parse_scheduler_configuration(
        configuration(args), "config.yaml", with_storage=False, default_name="volsched"
    )
    objects: list[Raw] = []
    for index in range(6):
        objects += [node(f"n{index}", cpu="2"), running(f"low-{index}", f"n{index}", 1, cpu="2")]
    cache = cluster(*objects, preemptor(cpu="2"))
    profile = build_profile(config.profiles[0].policy, PluginFactory(cache))
    scheduler = Scheduler(cache, profile, random.Random(0))
    decision = scheduler.find_node(cache.pending["default/high"])
    outcome = Preemptor(scheduler).post_filter(decision)
    assert outcome is not None and outcome.node is not None
    assert len(outcome.candidates) == candidates


def test_both_zero_is_refused_naming_the_field() -> None:
    zero = {"minCandidateNodesPercentage": 0, "minCandidateNodesAbsolute": 0}
    with pytest.raises(ConfigError, match=r"minCandidateNodesPercentage.*cannot be zero"):
        parse_scheduler_configuration(
            configuration(zero), "config.yaml", with_storage=False, default_name="volsched"
        )
