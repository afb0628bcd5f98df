"""The scheduler Policy file: which predicates filter, which priorities score, how much.

The format is the OpenShift / Kubernetes legacy ``Policy`` (``kind: Policy``,
``apiVersion`` or ``version: v1``, ``predicates: [{name, argument?}]``,
``priorities: [{name, weight, argument?}]``); a file replaces the default policy
completely. Every problem is one ``ConfigError`` naming the file and the entry.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from volsched.cache.errors import ConfigError

if TYPE_CHECKING:
    from volsched.scheduling.plugins.pod_topology_spread import DefaultConstraint

PREDICATE_ALIASES = {"PodFitsPorts": "PodFitsHostPorts", "PodTopologySpread": "EvenPodsSpread"}
PRIORITY_ALIASES = {
    "ServiceSpreadingPriority": "SelectorSpreadPriority",
    "PodTopologySpread": "EvenPodsSpreadPriority",
}

PRIORITIES = (
    "LeastRequestedPriority",
    "BalancedResourceAllocation",
    "SelectorSpreadPriority",
    "EqualPriority",
    "NodeAffinityPriority",
    "TaintTolerationPriority",
    "PrioritizeVolumes",
    "VolumeLocality",
    # Upstream's default weight for both is 2 (the default profile uses that).
    "InterPodAffinityPriority",
    "EvenPodsSpreadPriority",
)
PREDICATE_ARGUMENTS = ("serviceAffinity", "labelsPresence")
PRIORITY_ARGUMENTS = ("serviceAntiAffinity", "labelPreference")

DEFAULT_PREDICATES = (
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
)
STORAGE_PREDICATES = ("StorageNodeReady", "CheckVolumeLocality")
# Pod-to-pod rules a policy may add (the seed's default policy had neither).
POD_PREDICATES = ("MatchInterPodAffinity", "EvenPodsSpread")
# Every built-in predicate: the default ones in their default order, then the others.
PREDICATES = DEFAULT_PREDICATES + STORAGE_PREDICATES + POD_PREDICATES
DEFAULT_PRIORITIES = (
    ("LeastRequestedPriority", 1),
    ("BalancedResourceAllocation", 1),
    ("SelectorSpreadPriority", 1),
    ("PrioritizeVolumes", 1),
)
STORAGE_PRIORITIES = (("VolumeLocality", 1),)


# Scores are summed weight x 100 per node; beyond this a weight only overflows sense.
MAX_PRIORITY_WEIGHT = 1000


@dataclass(frozen=True, slots=True)
class PredicateSpec:
    name: str
    kind: str  # the built-in name, or the argument type for configurable ones
    argument: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PrioritySpec:
    name: str
    kind: str
    weight: int
    argument: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class PolicySpec:
    predicates: tuple[PredicateSpec, ...]
    priorities: tuple[PrioritySpec, ...]
    is_default: bool = False
    # The Policy's top-level hardPodAffinitySymmetricWeight (InterPodAffinity's
    # hardPodAffinityWeight): how much an existing pod's required affinity to the
    # incoming pod scores.
    hard_pod_affinity_weight: int = 1
    # PodTopologySpread's (defaultConstraints, defaultingType); None: the system defaults.
    spread_defaults: tuple[tuple[DefaultConstraint, ...], str] | None = None
    # DefaultPreemptionArgs (minCandidateNodesPercentage, minCandidateNodesAbsolute):
    # how many candidate nodes the dry run looks for before it picks one.
    min_candidate_nodes: tuple[int, int] = (10, 100)


def default_policy(with_storage: bool) -> PolicySpec:
    """The seed's defaults plus the volume rules; the storage rules join when the cluster
    runs volsched's replicated storage (it has StorageNodes)."""
    predicates = DEFAULT_PREDICATES + (STORAGE_PREDICATES if with_storage else ())
    priorities = DEFAULT_PRIORITIES + (STORAGE_PRIORITIES if with_storage else ())
    return PolicySpec(
        tuple(PredicateSpec(name, name) for name in predicates),
        tuple(PrioritySpec(name, name, weight) for name, weight in priorities),
        is_default=True,
    )


def _fail(source: str, where: str, problem: str) -> ConfigError:
    return ConfigError(f"{source}: {where}: {problem}")


def _str_list(value: Any, source: str, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) and v for v in value):
        raise _fail(source, where, "must be a non-empty list of label names")
    return tuple(value)


def _check_argument(
    kind: str, argument: Mapping[str, Any], source: str, where: str
) -> Mapping[str, Any]:
    if not isinstance(argument, Mapping):
        raise _fail(source, where, f"argument.{kind} must be an object")
    if kind == "serviceAffinity":
        return {
            "labels": _str_list(
                argument.get("labels"), source, f"{where}.argument.serviceAffinity.labels"
            )
        }
    if kind in ("labelsPresence", "labelPreference"):
        presence = argument.get("presence")
        if not isinstance(presence, bool):
            raise _fail(source, f"{where}.argument.{kind}.presence", "must be true or false")
        if kind == "labelsPresence":
            labels = _str_list(argument.get("labels"), source, f"{where}.argument.{kind}.labels")
            return {"labels": labels, "presence": presence}
        label = argument.get("label")
        if not isinstance(label, str) or not label:
            raise _fail(source, f"{where}.argument.{kind}.label", "must be a label name")
        return {"label": label, "presence": presence}
    if kind == "serviceAntiAffinity":
        label = argument.get("label")
        if not isinstance(label, str) or not label:
            raise _fail(
                source, f"{where}.argument.serviceAntiAffinity.label", "must be a label name"
            )
        return {"label": label}
    raise AssertionError(kind)


def _entry_kind(
    entry: Mapping[str, Any],
    known: Sequence[str],
    aliases: Mapping[str, str],
    argument_kinds: Sequence[str],
    source: str,
    where: str,
    what: str,
) -> tuple[str, Mapping[str, Any]]:
    name = entry["name"]
    argument = entry.get("argument")
    if argument is not None:
        if not isinstance(argument, Mapping) or len(argument) != 1:
            raise _fail(
                source, where, f"argument must hold exactly one of {', '.join(argument_kinds)}"
            )
        ((kind, body),) = argument.items()
        if kind == "shape" and name in ("PrioritizeVolumes",):
            return name, {"shape": body}
        if kind == HARD_WEIGHT and name == "InterPodAffinityPriority":
            return name, {HARD_WEIGHT: _hard_weight(body, source, f"{where}.argument.{kind}")}
        if kind not in argument_kinds:
            raise _fail(source, where, f"unknown {what} argument {kind!r}")
        return kind, _check_argument(kind, body, source, where)
    canonical = aliases.get(name, name)
    if canonical in argument_kinds:
        raise _fail(source, where, f"{what} {name!r} needs an argument")
    if canonical not in known:
        raise _fail(source, where, f"unknown {what} {name!r}")
    return canonical, {}


HARD_WEIGHT = "hardPodAffinitySymmetricWeight"


def _hard_weight(value: Any, source: str, where: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value <= 100:
        raise _fail(source, where, f"must be an integer from 0 to 100, not {value!r}")
    return value


def parse_shape(value: Any, source: str, where: str) -> tuple[tuple[int, int], ...]:
    """A PrioritizeVolumes shape: points with increasing utilization 0..100, score 0..10."""
    if not isinstance(value, list) or not value:
        raise _fail(source, where, "shape must be a non-empty list of {utilization, score}")
    points = []
    previous = -1
    for index, point in enumerate(value):
        at = f"{where}[{index}]"
        if not isinstance(point, Mapping):
            raise _fail(source, at, "must be an object with utilization and score")
        utilization = point.get("utilization")
        score = point.get("score")
        if (
            isinstance(utilization, bool)
            or not isinstance(utilization, int)
            or not 0 <= utilization <= 100
        ):
            raise _fail(source, f"{at}.utilization", "must be an integer from 0 to 100")
        if isinstance(score, bool) or not isinstance(score, int) or not 0 <= score <= 10:
            raise _fail(source, f"{at}.score", "must be an integer from 0 to 10")
        if utilization <= previous:
            raise _fail(source, f"{at}.utilization", "must increase from point to point")
        previous = utilization
        points.append((utilization, score))
    return tuple(points)


def parse_policy(data: Any, source: str) -> PolicySpec:
    """Validate a decoded policy document; the result replaces the default policy."""
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: a policy must be a JSON object")
    kind = data.get("kind", "Policy")
    if kind != "Policy":
        raise _fail(source, "kind", f"must be Policy, not {kind!r}")
    version = data.get("apiVersion", data.get("version", "v1"))
    if version != "v1":
        raise _fail(source, "apiVersion", f"must be v1, not {version!r}")
    unknown = set(data) - {"kind", "apiVersion", "version", "predicates", "priorities", HARD_WEIGHT}
    if unknown:
        raise _fail(source, sorted(unknown)[0], "unknown key")
    predicates: list[PredicateSpec] = []
    priorities: list[PrioritySpec] = []
    seen: set[str] = set()
    for index, entry in enumerate(_entries(data, "predicates", source)):
        where = f"predicates[{index}]"
        _check_entry(entry, source, where, ("name", "argument"))
        where = f"{where} ({entry['name']})"
        if entry["name"] in seen:
            raise _fail(source, where, "appears twice")
        seen.add(entry["name"])
        kind, argument = _entry_kind(
            entry, PREDICATES, PREDICATE_ALIASES, PREDICATE_ARGUMENTS, source, where, "predicate"
        )
        predicates.append(PredicateSpec(entry["name"], kind, argument))
    seen.clear()
    for index, entry in enumerate(_entries(data, "priorities", source)):
        where = f"priorities[{index}]"
        _check_entry(entry, source, where, ("name", "weight", "argument"))
        where = f"{where} ({entry['name']})"
        if entry["name"] in seen:
            raise _fail(source, where, "appears twice")
        seen.add(entry["name"])
        weight = entry.get("weight")
        if isinstance(weight, bool) or not isinstance(weight, int):
            raise _fail(source, f"{where}.weight", "must be a positive integer")
        if weight <= 0:
            raise _fail(source, f"{where}.weight", f"must be a positive integer, not {weight}")
        if weight > MAX_PRIORITY_WEIGHT:
            raise _fail(
                source, f"{where}.weight", f"must be at most {MAX_PRIORITY_WEIGHT}, not {weight}"
            )
        kind, argument = _entry_kind(
            entry, PRIORITIES, PRIORITY_ALIASES, PRIORITY_ARGUMENTS, source, where, "priority"
        )
        if kind == "PrioritizeVolumes" and "shape" in argument:
            argument = {"shape": parse_shape(argument["shape"], source, f"{where}.argument.shape")}
        priorities.append(PrioritySpec(entry["name"], kind, weight, argument))
    hard_weight = 1
    if HARD_WEIGHT in data:
        hard_weight = _hard_weight(data[HARD_WEIGHT], source, HARD_WEIGHT)
    for priority in priorities:
        if HARD_WEIGHT in priority.argument:
            hard_weight = priority.argument[HARD_WEIGHT]
    return PolicySpec(tuple(predicates), tuple(priorities), hard_pod_affinity_weight=hard_weight)


def _entries(data: Mapping[str, Any], key: str, source: str) -> list[Mapping[str, Any]]:
    value = data.get(key, [])
    if not isinstance(value, list):
        raise _fail(source, key, "must be a list")
    return value


def _check_entry(entry: Any, source: str, where: str, allowed: tuple[str, ...]) -> None:
    if not isinstance(entry, Mapping):
        raise _fail(source, where, "must be an object with a name")
    name = entry.get("name")
    if not isinstance(name, str) or not name:
        raise _fail(source, f"{where}.name", "is required")
    extra = set(entry) - set(allowed)
    if extra:
        raise _fail(source, f"{where} ({name})", f"unknown key {sorted(extra)[0]!r}")
