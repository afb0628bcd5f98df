"""Policy files: accepted forms, the default policy, and one message per mistake."""

from __future__ import annotations

from typing import Any

import pytest

from volsched.cache.errors import ConfigError
from volsched.scheduling.policy import default_policy, parse_policy


def test_full_policy_with_configurable_entries_and_aliases() -> None:
    spec = parse_policy(
        {
            "kind": "Policy",
            "apiVersion": "v1",
            "predicates": [
                {"name": "PodFitsPorts"},
                {"name": "RegionAffinity", "argument": {"serviceAffinity": {"labels": ["region"]}}},
                {
                    "name": "HasRack",
                    "argument": {"labelsPresence": {"labels": ["rack"], "presence": True}},
                },
            ],
            "priorities": [
                {"name": "ServiceSpreadingPriority", "weight": 2},
                {
                    "name": "ZoneSpread",
                    "weight": 3,
                    "argument": {"serviceAntiAffinity": {"label": "zone"}},
                },
                {
                    "name": "PreferSSD",
                    "weight": 1,
                    "argument": {"labelPreference": {"label": "ssd", "presence": True}},
                },
                {
                    "name": "PrioritizeVolumes",
                    "weight": 1,
                    "argument": {
                        "shape": [{"utilization": 0, "score": 10}, {"utilization": 100, "score": 0}]
                    },
                },
            ],
        },
        "policy.json",
    )
    assert [(p.name, p.kind) for p in spec.predicates] == [
        ("PodFitsPorts", "PodFitsHostPorts"),
        ("RegionAffinity", "serviceAffinity"),
        ("HasRack", "labelsPresence"),
    ]
    assert [(p.name, p.kind, p.weight) for p in spec.priorities] == [
        ("ServiceSpreadingPriority", "SelectorSpreadPriority", 2),
        ("ZoneSpread", "serviceAntiAffinity", 3),
        ("PreferSSD", "labelPreference", 1),
        ("PrioritizeVolumes", "PrioritizeVolumes", 1),
    ]
    assert spec.priorities[3].argument == {"shape": ((0, 10), (100, 0))}


def test_version_key_is_accepted_too() -> None:
    assert parse_policy({"kind": "Policy", "version": "v1"}, "p").predicates == ()


def test_default_policy_order() -> None:
    spec = default_policy(with_storage=False)
    assert [p.name for p in spec.predicates] == [
        "PodFitsHostPorts",
        "PodFitsResources",
        "NoDiskConflict",
        "MatchNodeSelector",
        "HostName",
        "CheckNodeUnschedulable",
        "PodToleratesNodeTaints",
        "CheckVolumeBinding",
        "NoVolumeZoneConflict",
        "MaxCSIVolumeCountPred",
    ]
    assert [(p.name, p.weight) for p in spec.priorities] == [
        ("LeastRequestedPriority", 1),
        ("BalancedResourceAllocation", 1),
        ("SelectorSpreadPriority", 1),
        ("PrioritizeVolumes", 1),
    ]
    storage = default_policy(with_storage=True)
    assert [p.name for p in storage.predicates][-2:] == ["StorageNodeReady", "CheckVolumeLocality"]
    assert storage.priorities[-1].name == "VolumeLocality"


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "p.json: a policy must be a JSON object"),
        ({"kind": "Config"}, "p.json: kind: must be Policy, not 'Config'"),
        ({"apiVersion": "v2"}, "p.json: apiVersion: must be v1, not 'v2'"),
        ({"predicate": []}, "p.json: predicate: unknown key"),
        ({"predicates": {}}, "p.json: predicates: must be a list"),
        (
            {"predicates": [{"name": "Nope"}]},
            "p.json: predicates[0] (Nope): unknown predicate 'Nope'",
        ),
        ({"predicates": [{}]}, "p.json: predicates[0].name: is required"),
        (
            {"priorities": [{"name": "EqualPriority", "weight": 0}]},
            "p.json: priorities[0] (EqualPriority).weight: must be a positive integer, not 0",
        ),
        (
            {"priorities": [{"name": "EqualPriority", "weight": -2}]},
            "p.json: priorities[0] (EqualPriority).weight: must be a positive integer, not -2",
        ),
        (
            {"priorities": [{"name": "EqualPriority"}]},
            "p.json: priorities[0] (EqualPriority).weight: must be a positive integer",
        ),
        (
            {"priorities": [{"name": "EqualPriority", "weight": 1.5}]},
            "p.json: priorities[0] (EqualPriority).weight: must be a positive integer",
        ),
        (
            {"predicates": [{"name": "serviceAffinity"}]},
            "p.json: predicates[0] (serviceAffinity): predicate 'serviceAffinity' needs an argument",
        ),
        (
            {"predicates": [{"name": "X", "argument": {"serviceAffinity": {}}}]},
            "p.json: predicates[0] (X).argument.serviceAffinity.labels: must be a non-empty list",
        ),
        (
            {"predicates": [{"name": "X", "argument": {"labelsPresence": {"labels": ["a"]}}}]},
            "p.json: predicates[0] (X).argument.labelsPresence.presence: must be true or false",
        ),
        (
            {
                "priorities": [
                    {"name": "X", "weight": 1, "argument": {"labelPreference": {"presence": True}}}
                ]
            },
            "p.json: priorities[0] (X).argument.labelPreference.label: must be a label name",
        ),
        (
            {"priorities": [{"name": "X", "weight": 1, "argument": {"bogus": {}}}]},
            "p.json: priorities[0] (X): unknown priority argument 'bogus'",
        ),
        (
            {"predicates": [{"name": "HostName"}, {"name": "HostName"}]},
            "p.json: predicates[1] (HostName): appears twice",
        ),
        (
            {"predicates": [{"name": "HostName", "weight": 1}]},
            "p.json: predicates[0] (HostName): unknown key 'weight'",
        ),
        (
            {
                "priorities": [
                    {
                        "name": "PrioritizeVolumes",
                        "weight": 1,
                        "argument": {
                            "shape": [
                                {"utilization": 50, "score": 1},
                                {"utilization": 10, "score": 2},
                            ]
                        },
                    }
                ]
            },
            "p.json: priorities[0] (PrioritizeVolumes).argument.shape[1].utilization: must increase",
        ),
        (
            {"priorities": [{"name": "LeastRequestedPriority", "weight": 10**30}]},
            "p.json: priorities[0] (LeastRequestedPriority).weight: must be at most 1000",
        ),
    ],
)
def test_each_mistake_is_one_message_naming_the_entry(data: Any, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_policy(data, "p.json")
    assert str(caught.value).startswith(message)
