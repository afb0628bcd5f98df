"""One ``profiles[]`` entry → a ``ProfileSpec``: the same ``PolicySpec`` a legacy Policy
file gives (filters in order, weighted scores, plugin arguments), so one builder
(``profile_builder``) serves both formats and ``simulate`` runs what the daemon runs."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from volsched.scheduling.plugins.inter_pod_affinity import DEFAULT_HARD_POD_AFFINITY_WEIGHT
from volsched.scheduling.plugins.node_resources import BALANCED_RESOURCES
from volsched.scheduling.plugins.resource_scoring import ScoringStrategy
from volsched.scheduling.policy import PolicySpec, PredicateSpec, PrioritySpec
from volsched.scheduling.scheduler_config.catalog import (
    DEFAULT_BIND_TIMEOUT_SECONDS,
    DEFAULT_SCHEDULER_NAME,
    MULTI_POINT,
    PLUGINS,
    default_plugins,
)
from volsched.scheduling.scheduler_config.feature_gates import DEFAULT_GATES, FeatureGates
from volsched.scheduling.scheduler_config.fields import Where, items, mapping, name
from volsched.scheduling.scheduler_config.plugin_args import plugin_args
from volsched.scheduling.scheduler_config.plugin_sets import (
    check_derived_points,
    check_fixed_points,
    merge,
    parse_plugins,
    point_plugins,
)


@dataclass(frozen=True, slots=True)
class ProfileSpec:
    """One profile: the scheduler name it serves and what it runs.

    ``policy`` carries volsched's storage plugins where the profile leaves the defaults
    in place (the daemon always runs them: they skip pods without replicated volumes);
    ``policy_without_storage`` is the same profile for a cluster that runs no replicated
    storage, which is what ``simulate`` shows for such a snapshot, as it does without a
    configuration.
    """

    scheduler_name: str
    policy: PolicySpec
    bind_timeout_seconds: float = DEFAULT_BIND_TIMEOUT_SECONDS
    preemption: bool = True
    policy_without_storage: PolicySpec | None = None
    # The profile's own percentageOfNodesToScore, which overrides the top-level one.
    percentage_of_nodes_to_score: int | None = None

    def percentage(self, shared: int) -> int:
        """What this profile scores: its own value, else the configuration's."""
        own = self.percentage_of_nodes_to_score
        return shared if own is None else own

    def policy_for(self, with_storage: bool) -> PolicySpec:
        if with_storage or self.policy_without_storage is None:
            return self.policy
        return self.policy_without_storage


def _arguments(
    body: Mapping[str, Any], where: Where, gates: FeatureGates
) -> dict[str, dict[str, Any]]:
    arguments: dict[str, dict[str, Any]] = {}
    for index, item in enumerate(items(body.get("pluginConfig"), where.at("pluginConfig"))):
        at = where.at("pluginConfig").at(index)
        entry = mapping(item, at, ("name", "args"))
        plugin = name(entry.get("name"), at.at("name"))
        if plugin in arguments:
            raise at.at("name").fail(f"{plugin} is configured twice")
        arguments[plugin] = plugin_args(entry, at, plugin)
        shaped = plugin == "VolumeBinding" and "shape" in arguments[plugin]
        if shaped and not gates.storage_capacity_scoring:
            # As upstream's validation: a shape would take effect unseen the day the gate
            # is turned on.
            raise (
                at.at("args")
                .at("shape")
                .fail(
                    "unexpected field `shape`, remove it or turn on the feature gate "
                    "StorageCapacityScoring"
                )
            )
    return arguments


def _policy(
    body: Mapping[str, Any],
    where: Where,
    with_storage: bool,
    gates: FeatureGates,
    volsched_defaults: bool,
) -> tuple[PolicySpec, dict[str, dict[str, Any]], bool]:
    sets = parse_plugins(body.get("plugins"), where.at("plugins"))
    check_fixed_points(sets, where)
    multi = merge(default_plugins(with_storage, volsched_defaults), sets[MULTI_POINT])
    filters = point_plugins("filter", sets["filter"], multi)
    scores = point_plugins("score", sets["score"], multi)
    post_filters = point_plugins("postFilter", sets["postFilter"], multi)
    check_derived_points(sets, multi, filters, scores, where)
    arguments = _arguments(body, where, gates)

    predicates = []
    for plugin, _ in filters:
        kind = PLUGINS[plugin].filter_kind
        if kind is not None:
            predicates.append(PredicateSpec(plugin, kind, _filter_arguments(plugin, arguments)))
    priorities = []
    for plugin, weight in scores:
        kind = PLUGINS[plugin].score_kind
        if kind == "VolumeCapacityScore" and not gates.storage_capacity_scoring:
            # Upstream's PreScore skips every pod without the gate.
            continue
        if kind is not None:
            argument = _score_arguments(plugin, arguments)
            priorities.append(PrioritySpec(plugin, kind, weight or 1, argument))
    preemption_args = arguments.get("DefaultPreemption", {})
    policy = PolicySpec(
        tuple(predicates),
        tuple(priorities),
        hard_pod_affinity_weight=arguments.get("InterPodAffinity", {}).get(
            "hardPodAffinityWeight", DEFAULT_HARD_POD_AFFINITY_WEIGHT
        ),
        spread_defaults=arguments.get("PodTopologySpread", {}).get("spreadDefaults"),
        min_candidate_nodes=(
            preemption_args.get("minCandidateNodesPercentage", 10),
            preemption_args.get("minCandidateNodesAbsolute", 100),
        ),
    )
    preemption = any(plugin == "DefaultPreemption" for plugin, _ in post_filters)
    return policy, arguments, preemption


def compile_profile(
    data: Mapping[str, Any] | None,
    where: Where,
    default_name: str,
    with_storage: bool = True,
    gates: FeatureGates = DEFAULT_GATES,
    volsched_defaults: bool = False,
) -> ProfileSpec:
    """One ``profiles[]`` entry (None: kube-scheduler's default profile, or volsched's
    own with ``volsched_defaults``)."""
    body = mapping(
        data, where, ("schedulerName", "plugins", "pluginConfig", "percentageOfNodesToScore")
    )
    scheduler_name = name(body.get("schedulerName") or default_name, where.at("schedulerName"))
    policy, arguments, preemption = _policy(body, where, with_storage, gates, volsched_defaults)
    plain = _policy(body, where, False, gates, volsched_defaults)[0] if with_storage else None
    bind_timeout = arguments.get("VolumeBinding", {}).get(
        "bindTimeoutSeconds", DEFAULT_BIND_TIMEOUT_SECONDS
    )
    return ProfileSpec(
        scheduler_name,
        policy,
        bind_timeout_seconds=bind_timeout,
        preemption=preemption,
        policy_without_storage=plain if plain != policy else None,
    )


def _filter_arguments(plugin: str, arguments: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    args = arguments.get(plugin, {})
    if plugin == "NodeResourcesFit":
        return {k: v for k, v in args.items() if k in ("ignoredResources", "ignoredResourceGroups")}
    if plugin == "NodeAffinity" and "addedAffinity" in args:
        return {"addedAffinity": args["addedAffinity"]}
    return {}


def _score_arguments(plugin: str, arguments: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    args = arguments.get(plugin, {})
    if plugin == "NodeResourcesFit":
        return {"scoringStrategy": args.get("scoringStrategy", ScoringStrategy())}
    if plugin == "VolumeBinding" and "shape" in args:
        return {"shape": tuple((p.utilization, p.score) for p in args["shape"])}
    if plugin == "NodeAffinity" and "addedAffinity" in args:
        return {"addedAffinity": args["addedAffinity"]}
    if plugin == "NodeResourcesBalancedAllocation" and args.get(
        "resources", BALANCED_RESOURCES
    ) != (BALANCED_RESOURCES):
        return {"resources": args["resources"]}
    if plugin == "InterPodAffinity" and args.get("ignorePreferredTermsOfExistingPods"):
        return {"ignorePreferredTermsOfExistingPods": True}
    return {}


def default_profile(
    with_storage: bool,
    scheduler_name: str = DEFAULT_SCHEDULER_NAME,
    gates: FeatureGates = DEFAULT_GATES,
) -> ProfileSpec:
    """volsched's default profile: kube-scheduler's default plugin set, volsched's storage
    preference (PrioritizeVolumes), and the storage plugins."""
    profile = compile_profile(
        None, Where("(default profile)"), scheduler_name, with_storage, gates, True
    )
    return replace(
        profile,
        policy=replace(profile.policy, is_default=True),
        policy_without_storage=None,
    )
