"""``labelSelector`` and ``fieldSelector`` query parameters, parsed and matched as upstream.

Label selectors support ``=``, ``==``, ``!=``, ``in``, ``notin``, ``>``, ``<``, ``key``
(exists) and ``!key``; ``!=`` and ``notin`` also match objects without the label.  Field
selectors support ``=``, ``==`` and ``!=`` on the fields each kind registers upstream
(other fields are a 400 ``field label not supported``).  Requirements are ANDed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from volsched.emulator.errors import bad_request
from volsched.emulator.raw import Raw, labels_of, value_at

_KEY = r"[A-Za-z0-9./_-]+"
_VALUE = r"[A-Za-z0-9._-]*"
_SET = re.compile(rf"^\s*(?P<key>{_KEY})\s+(?P<op>in|notin)\s*\((?P<values>[^()]*)\)\s*$")
_NOT_EXISTS = re.compile(rf"^\s*!\s*(?P<key>{_KEY})\s*$")
_COMPARE = re.compile(rf"^\s*(?P<key>{_KEY})\s*(?P<op>==|=|!=|>|<)\s*(?P<value>{_VALUE})\s*$")
_EXISTS = re.compile(rf"^\s*(?P<key>{_KEY})\s*$")
_LABEL_VALUE = re.compile(r"^(?:[A-Za-z0-9](?:[A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$")


@dataclass(frozen=True, slots=True)
class Requirement:
    key: str
    operator: str  # "=", "!=", "in", "notin", "exists", "!", ">", "<"
    values: tuple[str, ...] = ()

    def matches(self, object_labels: dict[str, str]) -> bool:
        present = self.key in object_labels
        value = object_labels.get(self.key)
        if self.operator in ("=", "in"):
            return present and value in self.values
        if self.operator in ("!=", "notin"):
            return not present or value not in self.values
        if self.operator == "exists":
            return present
        if self.operator == "!":
            return not present
        try:
            number, bound = int(str(value)), int(self.values[0])
        except ValueError:
            return False
        return present and (number > bound if self.operator == ">" else number < bound)


def _split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside parentheses."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return parts


def _check_value(selector: str, value: str) -> str:
    if not _LABEL_VALUE.match(value) or len(value) > 63:
        raise bad_request(
            f'unable to parse requirement: values[0][{selector}]: Invalid value: "{value}": '
            "a valid label must be an empty string or consist of alphanumeric characters, "
            "'-', '_' or '.', and must start and end with an alphanumeric character"
        )
    return value


def parse_label_selector(text: str | None) -> tuple[Requirement, ...]:
    if not text or not text.strip():
        return ()
    requirements = []
    for part in _split_top_level(text):
        if match := _SET.match(part):
            values = tuple(
                _check_value(match["key"], v.strip()) for v in match["values"].split(",")
            )
            requirements.append(Requirement(match["key"], match["op"], values))
        elif match := _NOT_EXISTS.match(part):
            requirements.append(Requirement(match["key"], "!"))
        elif match := _COMPARE.match(part):
            operator = "=" if match["op"] == "==" else match["op"]
            value = match["value"]
            if operator in (">", "<") and not value.lstrip("-").isdigit():
                raise bad_request(
                    f"unable to parse requirement: for 'Gt', 'Lt' operators, the value must be an integer: {part.strip()}"
                )
            requirements.append(
                Requirement(match["key"], operator, (_check_value(match["key"], value),))
            )
        elif match := _EXISTS.match(part):
            requirements.append(Requirement(match["key"], "exists"))
        else:
            raise bad_request(
                f"unable to parse requirement: found '{part.strip()}', expected: identifier"
            )
    return tuple(requirements)


def labels_match(requirements: tuple[Requirement, ...], obj: Raw) -> bool:
    object_labels = labels_of(obj)
    return all(r.matches(object_labels) for r in requirements)


def label_selector_matches(selector: Any, object_labels: dict[str, str]) -> bool:
    """Whether a metav1.LabelSelector (matchLabels / matchExpressions) selects the labels.

    A null selector selects nothing here, as for a claim's ``spec.selector`` it is simply
    absent; callers check for absence first.
    """
    if not isinstance(selector, dict):
        return False
    for key, value in (selector.get("matchLabels") or {}).items():
        if object_labels.get(key) != value:
            return False
    for expression in selector.get("matchExpressions") or []:
        key = expression.get("key", "")
        values = tuple(expression.get("values") or ())
        operator = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}.get(
            expression.get("operator", ""), ""
        )
        if not operator or not Requirement(key, operator, values).matches(object_labels):
            return False
    return True


# Field labels each kind registers upstream (GetAttrs / AddFieldLabelConversionFunc).
_META_FIELDS = ("metadata.name", "metadata.namespace")
_EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)
FIELD_LABELS: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "Pod"): (
        "spec.nodeName",
        "spec.restartPolicy",
        "spec.schedulerName",
        "spec.serviceAccountName",
        "spec.hostNetwork",
        "status.phase",
        "status.podIP",
        "status.nominatedNodeName",
    ),
    ("", "Node"): ("spec.unschedulable",),
    ("", "Namespace"): ("status.phase",),
    ("", "PersistentVolumeClaim"): (),
    ("", "Event"): _EVENT_FIELDS,
    ("events.k8s.io", "Event"): (
        "regarding.kind",
        "regarding.namespace",
        "regarding.name",
        "regarding.uid",
        "reason",
        "reportingController",
        "type",
    ),
    ("apps", "ReplicaSet"): ("status.replicas",),
}

_FIELD_PATHS = {"source": "source.component", "reportingComponent": "reportingComponent"}


@dataclass(frozen=True, slots=True)
class FieldRequirement:
    field: str
    equal: bool
    value: str

    def matches(self, obj: Raw) -> bool:
        raw = value_at(obj, _FIELD_PATHS.get(self.field, self.field))
        if isinstance(raw, bool):
            actual = "true" if raw else "false"
        elif raw is None:
            actual = ""
        else:
            actual = str(raw)
        return (actual == self.value) == self.equal


def _split_unescaped(text: str, separator: str) -> list[str]:
    return [p.replace("\\" + separator, separator) for p in re.split(rf"(?<!\\){separator}", text)]


def parse_field_selector(text: str | None, group: str, kind: str) -> tuple[FieldRequirement, ...]:
    if not text or not text.strip():
        return ()
    allowed = _META_FIELDS + FIELD_LABELS.get((group, kind), ())
    requirements = []
    for part in _split_unescaped(text, ","):
        match = re.match(r"^\s*([^=!\s]+)\s*(==|=|!=)(.*)$", part)
        if match is None:
            raise bad_request(f"invalid selector: '{text}'; can't understand '{part}'")
        field, operator, value = match[1], match[2], match[3].strip()
        if field not in allowed:
            raise bad_request(f"field label not supported: {field}")
        requirements.append(FieldRequirement(field, operator != "!=", value))
    return tuple(requirements)


def fields_match(requirements: tuple[FieldRequirement, ...], obj: Raw) -> bool:
    return all(r.matches(obj) for r in requirements)


Matcher = Callable[[Raw], bool]


def matcher(
    label_requirements: tuple[Requirement, ...], field_requirements: tuple[FieldRequirement, ...]
) -> Matcher:
    def matches(obj: Raw) -> bool:
        return labels_match(label_requirements, obj) and fields_match(field_requirements, obj)

    return matches
