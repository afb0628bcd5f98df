"""The CRDs under deploy/crds agree with the parsers, and the benchmark still runs."""

from __future__ import annotations

import importlib.util
import io
import json
from contextlib import redirect_stdout
from pathlib import Path
from typing import Any

import pytest
import yaml

from volsched.cache.objects.registry import KINDS
from volsched.cache.objects.replicated import (
    ANTI_AFFINITY_OVERRIDES,
    DATA_LOCALITIES,
    ROBUSTNESS_VALUES,
)

ROOT = Path(__file__).resolve().parents[3]
CRDS = {
    "StorageNode": "storagenodes.yaml",
    "Volume": "volumes.yaml",
    "Replica": "replicas.yaml",
}


def load(kind: str) -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load((ROOT / "deploy" / "crds" / CRDS[kind]).read_text())
    return data


def schema(kind: str) -> dict[str, Any]:
    version = load(kind)["spec"]["versions"][0]
    result: dict[str, Any] = version["schema"]["openAPIV3Schema"]
    return result


@pytest.mark.parametrize("kind", sorted(CRDS))
def test_crd_shape(kind: str) -> None:
    crd = load(kind)
    info = KINDS[kind]
    assert crd["apiVersion"] == "apiextensions.k8s.io/v1"
    assert crd["kind"] == "CustomResourceDefinition"
    spec = crd["spec"]
    assert crd["metadata"]["name"] == f"{info.plural}.volsched.io"
    assert spec["group"] == "volsched.io"
    assert spec["scope"] == "Cluster"
    assert spec["names"]["kind"] == kind
    assert spec["names"]["plural"] == info.plural
    [version] = spec["versions"]
    assert version["name"] == "v1alpha1"
    assert version["served"] is True and version["storage"] is True
    assert version["subresources"] == {"status": {}}
    for column in version["additionalPrinterColumns"]:
        assert column["jsonPath"].startswith(".")
        assert column["type"] in ("string", "integer", "number", "boolean", "date")
    root = version["schema"]["openAPIV3Schema"]
    assert root["type"] == "object"
    assert set(root["properties"]) >= {"spec", "status"}


def _walk(node: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(node, dict):
        found.append(node)
        for value in node.values():
            found.extend(_walk(value))
    elif isinstance(node, list):
        for value in node:
            found.extend(_walk(value))
    return found


@pytest.mark.parametrize("kind", sorted(CRDS))
def test_every_schema_node_is_typed(kind: str) -> None:
    """Structural schemas: every property has a type, or is an int-or-string quantity."""
    for node in _walk(schema(kind)):
        for name, prop in node.get("properties", {}).items():
            typed = "type" in prop or prop.get("x-kubernetes-int-or-string") is True
            assert typed, f"{kind}: property {name} has no type"
            if prop.get("x-kubernetes-int-or-string"):
                assert prop["minimum"] == 0, f"{kind}: {name} may be negative"


def test_volume_enums_match_the_parser() -> None:
    spec = schema("Volume")["properties"]["spec"]
    properties = spec["properties"]
    assert tuple(properties["dataLocality"]["enum"]) == DATA_LOCALITIES
    for level in ("Node", "Zone", "Disk"):
        key = f"replica{level}LevelSoftAntiAffinity"
        assert tuple(properties[key]["enum"]) == ANTI_AFFINITY_OVERRIDES
    status = schema("Volume")["properties"]["status"]["properties"]
    assert tuple(status["robustness"]["enum"]) == ROBUSTNESS_VALUES
    assert properties["numberOfReplicas"]["minimum"] == 1
    [rule] = spec["x-kubernetes-validations"]
    assert "strict-local" in rule["rule"] and "numberOfReplicas == 1" in rule["rule"]
    assert rule["fieldPath"] == ".dataLocality"


def test_replica_retry_count_is_not_negative() -> None:
    spec = schema("Replica")["properties"]["spec"]
    assert spec["properties"]["rebuildRetryCount"]["minimum"] == 0
    assert spec["required"] == ["volumeName"]


def test_bench_runs_on_a_small_cluster() -> None:
    path = ROOT / "bench" / "replica_placement.py"
    spec = importlib.util.spec_from_file_location("replica_placement_bench", path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = io.StringIO()
    with redirect_stdout(out):
        code = module.main(["--nodes", "30", "--volumes", "20", "--candidates", "5"])
    assert code == 0
    report = json.loads(out.getvalue())
    assert report["replicas_placed"] > 0
    assert set(report["ms_per_replica"]) == {"mean", "p50", "p99"}
