"""``profiles[].pluginConfig``: each in-tree plugin's arguments, read with upstream's
defaults (``v1/defaults.go``) and limits (``validation_pluginargs.go``), and each one
honoured. An argument volsched cannot honour is refused, never dropped."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from volsched.cache.errors import ObjectError
from volsched.cache.objects.core import CPU, MEMORY
from volsched.cache.objects.durations import duration_problem, go_duration_seconds
from volsched.cache.objects.fields import Fields
from volsched.cache.objects.selectors import parse_node_affinity
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
from volsched.scheduling.policy import parse_shape
from volsched.scheduling.scheduler_config.catalog import PLUGINS
from volsched.scheduling.scheduler_config.fields import (
    INT32_MAX,
    INT64_MAX,
    Where,
    boolean,
    integer,
    items,
    mapping,
    name,
    quoted,
)
from volsched.scheduling.scheduler_config.plugin_sets import check_plugin_name
from volsched.scheduling.volumes.scoring import ShapePoint


def _resources(
    value: Any, where: Where, only_weight: int | None = None
) -> tuple[tuple[str, int], ...]:
    """A ``[{name, weight}]`` list; a weight of 0 (or none) is 1, as upstream defaults it."""
    resources: list[tuple[str, int]] = []
    for index, item in enumerate(items(value, where)):
        at = where.at(index)
        entry = mapping(item, at, ("name", "weight"))
        resource = name(entry.get("name"), at.at("name"))
        weight = entry.get("weight")
        weight = 1 if weight in (None, 0) else integer(weight, at.at("weight"), 1, 100)
        if only_weight is not None and weight != only_weight:
            raise at.at("weight").fail(
                f"must be {only_weight}: NodeResourcesBalancedAllocation weighs every "
                "resource the same"
            )
        if any(seen == resource for seen, _ in resources):
            raise at.at("name").fail(f"resource {quoted(resource)} is listed twice")
        resources.append((resource, weight))
    return tuple(resources)


def _optional_integer(
    body: Mapping[str, Any], at: Where, key: str, low: int, high: int, into: dict[str, Any]
) -> None:
    """``body[key]`` checked into ``into`` when given (absent or null: upstream's default)."""
    if body.get(key) is not None:
        into[key] = integer(body[key], at.at(key), low, high)


def _args_body(
    entry: Mapping[str, Any], where: Where, kind: str, allowed: Sequence[str]
) -> Mapping[str, Any]:
    body = mapping(entry.get("args"), where, (*allowed, "kind", "apiVersion"))
    declared = body.get("kind")
    if declared is not None and declared != kind:
        raise where.at("kind").fail(f"must be {kind}, not {declared!r}")
    return body


def _shape(value: Any, where: Where) -> tuple[ShapePoint, ...]:
    points = parse_shape(value, where.source, where.path)
    return tuple(ShapePoint(utilization, score) for utilization, score in points)


def _fit(entry: Mapping[str, Any], at: Where) -> dict[str, Any]:
    body = _args_body(
        entry,
        at,
        "NodeResourcesFitArgs",
        ("ignoredResources", "ignoredResourceGroups", "scoringStrategy"),
    )
    result: dict[str, Any] = {}
    for key in ("ignoredResources", "ignoredResourceGroups"):
        values = items(body.get(key), at.at(key))
        for index, value in enumerate(values):
            name(value, at.at(key).at(index))
            if key == "ignoredResourceGroups" and "/" in value:
                raise at.at(key).at(index).fail("resource group name can't contain '/'")
        if values:
            result[key] = tuple(values)
    if body.get("scoringStrategy") is None:
        return result
    sat = at.at("scoringStrategy")
    strategy = mapping(
        body["scoringStrategy"], sat, ("type", "resources", "requestedToCapacityRatio")
    )
    kind = strategy.get("type") or "LeastAllocated"
    if kind not in STRATEGIES:
        raise sat.at("type").fail(f"must be one of {', '.join(STRATEGIES)}, not {kind!r}")
    resources = _resources(strategy.get("resources"), sat.at("resources")) or DEFAULT_RESOURCES
    shape: tuple[ShapePoint, ...] = ScoringStrategy().shape
    ratio = strategy.get("requestedToCapacityRatio")
    if kind == REQUESTED_TO_CAPACITY_RATIO:
        rat = sat.at("requestedToCapacityRatio")
        ratio_body = mapping(ratio, rat, ("shape",))
        if ratio_body.get("shape") is None:
            raise rat.at("shape").fail("is required for RequestedToCapacityRatio")
        shape = _shape(ratio_body["shape"], rat.at("shape"))
    elif ratio is not None:
        raise sat.at("requestedToCapacityRatio").fail(
            "is only for the RequestedToCapacityRatio type"
        )
    result["scoringStrategy"] = ScoringStrategy(kind, resources, shape)
    return result


def _balanced(entry: Mapping[str, Any], at: Where) -> dict[str, Any]:
    body = _args_body(entry, at, "NodeResourcesBalancedAllocationArgs", ("resources",))
    resources = _resources(body.get("resources"), at.at("resources"), only_weight=1)
    return {"resources": tuple(r for r, _ in resources) or (CPU, MEMORY)}


def _volume_binding(entry: Mapping[str, Any], at: Where) -> dict[str, Any]:
    body = _args_body(entry, at, "VolumeBindingArgs", ("bindTimeoutSeconds", "shape"))
    result: dict[str, Any] = {}
    if body.get("bindTimeoutSeconds") is not None:
        # 0 is upstream's too: the claims must already be bound when the pod is bound.
        result["bindTimeoutSeconds"] = float(
            integer(body["bindTimeoutSeconds"], at.at("bindTimeoutSeconds"), 0, INT64_MAX)
        )
    if body.get("shape") is not None:
        result["shape"] = _shape(body["shape"], at.at("shape"))
    return result


def _node_affinity(entry: Mapping[str, Any], at: Where) -> dict[str, Any]:
    body = _args_body(entry, at, "NodeAffinityArgs", ("addedAffinity",))
    if body.get("addedAffinity") is None:
        return {}
    try:
        required, preferred = parse_node_affinity(
            Fields(body["addedAffinity"], "NodeAffinityArgs", "NodeAffinity", "addedAffinity")
        )
    except ObjectError as exc:
        raise at.at(exc.field).fail(exc.problem) from None
    return {"addedAffinity": AddedAffinity(required, preferred)}


def _inter_pod_affinity(entry: Mapping[str, Any], at: Where) -> dict[str, Any]:
    body = _args_body(
        entry,
        at,
        "InterPodAffinityArgs",
        ("hardPodAffinityWeight", "ignorePreferredTermsOfExistingPods"),
    )
    result: dict[str, Any] = {}
    _optional_integer(body, at, "hardPodAffinityWeight", 0, 100, result)
    result["ignorePreferredTermsOfExistingPods"] = boolean(
        body.get("ignorePreferredTermsOfExistingPods"),
        at.at("ignorePreferredTermsOfExistingPods"),
        False,
    )
    return result


def _spread(entry: Mapping[str, Any], at: Where) -> dict[str, Any]:
    body = _args_body(entry, at, "PodTopologySpreadArgs", ("defaultConstraints", "defaultingType"))
    defaulting = body.get("defaultingType") or SYSTEM
    if defaulting not in (SYSTEM, LIST):
        raise at.at("defaultingType").fail(f"must be System or List, not {defaulting!r}")
    constraints = _default_constraints(body.get("defaultConstraints"), at.at("defaultConstraints"))
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


def _preemption(entry: Mapping[str, Any], at: Where) -> dict[str, Any]:
    body = _args_body(
        entry,
        at,
        "DefaultPreemptionArgs",
        ("minCandidateNodesPercentage", "minCandidateNodesAbsolute"),
    )
    result: dict[str, Any] = {}
    _optional_integer(body, at, "minCandidateNodesPercentage", 0, 100, result)
    _optional_integer(body, at, "minCandidateNodesAbsolute", 0, INT32_MAX, result)
    if (
        result.get("minCandidateNodesPercentage", 10) == 0
        and result.get("minCandidateNodesAbsolute", 100) == 0
    ):
        # Upstream's ValidateDefaultPreemptionArgs refuses the same.
        raise at.at("minCandidateNodesPercentage").fail(
            "cannot be zero at the same time as minCandidateNodesAbsolute"
        )
    return result


def _dynamic_resources(entry: Mapping[str, Any], at: Where) -> dict[str, Any]:
    """Checked as upstream checks them, and then without effect: volsched allocates no
    claim, so there is no filtering or binding of devices to time."""
    body = _args_body(entry, at, "DynamicResourcesArgs", ("filterTimeout", "bindingTimeout"))
    for key, least, wording in (
        ("filterTimeout", 0.0, "must be zero or positive"),
        ("bindingTimeout", 1.0, "must be at least 1 second"),
    ):
        value = body.get(key)
        if value is None:
            continue
        seconds = go_duration_seconds(value) if isinstance(value, str) else None
        if seconds is None and isinstance(value, str):
            raise at.at(key).fail(duration_problem(value, "10s"))
        if seconds is None:
            raise at.at(key).fail(f"must be a duration such as 10s, not {quoted(str(value))}")
        if seconds < least:
            raise at.at(key).fail(wording)
    return {}


_READERS = {
    "NodeResourcesFit": _fit,
    "NodeResourcesBalancedAllocation": _balanced,
    "VolumeBinding": _volume_binding,
    "NodeAffinity": _node_affinity,
    "InterPodAffinity": _inter_pod_affinity,
    "PodTopologySpread": _spread,
    "DefaultPreemption": _preemption,
    "DynamicResources": _dynamic_resources,
}


def plugin_args(entry: Mapping[str, Any], where: Where, plugin: str) -> dict[str, Any]:
    """Validated arguments of one ``pluginConfig`` entry, by plugin name."""
    at = where.at("args")
    reader = _READERS.get(plugin)
    if reader is not None:
        return reader(entry, at)
    if plugin in PLUGINS:
        if entry.get("args"):
            raise at.fail(f"{plugin} takes no arguments")
        return {}
    check_plugin_name(plugin, where.at("name"))
    return {}


def _default_constraints(value: Any, where: Where) -> tuple[DefaultConstraint, ...]:
    constraints = []
    seen: set[tuple[str, str]] = set()
    for index, item in enumerate(items(value, where)):
        at = where.at(index)
        body = mapping(item, at, ("maxSkew", "topologyKey", "whenUnsatisfiable", "labelSelector"))
        if body.get("labelSelector") is not None:
            raise at.at("labelSelector").fail(
                "must not be set: default constraints take the pod's Services and controller"
            )
        max_skew = integer(body.get("maxSkew"), at.at("maxSkew"), 1, INT32_MAX)
        key = name(body.get("topologyKey"), at.at("topologyKey"))
        when = body.get("whenUnsatisfiable")
        if when not in ("DoNotSchedule", "ScheduleAnyway"):
            raise at.at("whenUnsatisfiable").fail(
                f"must be DoNotSchedule or ScheduleAnyway, not {when!r}"
            )
        if (key, when) in seen:
            raise at.at("topologyKey").fail(f"{quoted(key)} is duplicated for {when}")
        seen.add((key, when))
        constraints.append(DefaultConstraint(max_skew, key, when))
    return tuple(constraints)
