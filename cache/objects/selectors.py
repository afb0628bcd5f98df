"""Label selectors, node selectors and topology selectors, with their matching rules.

These are data plus the pure rules Kubernetes gives them; they live with the object views
because the informer's indexes need them as much as the scheduler does.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from volsched.cache.objects.fields import INT32, Fields

NODE_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist", "Gt", "Lt")
LABEL_SELECTOR_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str
    values: tuple[str, ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        """Node-selector semantics: NotIn and DoesNotExist match an absent key."""
        present = self.key in labels
        op = self.operator
        if op == "In":
            return present and labels[self.key] in self.values
        if op == "NotIn":
            return not present or labels[self.key] not in self.values
        if op == "Exists":
            return present
        if op == "DoesNotExist":
            return not present
        if op in ("Gt", "Lt"):
            if not present or len(self.values) != 1:
                return False
            try:
                have = int(labels[self.key])
                want = int(self.values[0])
            except ValueError:
                return False
            return have > want if op == "Gt" else have < want
        return False


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """Expressions ANDed; a term with no expression and no field matches nothing."""

    match_expressions: tuple[Requirement, ...] = ()
    match_fields: tuple[Requirement, ...] = ()

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        if not self.match_expressions and not self.match_fields:
            return False
        for requirement in self.match_expressions:
            if not requirement.matches(labels):
                return False
        if self.match_fields:
            fields = {"metadata.name": node_name}
            for requirement in self.match_fields:
                if not requirement.matches(fields):
                    return False
        return True


@dataclass(frozen=True, slots=True)
class NodeSelector:
    """Terms ORed, as in ``requiredDuringSchedulingIgnoredDuringExecution``."""

    terms: tuple[NodeSelectorTerm, ...]

    def matches(self, labels: Mapping[str, str], node_name: str) -> bool:
        return any(term.matches(labels, node_name) for term in self.terms)


@dataclass(frozen=True, slots=True)
class PreferredTerm:
    weight: int
    term: NodeSelectorTerm


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """``metav1.LabelSelector``: matchLabels and matchExpressions ANDed.

    An empty selector matches everything; callers that treat a missing selector as
    "matches nothing" keep ``None`` instead of an empty one.
    """

    match_labels: tuple[tuple[str, str], ...] = ()
    match_expressions: tuple[Requirement, ...] = ()

    def is_empty(self) -> bool:
        return not self.match_labels and not self.match_expressions

    def matches(self, labels: Mapping[str, str]) -> bool:
        for key, value in self.match_labels:
            if labels.get(key) != value:
                return False
        return all(requirement.matches(labels) for requirement in self.match_expressions)


@dataclass(frozen=True, slots=True)
class TopologySelectorTerm:
    """One ``allowedTopologies`` term: every key must have one of its values."""

    requirements: tuple[tuple[str, tuple[str, ...]], ...]

    def matches(self, labels: Mapping[str, str]) -> bool:
        return all(labels.get(key) in values for key, values in self.requirements)


def match_topology_terms(
    terms: tuple[TopologySelectorTerm, ...], labels: Mapping[str, str]
) -> bool:
    """No terms admit every node; otherwise any term must match."""
    if not terms:
        return True
    return any(term.matches(labels) for term in terms)


def selector_matches_map(selector: Mapping[str, str], labels: Mapping[str, str]) -> bool:
    """A map selector (Service, nodeSelector) matches when every pair is present."""
    return all(labels.get(key) == value for key, value in selector.items())


def _requirement(item: Fields, operators: tuple[str, ...]) -> Requirement:
    key = item.str("key")
    if not key:
        raise item.fail("key", "is required")
    operator = item.str("operator")
    if operator not in operators:
        raise item.fail("operator", f"{operator!r} is not one of {', '.join(operators)}")
    values = item.str_list("values")
    if operator in ("In", "NotIn") and not values:
        raise item.fail("values", f"must be non-empty for operator {operator}")
    if operator in ("Exists", "DoesNotExist") and values:
        raise item.fail("values", f"must be empty for operator {operator}")
    if operator in ("Gt", "Lt") and len(values) != 1:
        raise item.fail("values", f"must hold exactly one integer for operator {operator}")
    return Requirement(key, operator, values)


def parse_node_selector_term(term: Fields) -> NodeSelectorTerm:
    expressions = tuple(
        _requirement(item, NODE_SELECTOR_OPERATORS) for item in term.items("matchExpressions")
    )
    fields = []
    for item in term.items("matchFields"):
        requirement = _requirement(item, ("In", "NotIn"))
        if requirement.key != "metadata.name":
            raise item.fail("key", "only metadata.name is supported in matchFields")
        fields.append(requirement)
    return NodeSelectorTerm(expressions, tuple(fields))


def parse_node_selector(selector: Fields) -> NodeSelector:
    return NodeSelector(
        tuple(parse_node_selector_term(term) for term in selector.items("nodeSelectorTerms"))
    )


def parse_node_affinity(
    affinity: Fields,
) -> tuple[NodeSelector | None, tuple[PreferredTerm, ...]]:
    """A ``nodeAffinity`` block (a pod's, or a scheduler profile's ``addedAffinity``)."""
    required: NodeSelector | None = None
    if affinity.has("requiredDuringSchedulingIgnoredDuringExecution"):
        required = parse_node_selector(
            affinity.sub("requiredDuringSchedulingIgnoredDuringExecution")
        )
    preferred = []
    for item in affinity.items("preferredDuringSchedulingIgnoredDuringExecution"):
        weight = item.int("weight", bits=INT32)
        if not 1 <= weight <= 100:
            raise item.fail("weight", "must be between 1 and 100")
        preferred.append(PreferredTerm(weight, parse_node_selector_term(item.sub("preference"))))
    return required, tuple(preferred)


def parse_label_selector(selector: Fields) -> LabelSelector:
    match_labels = tuple(sorted(selector.str_map("matchLabels").items()))
    expressions = tuple(
        _requirement(item, LABEL_SELECTOR_OPERATORS) for item in selector.items("matchExpressions")
    )
    return LabelSelector(match_labels, expressions)


def parse_topology_terms(items: list[Fields]) -> tuple[TopologySelectorTerm, ...]:
    terms = []
    for term in items:
        requirements = []
        for expression in term.items("matchLabelExpressions"):
            key = expression.str("key")
            if not key:
                raise expression.fail("key", "is required")
            values = expression.str_list("values")
            if not values:
                raise expression.fail("values", "must be non-empty")
            requirements.append((key, values))
        terms.append(TopologySelectorTerm(tuple(requirements)))
    return tuple(terms)
