"""KubeSchedulerConfiguration profiles: upstream's plugin-set rules, arguments, errors.

The merge rows restate upstream's mergePlugins / multi-point expansion cases
(pkg/scheduler/apis/config/v1/default_plugins_test.go, framework runtime tests): a
disabled default disappears, ``*`` clears a point, an enabled default is re-weighted in
place, a plugin enabled at a specific point runs there before the multi-point ones.
"""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import ConfigError
from volsched.scheduling.plugins.resource_scoring import MOST_ALLOCATED, ScoringStrategy
from volsched.scheduling.profile_builder import PluginFactory, build_profile
from volsched.scheduling.scheduler_config import (
    ProfileSpec,
    default_profile,
    parse_scheduler_configuration,
)
from volsched.scheduling.scheduler_config.feature_gates import DEFAULT_GATES, FeatureGates

HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
DEFAULT_FILTERS = [
    "NodeUnschedulable",
    "NodeName",
    "TaintToleration",
    "NodeAffinity",
    "NodePorts",
    "NodeResourcesFit",
    "VolumeRestrictions",
    "NodeVolumeLimits",
    "VolumeBinding",
    "VolumeZone",
    "PodTopologySpread",
    "InterPodAffinity",
    "DynamicResources",
]
DEFAULT_SCORES = [
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodeResourcesFit", 1),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("NodeResourcesBalancedAllocation", 1),
    ("ImageLocality", 1),
]
# volsched's own default profile adds its storage preference to kube-scheduler's.
VOLSCHED_SCORES = [*DEFAULT_SCORES, ("PrioritizeVolumes", 1)]


def one_profile(
    body: str, with_storage: bool = False, gates: FeatureGates = DEFAULT_GATES
) -> ProfileSpec:
    config = parse_scheduler_configuration(
        yaml.safe_load(HEAD + body), "sched.yaml", with_storage=with_storage, gates=gates
    )
    (profile,) = config.profiles
    return profile


def filters(profile: ProfileSpec) -> list[str]:
    return [predicate.name for predicate in profile.policy.predicates]


def weighted(profile: ProfileSpec) -> list[tuple[str, int]]:
    return [(priority.name, priority.weight) for priority in profile.policy.priorities]


def test_default_profile_is_upstreams_default_set() -> None:
    profile = default_profile(with_storage=False)
    assert filters(profile) == DEFAULT_FILTERS
    assert weighted(profile) == VOLSCHED_SCORES
    assert profile.preemption
    assert profile.policy.is_default
    storage = default_profile(with_storage=True)
    assert filters(storage) == [*DEFAULT_FILTERS, "StorageNodeReady", "VolumeLocality"]
    assert weighted(storage) == [*DEFAULT_SCORES, ("VolumeLocality", 1), ("PrioritizeVolumes", 1)]


def test_volume_binding_scores_only_with_the_storage_capacity_scoring_gate() -> None:
    """1.36: VolumeBinding's PreScore skips every pod unless StorageCapacityScoring is on,
    and its shape may only be given with the gate."""
    gated = parse_scheduler_configuration(
        yaml.safe_load(HEAD + "profiles: [{schedulerName: s}]"),
        "sched.yaml",
        with_storage=False,
        gates=FeatureGates(storage_capacity_scoring=True),
    )
    (profile,) = gated.profiles
    assert ("VolumeBinding", 1) in weighted(profile)
    shape = (
        "profiles: [{schedulerName: s, pluginConfig: [{name: VolumeBinding, args: "
        "{shape: [{utilization: 0, score: 0}, {utilization: 100, score: 10}]}}]}]"
    )
    with pytest.raises(ConfigError) as refused:
        one_profile(shape)
    assert str(refused.value) == (
        "sched.yaml: profiles[0].pluginConfig[0].args.shape: unexpected field `shape`, "
        "remove it or turn on the feature gate StorageCapacityScoring"
    )


def test_prioritize_volumes_joins_a_configured_profile_only_when_enabled() -> None:
    enabled = one_profile(
        "profiles: [{schedulerName: s, plugins: {multiPoint: {enabled: "
        "[{name: PrioritizeVolumes, weight: 3}]}}}]"
    )
    assert ("PrioritizeVolumes", 3) in weighted(enabled)
    assert "PrioritizeVolumes" not in [name for name, _ in weighted(one_profile("profiles: []"))]
    disabled = default_profile(with_storage=False)
    assert ("PrioritizeVolumes", 1) in weighted(disabled)


def test_a_profile_without_plugins_is_the_default() -> None:
    profile = one_profile("profiles: [{schedulerName: fast}]")
    assert profile.scheduler_name == "fast"
    assert filters(profile) == DEFAULT_FILTERS
    assert weighted(profile) == DEFAULT_SCORES


@pytest.mark.parametrize(
    ("plugins", "expected_filters", "expected_scores"),
    [
        pytest.param(
            "multiPoint: {disabled: [{name: TaintToleration}]}",
            [f for f in DEFAULT_FILTERS if f != "TaintToleration"],
            [s for s in DEFAULT_SCORES if s[0] != "TaintToleration"],
            id="a default disabled at multiPoint leaves every point",
        ),
        pytest.param(
            "score: {disabled: [{name: TaintToleration}]}",
            DEFAULT_FILTERS,
            [s for s in DEFAULT_SCORES if s[0] != "TaintToleration"],
            id="disabled at score only, it still filters",
        ),
        pytest.param(
            "score: {disabled: [{name: '*'}]}",
            DEFAULT_FILTERS,
            [],
            id="star clears a point",
        ),
        pytest.param(
            "multiPoint: {enabled: [{name: NodeAffinity, weight: 7}]}",
            DEFAULT_FILTERS,
            [("TaintToleration", 3), ("NodeAffinity", 7), *DEFAULT_SCORES[2:]],
            id="an enabled default is re-weighted in place",
        ),
        pytest.param(
            "score: {enabled: [{name: NodeResourcesBalancedAllocation, weight: 5}]}",
            DEFAULT_FILTERS,
            [
                ("NodeResourcesBalancedAllocation", 5),
                *[s for s in DEFAULT_SCORES if s[0] != "NodeResourcesBalancedAllocation"],
            ],
            id="a plugin enabled at a specific point runs there first, with its weight",
        ),
        pytest.param(
            "score: {disabled: [{name: '*'}], enabled: [{name: NodeResourcesFit, weight: 2}, {name: SelectorSpread}]}",
            DEFAULT_FILTERS,
            [("NodeResourcesFit", 2), ("SelectorSpread", 1)],
            id="only the enabled scores after star, default weight 1",
        ),
        pytest.param(
            "multiPoint: {disabled: [{name: '*'}], enabled: [{name: NodeResourcesFit}, {name: VolumeBinding}]}",
            ["NodeResourcesFit", "VolumeBinding"],
            [("NodeResourcesFit", 1)],
            id="a minimal multiPoint set",
        ),
        pytest.param(
            "filter: {enabled: [{name: VolumeBinding}]}",
            ["VolumeBinding", *[f for f in DEFAULT_FILTERS if f != "VolumeBinding"]],
            DEFAULT_SCORES,
            id="a default listed at filter moves to the front of filter only",
        ),
        pytest.param(
            "multiPoint: {disabled: [{name: EBSLimits}, {name: NodeDeclaredFeatures}]}",
            DEFAULT_FILTERS,
            DEFAULT_SCORES,
            id="disabling upstream plugins volsched does not run is harmless",
        ),
        pytest.param(
            "multiPoint: {disabled: [{name: DynamicResources}]}",
            [f for f in DEFAULT_FILTERS if f != "DynamicResources"],
            DEFAULT_SCORES,
            id="DynamicResources disabled: pods with ResourceClaims are placed as any other",
        ),
    ],
)
def test_plugin_sets(
    plugins: str, expected_filters: list[str], expected_scores: list[tuple[str, int]]
) -> None:
    profile = one_profile(f"profiles:\n- plugins:\n    {plugins}\n")
    assert filters(profile) == expected_filters
    assert weighted(profile) == expected_scores


def test_preemption_follows_default_preemption() -> None:
    assert one_profile("profiles: [{}]").preemption
    disabled = one_profile("profiles: [{plugins: {postFilter: {disabled: [{name: '*'}]}}}]")
    assert not disabled.preemption


def test_plugin_arguments_reach_the_plugins() -> None:
    profile = one_profile(
        """
profiles:
- pluginConfig:
  - name: NodeResourcesFit
    args:
      kind: NodeResourcesFitArgs
      ignoredResources: [example.com/fpga]
      scoringStrategy:
        type: MostAllocated
        resources: [{name: cpu, weight: 3}, {name: memory, weight: 1}]
  - name: VolumeBinding
    args: {bindTimeoutSeconds: 90, shape: [{utilization: 0, score: 10}, {utilization: 100, score: 0}]}
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [storage]}]}]
""",
        gates=FeatureGates(storage_capacity_scoring=True),
    )
    assert profile.bind_timeout_seconds == 90
    by_name: dict[str, Any] = {p.name: p for p in profile.policy.priorities}
    assert by_name["NodeResourcesFit"].argument["scoringStrategy"] == ScoringStrategy(
        MOST_ALLOCATED, (("cpu", 3), ("memory", 1))
    )
    assert by_name["VolumeBinding"].argument["shape"] == ((0, 10), (100, 0))
    fit = next(p for p in profile.policy.predicates if p.name == "NodeResourcesFit")
    assert fit.argument["ignoredResources"] == ("example.com/fpga",)
    affinity = next(p for p in profile.policy.predicates if p.name == "NodeAffinity")
    assert affinity.argument["addedAffinity"].required is not None


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "profiles: [{plugins: {filter: {enabled: [{name: Bogus}]}}}]",
            'profiles[0].plugins.filter.enabled[0].name: plugin "Bogus" does not exist',
        ),
        (
            "profiles: [{plugins: {filter: {enabled: [{name: NodeResourcesBalancedAllocation}]}}}]",
            "NodeResourcesBalancedAllocation does not extend the filter point",
        ),
        (
            "profiles: [{plugins: {score: {enabled: [{name: NodePorts, weight: 2}]}}}]",
            "profiles[0].plugins.score.enabled[0].name: NodePorts does not extend the score point",
        ),
        (
            "profiles: [{plugins: {filter: {enabled: [{name: NodeDeclaredFeatures}]}}}]",
            "NodeDeclaredFeatures is not available: volsched does not read node-declared features",
        ),
        (
            "profiles: [{plugins: {reserve: {disabled: [{name: VolumeBinding}]}}}]",
            "profiles[0].plugins.reserve.disabled[0].name: volsched runs VolumeBinding's Reserve",
        ),
        (
            "profiles: [{plugins: {preEnqueue: {disabled: [{name: SchedulingGates}]}}}]",
            "SchedulingGates cannot be disabled",
        ),
        (
            "profiles: [{schedulerName: a}, {schedulerName: a}]",
            "profiles[1].schedulerName: 'a' is used by two profiles",
        ),
        (
            "profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: Fancy}}}]}]",
            "profiles[0].pluginConfig[0].args.scoringStrategy.type: must be one of LeastAllocated",
        ),
        (
            "profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {resources: [{name: cpu, weight: 101}]}}}]}]",
            "scoringStrategy.resources[0].weight: must be between 1 and 100, not 101",
        ),
        (
            "profiles: [{pluginConfig: [{name: NodeResourcesFit, args: {scoringStrategy: {type: RequestedToCapacityRatio}}}]}]",
            "requestedToCapacityRatio.shape: is required for RequestedToCapacityRatio",
        ),
        (
            "profiles: [{pluginConfig: [{name: VolumeBinding, args: {kind: NodeAffinityArgs}}]}]",
            "profiles[0].pluginConfig[0].args.kind: must be VolumeBindingArgs",
        ),
        (
            "profiles: [{pluginConfig: [{name: VolumeBinding, args: {bindTimeoutSeconds: -1}}]}]",
            "args.bindTimeoutSeconds: must be between 0 and 9223372036854775807, not -1",
        ),
        (
            "profiles: [{pluginConfig: [{name: NodeAffinity, args: {addedAffinity: {requiredDuringSchedulingIgnoredDuringExecution: {nodeSelectorTerms: [{matchExpressions: [{key: a, operator: Near}]}]}}}}]}]",
            "args.addedAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].operator",
        ),
        (
            "profiles: [{pluginConfig: [{name: NodePorts, args: {x: 1}}]}]",
            "profiles[0].pluginConfig[0].args: NodePorts takes no arguments",
        ),
        ("profiles: [{plugins: {filter: {enabled: 3}}}]", "plugins.filter.enabled: must be a list"),
        ("profiles: [{pluginz: {}}]", "profiles[0].pluginz: unknown field"),
        ("extenders: [{urlPrefix: ftp://x}]", "extenders[0].urlPrefix: must be an http:// or"),
        ("percentageOfNodesToScore: 101", "percentageOfNodesToScore: must be between 0 and 100"),
    ],
)
def test_mistakes_name_the_document_profile_and_field(body: str, message: str) -> None:
    with pytest.raises(ConfigError) as error:
        parse_scheduler_configuration(yaml.safe_load(HEAD + body), "sched.yaml")
    assert str(error.value).startswith("sched.yaml: ")
    assert message in str(error.value)


def test_wrong_api_version() -> None:
    with pytest.raises(
        ConfigError, match=r"apiVersion: no kind .*kubescheduler.config.k8s.io/v1beta3"
    ):
        parse_scheduler_configuration(
            {
                "apiVersion": "kubescheduler.config.k8s.io/v1beta3",
                "kind": "KubeSchedulerConfiguration",
            },
            "sched.yaml",
        )


def test_top_level_fields() -> None:
    config = parse_scheduler_configuration(
        yaml.safe_load(
            HEAD
            + """
percentageOfNodesToScore: 30
podInitialBackoffSeconds: 2
podMaxBackoffSeconds: 20
parallelism: 8
leaderElection: {leaderElect: true, leaseDuration: 20s, resourceName: volsched-a}
clientConnection: {kubeconfig: /etc/volsched/kubeconfig}
profiles: [{schedulerName: a}, {schedulerName: b}]
"""
        ),
        "sched.yaml",
    )
    assert [p.scheduler_name for p in config.profiles] == ["a", "b"]
    assert config.percentage_of_nodes_to_score == 30
    assert (config.pod_initial_backoff_seconds, config.pod_max_backoff_seconds) == (2, 20)
    assert config.parallelism == 8
    assert config.leader_election.resource_name == "volsched-a"
    assert config.leader_election.lease_duration_seconds == 20
    assert config.kubeconfig == "/etc/volsched/kubeconfig"


def test_scoring_arguments_reach_the_built_plugins() -> None:
    profile = one_profile(
        """
profiles:
- pluginConfig:
  - name: InterPodAffinity
    args: {ignorePreferredTermsOfExistingPods: true, hardPodAffinityWeight: 0}
  - name: NodeResourcesBalancedAllocation
    args: {resources: [{name: cpu}, {name: memory, weight: 0}, {name: example.com/gpu, weight: 1}]}
"""
    )
    built = build_profile(profile.policy, PluginFactory(ClusterCache()))
    by_name: dict[str, Any] = {p.policy_name: p.plugin for p in built.priorities}
    affinity = by_name["InterPodAffinity"]
    assert affinity.ignore_preferred_terms_of_existing_pods
    assert affinity.hard_pod_affinity_weight == 0
    assert by_name["NodeResourcesBalancedAllocation"].resources == (
        "cpu",
        "memory",
        "example.com/gpu",
    )
