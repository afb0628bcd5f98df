"""The KubeSchedulerConfiguration loader against arbitrary documents: whatever the shape,
it either compiles the profiles or says what is wrong in one line naming the document —
never a traceback. Documents are grown from real fields and plugin names, so most of the
cases reach the plugin sets and arguments rather than stopping at the first key."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from volsched.cache.errors import ConfigError
from volsched.scheduling.scheduler_config import (
    EXTENSION_POINTS,
    PLUGINS,
    REMOVED_IN_V1,
    parse_scheduler_configuration,
)

NAMES = [
    *sorted(PLUGINS),
    *REMOVED_IN_V1,
    *["*", "Coscheduling", "DynamicResources", "", "line\nbreak", "next\x85line"],
]
KEYS = [
    "name",
    "weight",
    "enabled",
    "disabled",
    "args",
    "kind",
    "type",
    "resources",
    "shape",
    "utilization",
    "score",
    "scoringStrategy",
    "requestedToCapacityRatio",
    "bindTimeoutSeconds",
    "hardPodAffinityWeight",
    "ignorePreferredTermsOfExistingPods",
    "defaultingType",
    "defaultConstraints",
    "addedAffinity",
    "minCandidateNodesPercentage",
    "minCandidateNodesAbsolute",
    "leaseDuration",
    "resourceLock",
    "resourceName",
]
scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**64), max_value=2**64),
    st.floats(allow_nan=True),
    st.sampled_from([*NAMES, "LeastAllocated", "MostAllocated", "List", "System", "0s", "15s"]),
    st.text(max_size=8),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.sampled_from(KEYS), inner, max_size=4),
    ),
    max_leaves=20,
)
plugin_entry = st.fixed_dictionaries(
    {"name": st.sampled_from(NAMES)},
    optional={"weight": st.one_of(st.integers(-5, 20000), values)},
)
plugin_set = st.fixed_dictionaries(
    {},
    optional={
        "enabled": st.lists(plugin_entry, max_size=3),
        "disabled": st.lists(plugin_entry, max_size=3),
    },
)
profile = st.fixed_dictionaries(
    {},
    optional={
        "schedulerName": st.one_of(st.sampled_from(["a", "b", ""]), values),
        "plugins": st.dictionaries(st.sampled_from(EXTENSION_POINTS), plugin_set, max_size=4),
        "pluginConfig": st.lists(
            st.fixed_dictionaries({"name": st.sampled_from(NAMES)}, optional={"args": values}),
            max_size=3,
        ),
    },
)
document = st.fixed_dictionaries(
    {
        "apiVersion": st.sampled_from(
            ["kubescheduler.config.k8s.io/v1"] * 6 + ["kubescheduler.config.k8s.io/v1beta3", "v1"]
        ),
        "kind": st.just("KubeSchedulerConfiguration"),
    },
    optional={
        "profiles": st.one_of(st.lists(profile, max_size=3), values),
        "leaderElection": values,
        "parallelism": values,
        "podInitialBackoffSeconds": values,
        "podMaxBackoffSeconds": values,
        "percentageOfNodesToScore": values,
        "clientConnection": values,
    },
)


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document)
def test_any_document_compiles_or_fails_in_one_line(data: dict[str, Any]) -> None:
    try:
        config = parse_scheduler_configuration(data, "fuzz.yaml")
    except ConfigError as exc:
        text = str(exc)
        assert text.startswith("fuzz.yaml: ")
        assert len(text.splitlines()) == 1, text
    else:
        assert config.profiles
