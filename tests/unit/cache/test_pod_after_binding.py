"""A pod's binding event read from metadata and status alone: whatever the change,
``parse_pod_after`` gives exactly what parsing the whole pod gives, and it reuses the
spec's parse only when the spec (apart from nodeName) and the labels are unchanged."""

from __future__ import annotations

import copy
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from tests.support import pod
from volsched.cache.objects.core import parse_pod, parse_pod_after

Raw = dict[str, Any]

SPECS: list[Raw] = [
    {},
    {"nodeSelector": {"disk": "ssd"}},
    {"tolerations": [{"key": "spot", "operator": "Exists"}]},
    {"priority": 1000, "preemptionPolicy": "Never"},
    {
        "topologySpreadConstraints": [
            {
                "maxSkew": 1,
                "topologyKey": "zone",
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": {"app": "web"}},
                "matchLabelKeys": ["tier"],
            }
        ]
    },
    {"schedulingGates": [{"name": "wait"}]},
]
STATUSES: list[Raw] = [
    {},
    {"phase": "Running", "startTime": "2026-01-02T00:00:00Z"},
    {"nominatedNodeName": "n2"},
    {"conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}]},
    {"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "Preempted"}]},
]
LABELS = [{"app": "web"}, {"app": "web", "tier": "a"}, {"app": "db", "tier": "b"}]


def variant(spec: Raw, status: Raw, labels: Raw, cpu: str, node: str | None, rv: str) -> Raw:
    raw = pod("p", cpu=cpu, labels=labels, spec=copy.deepcopy(spec), node_name=node)
    raw["status"] = copy.deepcopy(status)
    raw["metadata"]["resourceVersion"] = rv
    return raw


VARIANTS = st.builds(
    variant,
    st.sampled_from(SPECS),
    st.sampled_from(STATUSES),
    st.sampled_from(LABELS),
    st.sampled_from(["1", "2"]),
    st.sampled_from([None, "n1", "n2"]),
    st.sampled_from(["5", "6"]),
)


@given(VARIANTS, VARIANTS)
def test_reading_after_a_previous_pod_equals_a_whole_parse(before: Raw, after: Raw) -> None:
    previous = parse_pod(before)
    assert parse_pod_after(after, previous, before["spec"]) == parse_pod(after)


def test_a_binding_reuses_the_spec_and_reads_the_rest() -> None:
    before = variant(SPECS[4], {}, LABELS[1], "1", None, "5")
    after = variant(SPECS[4], STATUSES[1], LABELS[1], "1", "n1", "6")
    previous = parse_pod(before)
    bound = parse_pod_after(after, previous, before["spec"])
    assert bound == parse_pod(after)
    assert bound.node_name == "n1" and bound.phase == "Running"
    assert bound.meta.resource_version == 6
    # Taken from the previous parse, not parsed again.
    assert bound.requests is previous.requests
    assert bound.spread_constraints is previous.spread_constraints


def test_a_changed_label_parses_the_whole_pod() -> None:
    """matchLabelKeys reads the pod's own labels: a relabelled pod's constraints differ."""
    before = variant(SPECS[4], {}, LABELS[1], "1", None, "5")
    after = variant(SPECS[4], {}, LABELS[2], "1", "n1", "6")
    previous = parse_pod(before)
    bound = parse_pod_after(after, previous, before["spec"])
    assert bound == parse_pod(after)
    assert bound.spread_constraints != previous.spread_constraints
