"""KubeSchedulerConfiguration (``kubescheduler.config.k8s.io/v1``) → volsched profiles.

Each ``profiles[]`` entry compiles to the same ``PolicySpec`` a legacy Policy file gives —
filters in order, weighted scores, plugin arguments — so one builder
(``profile_builder``) serves both formats and ``simulate`` runs what the daemon runs.

Plugin sets follow upstream's rules: the default ``multiPoint`` set is merged with the
profile's (``disabled`` removes, ``*`` removes all, an ``enabled`` plugin that is already
a default replaces it in place, others are appended); then each plugin joins every
extension point it implements unless that point disables it, and a plugin enabled at a
specific point (``filter``, ``score``) runs before the multi-point ones there, with that
point's weight. volsched's own storage plugins (``StorageNodeReady``,
``VolumeLocality``) use the same vocabulary.

Every mistake is one ``ConfigError`` naming the document, the profile and the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from volsched.cache.errors import ConfigError, ObjectError
from volsched.cache.objects.fields import Fields, shown
from volsched.cache.objects.selectors import parse_node_affinity
from volsched.scheduling.extender_config import ExtenderSpec, parse_extenders
from volsched.scheduling.plugins.inter_pod_affinity import DEFAULT_HARD_POD_AFFINITY_WEIGHT
from volsched.scheduling.plugins.node_affinity import AddedAffinity
from volsched.scheduling.plugins.pod_topology_spread import (
    LIST,
    SYSTEM,
    SYSTEM_DEFAULT_CONSTRAINTS,
    DefaultConstraint,
)
from volsched.scheduling.plugins.resource_scoring import (
    DEFAULT_RESOURCES,
    REQUESTED_TO_CAPACITY_RATIO,
    STRATEGIES,
    ScoringStrategy,
)
from volsched.scheduling.policy import PolicySpec, PredicateSpec, PrioritySpec, parse_shape
from volsched.scheduling.volumes.scoring import ShapePoint

API_VERSION = "kubescheduler.config.k8s.io/v1"
KIND = "KubeSchedulerConfiguration"
DEFAULT_SCHEDULER_NAME = "volsched"
DEFAULT_BIND_TIMEOUT_SECONDS = 600.0

MULTI_POINT = "multiPoint"
EXTENSION_POINTS = (
    "preEnqueue",
    "queueSort",
    "preFilter",
    "filter",
    "postFilter",
    "preScore",
    "score",
    "reserve",
    "permit",
    "preBind",
    "bind",
    "postBind",
    MULTI_POINT,
)


@dataclass(frozen=True, slots=True)
class PluginKind:
    """What a plugin name means here: the builder's filter and score kinds (the legacy
    Policy names ``profile_builder`` knows) and the extension points it implements."""

    points: frozenset[str]
    filter_kind: str | None = None
    score_kind: str | None = None


def _kind(points: str, filter_kind: str | None = None, score_kind: str | None = None) -> PluginKind:
    return PluginKind(frozenset(points.split()), filter_kind, score_kind)


PLUGINS: dict[str, PluginKind] = {
    "SchedulingGates": _kind("preEnqueue"),
    "PrioritySort": _kind("queueSort"),
    "NodeUnschedulable": _kind("filter", "CheckNodeUnschedulable"),
    "NodeName": _kind("filter", "HostName"),
    "TaintToleration": _kind(
        "filter preScore score", "PodToleratesNodeTaints", "TaintTolerationPriority"
    ),
    "NodeAffinity": _kind(
        "preFilter filter preScore score", "MatchNodeSelector", "NodeAffinityPriority"
    ),
    "NodePorts": _kind("preFilter filter", "PodFitsHostPorts"),
    "NodeResourcesFit": _kind(
        "preFilter filter preScore score", "PodFitsResources", "NodeResourcesFitScore"
    ),
    "VolumeRestrictions": _kind("preFilter filter", "NoDiskConflict"),
    "NodeVolumeLimits": _kind("preFilter filter", "MaxCSIVolumeCountPred"),
    "VolumeBinding": _kind(
        "preFilter filter reserve preBind preScore score", "CheckVolumeBinding", "PrioritizeVolumes"
    ),
    "VolumeZone": _kind("preFilter filter", "NoVolumeZoneConflict"),
    "PodTopologySpread": _kind(
        "preFilter filter preScore score", "EvenPodsSpread", "EvenPodsSpreadPriority"
    ),
    "InterPodAffinity": _kind(
        "preFilter filter preScore score", "MatchInterPodAffinity", "InterPodAffinityPriority"
    ),
    "DefaultPreemption": _kind("postFilter"),
    "NodeResourcesBalancedAllocation": _kind("preScore score", None, "BalancedResourceAllocation"),
    "DefaultBinder": _kind("bind"),
    # Removed upstream (replaced by PodTopologySpread's system defaults); kept for users
    # who still list it.
    "SelectorSpread": _kind("preScore score", None, "SelectorSpreadPriority"),
    # volsched's storage plugins.
    "StorageNodeReady": _kind("filter", "StorageNodeReady"),
    "VolumeLocality": _kind("filter score", "CheckVolumeLocality", "VolumeLocality"),
}

# Upstream plugins volsched does not run, with the reason a user is told.
UNAVAILABLE = {
    "ImageLocality": "volsched does not track the container images on nodes",
    "DynamicResources": "volsched does not allocate dynamic resources (ResourceClaims)",
    "NodeDeclaredFeatures": "volsched does not read node-declared features",
}
# In-tree volume limits that upstream still lists and that became no-ops when those
# drivers moved to CSI; NodeVolumeLimits counts their CSI volumes.
IN_TREE_LIMITS = frozenset({"EBSLimits", "GCEPDLimits", "AzureDiskLimits"})

# Upstream's default multi-point set, in its order and with its weights (pkg/scheduler/
# apis/config/v1/default_plugins.go), less what volsched does not run; VolumeBinding
# scores here (PrioritizeVolumes) with weight 1.
DEFAULT_MULTI_POINT: tuple[tuple[str, int | None], ...] = (
    ("SchedulingGates", None),
    ("PrioritySort", None),
    ("NodeUnschedulable", None),
    ("NodeName", None),
    ("TaintToleration", 3),
    ("NodeAffinity", 2),
    ("NodePorts", None),
    ("NodeResourcesFit", 1),
    ("VolumeRestrictions", None),
    ("NodeVolumeLimits", None),
    ("VolumeBinding", None),
    ("VolumeZone", None),
    ("PodTopologySpread", 2),
    ("InterPodAffinity", 2),
    ("DefaultPreemption", None),
    ("NodeResourcesBalancedAllocation", 1),
    ("DefaultBinder", None),
)
# Joined when the cluster runs volsched's replicated storage.
STORAGE_MULTI_POINT: tuple[tuple[str, int | None], ...] = (
    ("StorageNodeReady", None),
    ("VolumeLocality", 1),
)
# Points that hold exactly one plugin, which cannot be swapped for another here.
_FIXED_POINTS = {"queueSort": "PrioritySort", "bind": "DefaultBinder"}
# Points whose plugins follow from the filter and score sets (a plugin's PreFilter runs
# when its Filter does; its Reserve and PreBind with its Filter).
_DERIVED_POINTS = ("preFilter", "preScore", "reserve", "permit", "preBind", "postBind")


@dataclass(frozen=True, slots=True)
class ProfileSpec:
    """One profile: the scheduler name it serves and what it runs."""

    scheduler_name: str
    policy: PolicySpec
    bind_timeout_seconds: float = DEFAULT_BIND_TIMEOUT_SECONDS
    preemption: bool = True


@dataclass(frozen=True, slots=True)
class SchedulerConfiguration:
    """The parts of a KubeSchedulerConfiguration volsched reads (None: not given)."""

    profiles: tuple[ProfileSpec, ...]
    percentage_of_nodes_to_score: int | None = None
    pod_initial_backoff_seconds: float | None = None
    pod_max_backoff_seconds: float | None = None
    parallelism: int | None = None
    leader_election: Mapping[str, Any] = field(default_factory=dict)
    kubeconfig: str | None = None
    extenders: tuple[ExtenderSpec, ...] = ()


@dataclass(slots=True)
class _Set:
    enabled: list[tuple[str, int | None]]
    disabled: set[str]


class _Where:
    """Builds errors that name the document and the path inside it."""

    def __init__(self, source: str, path: str = "") -> None:
        self.source = source
        self.path = path

    def at(self, key: str | int) -> _Where:
        if isinstance(key, int):
            return _Where(self.source, f"{self.path}[{key}]")
        return _Where(self.source, f"{self.path}.{key}" if self.path else key)

    def fail(self, problem: str) -> ConfigError:
        return ConfigError(f"{self.source}: {self.path or '(document)'}: {problem}")


def _mapping(value: Any, where: _Where, allowed: Sequence[str]) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise where.fail("must be a mapping")
    for key in value:
        if key not in allowed:
            raise where.at(str(key)).fail("unknown field")
    return value


def _list(value: Any, where: _Where) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise where.fail("must be a list")
    return value


def _integer(value: Any, where: _Where, minimum: int, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise where.fail(f"must be an integer, not {shown(value)}")
    if not minimum <= value <= maximum:
        raise where.fail(f"must be between {minimum} and {maximum}, not {value}")
    return value


def _name(value: Any, where: _Where) -> str:
    if not isinstance(value, str) or not value:
        raise where.fail("must be a non-empty string")
    return value


def _plugin_set(value: Any, where: _Where, point: str) -> _Set:
    body = _mapping(value, where, ("enabled", "disabled"))
    enabled: list[tuple[str, int | None]] = []
    for index, item in enumerate(_list(body.get("enabled"), where.at("enabled"))):
        at = where.at("enabled").at(index)
        entry = _mapping(item, at, ("name", "weight"))
        name = _name(entry.get("name"), at.at("name"))
        _check_plugin(name, at.at("name"), point)
        weight = entry.get("weight")
        if weight is not None:
            weight = _integer(weight, at.at("weight"), 0, 100)
            if name not in PLUGINS or PLUGINS[name].score_kind is None:
                raise at.at("weight").fail(f"{name} is not a score plugin")
        if any(seen == name for seen, _ in enabled):
            raise at.at("name").fail(f"{name} is enabled twice")
        enabled.append((name, weight or None))
    disabled: set[str] = set()
    for index, item in enumerate(_list(body.get("disabled"), where.at("disabled"))):
        at = where.at("disabled").at(index)
        entry = _mapping(item, at, ("name",))
        name = _name(entry.get("name"), at.at("name"))
        if name != "*":
            _check_plugin(name, at.at("name"), point, disabling=True)
        disabled.add(name)
    return _Set(enabled, disabled)


def _check_plugin(name: str, where: _Where, point: str, disabling: bool = False) -> None:
    if name in IN_TREE_LIMITS:
        return
    if name in UNAVAILABLE:
        if disabling:
            return
        raise where.fail(f"{name} is not available: {UNAVAILABLE[name]}")
    kind = PLUGINS.get(name)
    if kind is None:
        raise where.fail(f"unknown plugin {name!r}")
    if point != MULTI_POINT and point not in kind.points:
        raise where.fail(f"{name} does not extend the {point} point")


def _merge(
    defaults: Sequence[tuple[str, int | None]], custom: _Set
) -> list[tuple[str, int | None]]:
    """Upstream's mergePluginSet."""
    replacing = {name: weight for name, weight in custom.enabled}
    merged: list[tuple[str, int | None]] = []
    if "*" not in custom.disabled:
        for name, weight in defaults:
            if name in custom.disabled:
                continue
            merged.append((name, replacing.pop(name)) if name in replacing else (name, weight))
    merged.extend((name, weight) for name, weight in custom.enabled if name in replacing)
    return merged


def _point_plugins(
    point: str, specific: _Set, multi: Sequence[tuple[str, int | None]]
) -> list[tuple[str, int | None]]:
    """The plugins a point runs: its own enabled list first, then multi-point plugins that
    implement it and that the point neither disables nor lists itself."""
    ordered = list(specific.enabled)
    listed = {name for name, _ in ordered}
    if "*" not in specific.disabled:
        for name, weight in multi:
            kind = PLUGINS.get(name)
            if kind is None or point not in kind.points:
                continue
            if name in specific.disabled or name in listed:
                continue
            ordered.append((name, weight))
    return ordered


def _resources(value: Any, where: _Where) -> tuple[tuple[str, int], ...]:
    resources: list[tuple[str, int]] = []
    for index, item in enumerate(_list(value, where)):
        at = where.at(index)
        entry = _mapping(item, at, ("name", "weight"))
        name = _name(entry.get("name"), at.at("name"))
        weight = _integer(entry.get("weight", 1), at.at("weight"), 1, 100)
        if any(seen == name for seen, _ in resources):
            raise at.at("name").fail(f"resource {name} is listed twice")
        resources.append((name, weight))
    if not resources:
        raise where.fail("must list at least one resource")
    return tuple(resources)


def _args_body(
    entry: Mapping[str, Any], where: _Where, kind: str, allowed: Sequence[str]
) -> Mapping[str, Any]:
    args = entry.get("args")
    body = _mapping(args, where, (*allowed, "kind", "apiVersion"))
    declared = body.get("kind")
    if declared is not None and declared != kind:
        raise where.at("kind").fail(f"must be {kind}, not {declared!r}")
    return body


def _plugin_args(entry: Mapping[str, Any], where: _Where, name: str) -> dict[str, Any]:
    """Validated arguments of one ``pluginConfig`` entry, by plugin name."""
    at = where.at("args")
    if name == "NodeResourcesFit":
        body = _args_body(
            entry,
            at,
            "NodeResourcesFitArgs",
            ("ignoredResources", "ignoredResourceGroups", "scoringStrategy"),
        )
        result: dict[str, Any] = {}
        for key in ("ignoredResources", "ignoredResourceGroups"):
            values = _list(body.get(key), at.at(key))
            for index, value in enumerate(values):
                _name(value, at.at(key).at(index))
            if values:
                result[key] = tuple(values)
        if body.get("scoringStrategy") is not None:
            sat = at.at("scoringStrategy")
            strategy = _mapping(
                body["scoringStrategy"], sat, ("type", "resources", "requestedToCapacityRatio")
            )
            kind = strategy.get("type", "LeastAllocated")
            if kind not in STRATEGIES:
                raise sat.at("type").fail(f"must be one of {', '.join(STRATEGIES)}, not {kind!r}")
            resources = (
                _resources(strategy["resources"], sat.at("resources"))
                if strategy.get("resources") is not None
                else DEFAULT_RESOURCES
            )
            shape: tuple[ShapePoint, ...] = ScoringStrategy().shape
            ratio = strategy.get("requestedToCapacityRatio")
            if kind == REQUESTED_TO_CAPACITY_RATIO:
                rat = sat.at("requestedToCapacityRatio")
                ratio_body = _mapping(ratio, rat, ("shape",))
                if ratio_body.get("shape") is None:
                    raise rat.at("shape").fail("is required for RequestedToCapacityRatio")
                shape = _shape(ratio_body["shape"], rat.at("shape"))
            elif ratio is not None:
                raise sat.at("requestedToCapacityRatio").fail(
                    "is only for the RequestedToCapacityRatio type"
                )
            result["scoringStrategy"] = ScoringStrategy(kind, resources, shape)
        return result
    if name == "VolumeBinding":
        body = _args_body(entry, at, "VolumeBindingArgs", ("bindTimeoutSeconds", "shape"))
        result = {}
        if body.get("bindTimeoutSeconds") is not None:
            result["bindTimeoutSeconds"] = float(
                _integer(body["bindTimeoutSeconds"], at.at("bindTimeoutSeconds"), 1, 86400)
            )
        if body.get("shape") is not None:
            result["shape"] = _shape(body["shape"], at.at("shape"))
        return result
    if name == "NodeAffinity":
        body = _args_body(entry, at, "NodeAffinityArgs", ("addedAffinity",))
        if body.get("addedAffinity") is None:
            return {}
        try:
            required, preferred = parse_node_affinity(
                Fields(body["addedAffinity"], "NodeAffinityArgs", name, "addedAffinity")
            )
        except ObjectError as exc:
            raise at.at(exc.field).fail(exc.problem) from None
        return {"addedAffinity": AddedAffinity(required, preferred)}
    if name == "InterPodAffinity":
        body = _args_body(entry, at, "InterPodAffinityArgs", ("hardPodAffinityWeight",))
        result = {}
        if body.get("hardPodAffinityWeight") is not None:
            result["hardPodAffinityWeight"] = _integer(
                body["hardPodAffinityWeight"], at.at("hardPodAffinityWeight"), 0, 100
            )
        return result
    if name == "PodTopologySpread":
        body = _args_body(
            entry, at, "PodTopologySpreadArgs", ("defaultConstraints", "defaultingType")
        )
        defaulting = body.get("defaultingType", SYSTEM)
        if defaulting not in (SYSTEM, LIST):
            raise at.at("defaultingType").fail(f"must be System or List, not {defaulting!r}")
        constraints = _default_constraints(
            body.get("defaultConstraints"), at.at("defaultConstraints")
        )
        if defaulting == SYSTEM and constraints:
            raise at.at("defaultConstraints").fail(
                "must be empty when defaultingType is System (the system defaults apply)"
            )
        return {
            "spreadDefaults": (
                constraints if defaulting == LIST else SYSTEM_DEFAULT_CONSTRAINTS,
                defaulting,
            )
        }
    if name == "DefaultPreemption":
        body = _args_body(
            entry,
            at,
            "DefaultPreemptionArgs",
            ("minCandidateNodesPercentage", "minCandidateNodesAbsolute"),
        )
        result = {}
        if body.get("minCandidateNodesPercentage") is not None:
            result["minCandidateNodesPercentage"] = _integer(
                body["minCandidateNodesPercentage"], at.at("minCandidateNodesPercentage"), 0, 100
            )
        if body.get("minCandidateNodesAbsolute") is not None:
            result["minCandidateNodesAbsolute"] = _integer(
                body["minCandidateNodesAbsolute"], at.at("minCandidateNodesAbsolute"), 0, 1_000_000
            )
        if (
            result.get("minCandidateNodesPercentage", 10) == 0
            and result.get("minCandidateNodesAbsolute", 100) == 0
        ):
            # Upstream's ValidateDefaultPreemptionArgs refuses the same.
            raise at.at("minCandidateNodesPercentage").fail(
                "cannot be zero at the same time as minCandidateNodesAbsolute"
            )
        return result
    if name in PLUGINS or name in IN_TREE_LIMITS:
        if entry.get("args"):
            raise at.fail(f"{name} takes no arguments in volsched")
        return {}
    raise where.at("name").fail(f"unknown plugin {name!r}")


def _default_constraints(value: Any, where: _Where) -> tuple[DefaultConstraint, ...]:
    constraints = []
    seen: set[tuple[str, str]] = set()
    for index, item in enumerate(_list(value, where)):
        at = where.at(index)
        body = _mapping(item, at, ("maxSkew", "topologyKey", "whenUnsatisfiable", "labelSelector"))
        if body.get("labelSelector") is not None:
            raise at.at("labelSelector").fail(
                "must not be set: default constraints take the pod's Services and controller"
            )
        max_skew = _integer(body.get("maxSkew"), at.at("maxSkew"), 1, 1_000_000)
        key = _name(body.get("topologyKey"), at.at("topologyKey"))
        when = body.get("whenUnsatisfiable")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            raise at.at("whenUnsatisfiable").fail(
                f"must be DoNotSchedule or ScheduleAnyway, not {when!r}"
            )
        if (key, when) in seen:
            raise at.at("topologyKey").fail(f"{key} is duplicated for {when}")
        seen.add((key, when))
        constraints.append(DefaultConstraint(max_skew, key, when))
    return tuple(constraints)


def _shape(value: Any, where: _Where) -> tuple[ShapePoint, ...]:
    points = parse_shape(value, where.source, where.path)
    return tuple(ShapePoint(utilization, score) for utilization, score in points)


def default_plugins(with_storage: bool) -> tuple[tuple[str, int | None], ...]:
    return DEFAULT_MULTI_POINT + (STORAGE_MULTI_POINT if with_storage else ())


def compile_profile(
    data: Mapping[str, Any] | None, where: _Where, with_storage: bool, default_name: str
) -> ProfileSpec:
    """One ``profiles[]`` entry (None: the default profile)."""
    body = _mapping(
        data, where, ("schedulerName", "plugins", "pluginConfig", "percentageOfNodesToScore")
    )
    scheduler_name = body.get("schedulerName", default_name)
    scheduler_name = _name(scheduler_name, where.at("schedulerName"))
    plugins = _mapping(body.get("plugins"), where.at("plugins"), EXTENSION_POINTS)
    sets = {
        point: _plugin_set(plugins.get(point), where.at("plugins").at(point), point)
        for point in EXTENSION_POINTS
    }
    for point in _DERIVED_POINTS:
        if sets[point].enabled or sets[point].disabled:
            raise (
                where.at("plugins")
                .at(point)
                .fail(
                    "volsched sets this point from the filter and score plugins; "
                    "enable or disable plugins at multiPoint, filter or score"
                )
            )
    for point, only in _FIXED_POINTS.items():
        if sets[point].enabled or sets[point].disabled:
            raise where.at("plugins").at(point).fail(f"volsched always runs {only} here")
    if sets["preEnqueue"].enabled or sets["preEnqueue"].disabled:
        raise (
            where.at("plugins")
            .at("preEnqueue")
            .fail("SchedulingGates cannot be disabled: the API server refuses to bind a gated pod")
        )
    multi = [
        (name, weight)
        for name, weight in _merge(default_plugins(with_storage), sets[MULTI_POINT])
        if name not in IN_TREE_LIMITS
    ]
    filters = _point_plugins("filter", sets["filter"], multi)
    scores = _point_plugins("score", sets["score"], multi)
    post_filters = _point_plugins("postFilter", sets["postFilter"], multi)

    arguments: dict[str, dict[str, Any]] = {}
    for index, item in enumerate(_list(body.get("pluginConfig"), where.at("pluginConfig"))):
        at = where.at("pluginConfig").at(index)
        entry = _mapping(item, at, ("name", "args"))
        name = _name(entry.get("name"), at.at("name"))
        if name in arguments:
            raise at.at("name").fail(f"{name} is configured twice")
        arguments[name] = _plugin_args(entry, at, name)

    predicates = []
    for name, _ in filters:
        kind = PLUGINS[name].filter_kind
        if kind is not None:
            predicates.append(PredicateSpec(name, kind, _filter_arguments(name, arguments)))
    priorities = []
    for name, weight in scores:
        kind = PLUGINS[name].score_kind
        if kind is not None:
            argument = _score_arguments(name, arguments)
            priorities.append(PrioritySpec(name, kind, weight or 1, argument))
    bind_timeout = arguments.get("VolumeBinding", {}).get(
        "bindTimeoutSeconds", DEFAULT_BIND_TIMEOUT_SECONDS
    )
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
    return ProfileSpec(
        scheduler_name,
        policy,
        bind_timeout_seconds=bind_timeout,
        preemption=any(name == "DefaultPreemption" for name, _ in post_filters),
    )


def _filter_arguments(name: str, arguments: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    args = arguments.get(name, {})
    if name == "NodeResourcesFit":
        return {k: v for k, v in args.items() if k in ("ignoredResources", "ignoredResourceGroups")}
    if name == "NodeAffinity" and "addedAffinity" in args:
        return {"addedAffinity": args["addedAffinity"]}
    return {}


def _score_arguments(name: str, arguments: Mapping[str, Mapping[str, Any]]) -> dict[str, Any]:
    args = arguments.get(name, {})
    if name == "NodeResourcesFit":
        return {"scoringStrategy": args.get("scoringStrategy", ScoringStrategy())}
    if name == "VolumeBinding" and "shape" in args:
        return {"shape": tuple((p.utilization, p.score) for p in args["shape"])}
    if name == "NodeAffinity" and "addedAffinity" in args:
        return {"addedAffinity": args["addedAffinity"]}
    return {}


def default_profile(
    with_storage: bool, scheduler_name: str = DEFAULT_SCHEDULER_NAME
) -> ProfileSpec:
    """kube-scheduler's default plugin set (plus the storage plugins), as a profile."""
    profile = compile_profile(None, _Where("(default profile)"), with_storage, scheduler_name)
    return replace(profile, policy=replace(profile.policy, is_default=True))


def is_scheduler_configuration(document: Any) -> bool:
    return isinstance(document, Mapping) and document.get("kind") == KIND


def parse_scheduler_configuration(
    data: Mapping[str, Any],
    source: str,
    with_storage: bool = True,
    default_name: str = DEFAULT_SCHEDULER_NAME,
) -> SchedulerConfiguration:
    """A decoded KubeSchedulerConfiguration document."""
    where = _Where(source, "")
    body = _mapping(
        data,
        where,
        (
            "apiVersion",
            "kind",
            "profiles",
            "percentageOfNodesToScore",
            "podInitialBackoffSeconds",
            "podMaxBackoffSeconds",
            "parallelism",
            "leaderElection",
            "clientConnection",
            "extenders",
            "delayCacheUntilActive",
            "enableProfiling",
            "enableContentionProfiling",
        ),
    )
    version = body.get("apiVersion")
    if version != API_VERSION:
        raise where.at("apiVersion").fail(f"must be {API_VERSION}, not {version!r}")
    extenders = parse_extenders(body.get("extenders"), source)
    profiles_data = _list(body.get("profiles"), where.at("profiles"))
    profiles: list[ProfileSpec] = []
    shared_percentage: int | None = None
    if body.get("percentageOfNodesToScore") is not None:
        shared_percentage = _integer(
            body["percentageOfNodesToScore"], where.at("percentageOfNodesToScore"), 0, 100
        )
    for index, item in enumerate(profiles_data or [None]):
        at = where.at("profiles").at(index) if profiles_data else where.at("profiles")
        if item is not None and not isinstance(item, Mapping):
            raise at.fail("must be a mapping")
        if item is not None and item.get("percentageOfNodesToScore") is not None:
            # Accepted per profile by upstream; volsched reads one value for the daemon.
            value = _integer(
                item["percentageOfNodesToScore"], at.at("percentageOfNodesToScore"), 0, 100
            )
            if shared_percentage is not None and value != shared_percentage:
                raise at.at("percentageOfNodesToScore").fail(
                    "volsched uses one percentageOfNodesToScore for all profiles"
                )
            shared_percentage = value
        profile = compile_profile(item, at, with_storage, default_name)
        if any(p.scheduler_name == profile.scheduler_name for p in profiles):
            raise at.at("schedulerName").fail(f"{profile.scheduler_name!r} is used by two profiles")
        profiles.append(profile)
    initial = maximum = None
    if body.get("podInitialBackoffSeconds") is not None:
        initial = float(
            _integer(
                body["podInitialBackoffSeconds"], where.at("podInitialBackoffSeconds"), 1, 3600
            )
        )
    if body.get("podMaxBackoffSeconds") is not None:
        maximum = float(
            _integer(body["podMaxBackoffSeconds"], where.at("podMaxBackoffSeconds"), 1, 3600)
        )
    if initial is not None and maximum is not None and maximum < initial:
        raise where.at("podMaxBackoffSeconds").fail(
            "must not be smaller than podInitialBackoffSeconds"
        )
    parallelism = None
    if body.get("parallelism") is not None:
        parallelism = _integer(body["parallelism"], where.at("parallelism"), 1, 1024)
    election = _mapping(
        body.get("leaderElection"),
        where.at("leaderElection"),
        (
            "leaderElect",
            "leaseDuration",
            "renewDeadline",
            "retryPeriod",
            "resourceLock",
            "resourceName",
            "resourceNamespace",
        ),
    )
    client = _mapping(
        body.get("clientConnection"),
        where.at("clientConnection"),
        ("kubeconfig", "acceptContentTypes", "contentType", "qps", "burst"),
    )
    kubeconfig = client.get("kubeconfig") or None
    if kubeconfig is not None:
        kubeconfig = _name(kubeconfig, where.at("clientConnection").at("kubeconfig"))
    return SchedulerConfiguration(
        profiles=tuple(profiles),
        percentage_of_nodes_to_score=shared_percentage,
        pod_initial_backoff_seconds=initial,
        pod_max_backoff_seconds=maximum,
        parallelism=parallelism,
        leader_election=dict(election),
        kubeconfig=kubeconfig,
        extenders=extenders,
    )
