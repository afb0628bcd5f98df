"""What a pod says about other pods: inter-pod affinity terms, topology spread
constraints, and scheduling gates — parsed once at ingestion, validated as the API
server validates them, so the plugins only match.

Affinity terms keep upstream's namespace rules: with neither ``namespaces`` nor a
``namespaceSelector`` a term means the pod's own namespace; an empty selector ``{}``
means every namespace. ``matchLabelKeys`` / ``mismatchLabelKeys`` are folded into the
label selector with the pod's own label values (``In`` / ``NotIn``), as the API server
does once, when it admits the pod. A pod read from the API server already carries the
folded requirement, made from its labels at creation; a key the selector already names
is therefore not folded again from the labels the pod has now (a label changed since
would add a requirement no pod meets, and an anti-affinity would stop protecting its
pod). A pod from a file that never went through admission is folded here.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass

from volsched.cache.objects.fields import INT32, Fields
from volsched.cache.objects.selectors import LabelSelector, Requirement, parse_label_selector

DO_NOT_SCHEDULE = "DoNotSchedule"
SCHEDULE_ANYWAY = "ScheduleAnyway"
HONOR = "Honor"
IGNORE = "Ignore"

_QUALIFIED_NAME = re.compile(
    r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """One pod (anti-)affinity term, as written by the pod in ``owner_namespace``."""

    selector: LabelSelector | None  # None: no labelSelector, which matches no pod
    topology_key: str
    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None = None

    def matches(
        self, namespace: str, labels: Mapping[str, str], namespace_labels: Mapping[str, str]
    ) -> bool:
        """Whether a pod (its namespace, labels, and its namespace's labels) is selected."""
        if self.selector is None:
            return False
        if namespace not in self.namespaces and (
            self.namespace_selector is None or not self.namespace_selector.matches(namespace_labels)
        ):
            return False
        return self.selector.matches(labels)


@dataclass(frozen=True, slots=True)
class WeightedAffinityTerm:
    weight: int
    term: AffinityTerm


@dataclass(frozen=True, slots=True)
class PodAffinity:
    required_affinity: tuple[AffinityTerm, ...] = ()
    preferred_affinity: tuple[WeightedAffinityTerm, ...] = ()
    required_anti_affinity: tuple[AffinityTerm, ...] = ()
    preferred_anti_affinity: tuple[WeightedAffinityTerm, ...] = ()

    @property
    def has_preferred(self) -> bool:
        return bool(self.preferred_affinity or self.preferred_anti_affinity)


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    when_unsatisfiable: str
    selector: LabelSelector | None  # None: no labelSelector, which matches no pod
    min_domains: int | None = None
    node_affinity_policy: str = HONOR
    node_taints_policy: str = IGNORE

    def counts(self, labels: Mapping[str, str]) -> bool:
        return self.selector is not None and self.selector.matches(labels)


def _with_label_keys(
    selector: LabelSelector | None, item: Fields, pod_labels: Mapping[str, str], mismatch: bool
) -> LabelSelector | None:
    extra = []
    named = (
        {key for key, _ in selector.match_labels} | {r.key for r in selector.match_expressions}
        if selector is not None
        else set()
    )
    for key in item.str_list("matchLabelKeys"):
        if key in pod_labels and key not in named:
            extra.append(Requirement(key, "In", (pod_labels[key],)))
    if mismatch:
        for key in item.str_list("mismatchLabelKeys"):
            if key in pod_labels and key not in named:
                extra.append(Requirement(key, "NotIn", (pod_labels[key],)))
    if not extra or selector is None:
        return selector
    return LabelSelector(selector.match_labels, selector.match_expressions + tuple(extra))


def _term(item: Fields, namespace: str, pod_labels: Mapping[str, str]) -> AffinityTerm:
    topology_key = item.str("topologyKey")
    if not topology_key:
        raise item.fail("topologyKey", "can not be empty")
    if not _QUALIFIED_NAME.match(topology_key):
        raise item.fail("topologyKey", f"{topology_key!r} is not a valid label key")
    selector = (
        parse_label_selector(item.sub("labelSelector")) if item.has("labelSelector") else None
    )
    namespaces = frozenset(item.str_list("namespaces"))
    namespace_selector = (
        parse_label_selector(item.sub("namespaceSelector"))
        if item.has("namespaceSelector")
        else None
    )
    if not namespaces and namespace_selector is None:
        namespaces = frozenset({namespace})
    selector = _with_label_keys(selector, item, pod_labels, mismatch=True)
    return AffinityTerm(selector, topology_key, namespaces, namespace_selector)


def _weighted(item: Fields, namespace: str, pod_labels: Mapping[str, str]) -> WeightedAffinityTerm:
    weight = item.int("weight", bits=INT32)
    if not 1 <= weight <= 100:
        raise item.fail("weight", "must be in the range 1-100")
    return WeightedAffinityTerm(weight, _term(item.sub("podAffinityTerm"), namespace, pod_labels))


def parse_pod_affinity(
    affinity: Fields, namespace: str, pod_labels: Mapping[str, str]
) -> PodAffinity | None:
    """``spec.affinity``'s podAffinity and podAntiAffinity (None when the pod has none)."""
    required = "requiredDuringSchedulingIgnoredDuringExecution"
    preferred = "preferredDuringSchedulingIgnoredDuringExecution"
    together = affinity.sub("podAffinity")
    apart = affinity.sub("podAntiAffinity")
    result = PodAffinity(
        tuple(_term(i, namespace, pod_labels) for i in together.items(required)),
        tuple(_weighted(i, namespace, pod_labels) for i in together.items(preferred)),
        tuple(_term(i, namespace, pod_labels) for i in apart.items(required)),
        tuple(_weighted(i, namespace, pod_labels) for i in apart.items(preferred)),
    )
    return result if result != PodAffinity() else None


def parse_spread_constraints(
    spec: Fields, pod_labels: Mapping[str, str]
) -> tuple[SpreadConstraint, ...]:
    constraints = []
    seen: set[tuple[str, str]] = set()
    for item in spec.items("topologySpreadConstraints"):
        max_skew = item.int("maxSkew", bits=INT32)
        if max_skew <= 0:
            raise item.fail("maxSkew", "must be greater than zero")
        topology_key = item.str("topologyKey")
        if not topology_key:
            raise item.fail("topologyKey", "can not be empty")
        when = item.str("whenUnsatisfiable")
        if when not in (DO_NOT_SCHEDULE, SCHEDULE_ANYWAY):
            raise item.fail(
                "whenUnsatisfiable", f"{when!r} is not one of DoNotSchedule, ScheduleAnyway"
            )
        if (topology_key, when) in seen:
            raise item.fail("topologyKey", f"{topology_key} is duplicated for {when}")
        seen.add((topology_key, when))
        min_domains = item.opt_int("minDomains", bits=INT32)
        if min_domains is not None:
            if min_domains <= 0:
                raise item.fail("minDomains", "must be greater than zero")
            if when != DO_NOT_SCHEDULE:
                raise item.fail(
                    "minDomains", "can only be set with whenUnsatisfiable=DoNotSchedule"
                )
        policies = []
        for key in ("nodeAffinityPolicy", "nodeTaintsPolicy"):
            policy = item.str(key)
            if policy and policy not in (HONOR, IGNORE):
                raise item.fail(key, f"{policy!r} is not one of Honor, Ignore")
            policies.append(policy)
        selector = (
            parse_label_selector(item.sub("labelSelector")) if item.has("labelSelector") else None
        )
        constraints.append(
            SpreadConstraint(
                max_skew=max_skew,
                topology_key=topology_key,
                when_unsatisfiable=when,
                selector=_with_label_keys(selector, item, pod_labels, mismatch=False),
                min_domains=min_domains,
                node_affinity_policy=policies[0] or HONOR,
                node_taints_policy=policies[1] or IGNORE,
            )
        )
    return tuple(constraints)


def parse_scheduling_gates(spec: Fields) -> tuple[str, ...]:
    gates: list[str] = []
    for item in spec.items("schedulingGates"):
        name = item.str("name")
        if not name or not _QUALIFIED_NAME.match(name):
            raise item.fail("name", f"{name!r} is not a valid gate name (a qualified name)")
        if name in gates:
            raise item.fail("name", f"{name} is duplicated")
        gates.append(name)
    return tuple(gates)
