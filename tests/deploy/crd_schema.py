"""An object checked against a CustomResourceDefinition's schema, as kube-apiserver checks
it on a create (a server-side dry run included) with strict field validation — what
``kubectl apply`` asks for by default.

A structural ``openAPIV3Schema`` is JSON Schema with Kubernetes extensions; what the API
server adds is that an object's fields must be declared (unless the schema says
``x-kubernetes-preserve-unknown-fields``): an unknown field is an error under strict
validation, where it would otherwise be pruned without a word. ``metadata`` is checked
by the API server as ObjectMeta, not by the schema, and is left out here. The CEL rules
(``x-kubernetes-validations``) are not evaluated.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import yaml

Raw = dict[str, Any]


def load_crd(path: Path) -> Raw:
    (crd,) = [doc for doc in yaml.safe_load_all(path.read_text()) if doc]
    assert crd["kind"] == "CustomResourceDefinition", path
    return dict(crd)


def _strict(schema: Raw) -> Raw:
    """The schema with every declared object closed to undeclared fields."""
    closed = dict(schema)
    if "properties" in schema:
        closed["properties"] = {name: _strict(s) for name, s in schema["properties"].items()}
        if "additionalProperties" not in schema and not schema.get(
            "x-kubernetes-preserve-unknown-fields"
        ):
            closed["additionalProperties"] = False
    if isinstance(schema.get("additionalProperties"), dict):
        closed["additionalProperties"] = _strict(schema["additionalProperties"])
    if "items" in schema:
        closed["items"] = _strict(schema["items"])
    for key in ("allOf", "anyOf", "oneOf"):
        if key in schema:
            closed[key] = [_strict(s) for s in schema[key]]
    return closed


def schema_errors(crd: Raw, obj: Raw) -> list[str]:
    """Every way ``obj`` breaks the schema of its version in ``crd``, as ``path: message``
    (empty when it would be accepted)."""
    group, _, version = obj["apiVersion"].partition("/")
    assert group == crd["spec"]["group"] and obj["kind"] == crd["spec"]["names"]["kind"]
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version and v["served"]]
    schema = dict(served["schema"]["openAPIV3Schema"])
    schema["properties"] = {**schema["properties"], "metadata": {"type": "object"}}
    validator = jsonschema.Draft202012Validator(_strict(schema))
    return [
        f"{'.'.join(map(str, error.absolute_path)) or '<root>'}: {error.message}"
        for error in validator.iter_errors(obj)
    ]
