"""What a live snapshot keeps of each object: everything the parsers read (the view
parsed from the kept fields equals the view parsed from the whole object), and no
environment, argument, command, secret or config-map source."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests import support
from tests.unit.cache.test_dra_objects import RICH_CLAIM, RICH_CLASS
from volsched.cache.objects.longhorn import SETTING_TYPES
from volsched.cache.objects.read_fields import READ_ANNOTATIONS, read_fields
from volsched.cache.objects.registry import KINDS, kind_of

ROOT = Path(__file__).resolve().parents[3]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
SECRET = "hunter2-s3cr3t"


def example_objects() -> list[tuple[str, dict[str, Any]]]:
    found = []
    for path in EXAMPLES:
        for document in yaml.safe_load_all(path.read_text()):
            if isinstance(document, dict) and isinstance(document.get("metadata"), dict):
                kind = kind_of(str(document.get("apiVersion") or ""), str(document.get("kind")))
                if kind in KINDS:
                    found.append((f"{path.name}:{kind}/{document['metadata']['name']}", document))
    return found


def rich_pod() -> dict[str, Any]:
    """A pod that uses every field scheduling reads, and many it must not carry out."""
    container = {
        "name": "app",
        "image": "registry.example/app:1",
        "command": ["/bin/app", f"--password={SECRET}"],
        "args": [f"--token={SECRET}"],
        "env": [{"name": "PASSWORD", "value": SECRET}],
        "envFrom": [{"secretRef": {"name": f"{SECRET}-ref"}}],
        "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "1"}},
        "ports": [{"containerPort": 80, "hostPort": 8080, "protocol": "TCP"}],
    }
    sidecar = {**container, "name": "sidecar", "restartPolicy": "Always"}
    raw = support.pod(
        "web",
        claims=["data"],
        labels={"app": "web"},
        priority=10,
        spec={
            "containers": [container],
            "initContainers": [sidecar],
            "overhead": {"cpu": "10m"},
            "nodeSelector": {"disk": "ssd"},
            "tolerations": [{"key": "dedicated", "operator": "Exists", "effect": "NoSchedule"}],
            "affinity": {
                "podAntiAffinity": {
                    "requiredDuringSchedulingIgnoredDuringExecution": [
                        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}
                    ]
                }
            },
            "topologySpreadConstraints": [
                {
                    "maxSkew": 1,
                    "topologyKey": "zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": "web"}},
                }
            ],
            "schedulingGates": [{"name": "wait"}],
            "resourceClaims": [
                {"name": "gpu", "resourceClaimName": "gpu"},
                {"name": "scratch", "resourceClaimTemplateName": "scratch"},
            ],
            "serviceAccountName": "web",
            "imagePullSecrets": [{"name": f"{SECRET}-pull"}],
        },
    )
    raw["spec"]["volumes"] += [
        {"name": "creds", "secret": {"secretName": f"{SECRET}-volume"}},
        {"name": "conf", "configMap": {"name": f"{SECRET}-config"}},
        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}},
        {"name": "pd", "gcePersistentDisk": {"pdName": "disk-1", "readOnly": True}},
        {
            "name": "block",
            "rbd": {"monitors": ["m1"], "image": "i", "secretRef": {"name": f"{SECRET}-rbd"}},
        },
    ]
    raw["metadata"]["annotations"] = {
        "kubectl.kubernetes.io/last-applied-configuration": json.dumps(
            {"spec": {"containers": [container]}}
        ),
        "note": SECRET,
    }
    raw["metadata"]["managedFields"] = [{"manager": "kubectl", "fieldsV1": {SECRET: {}}}]
    raw["status"] = {
        "phase": "Pending",
        "nominatedNodeName": "node-1",
        "resourceClaimStatuses": [{"name": "scratch", "resourceClaimName": "web-scratch"}],
        "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
    }
    return raw


def workload(kind: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": kind,
        "metadata": support.meta("web", "default"),
        "spec": {
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"spec": {"containers": [rich_pod()["spec"]["containers"][0]]}},
        },
    }


CASES = [
    *example_objects(),
    ("rich pod", rich_pod()),
    ("rich device class", RICH_CLASS),
    ("rich resource claim", RICH_CLAIM),
    ("replica set", workload("ReplicaSet")),
    ("stateful set", workload("StatefulSet")),
]


def without_unread_annotations(view: Any) -> Any:
    meta = dataclasses.replace(
        view.meta,
        annotations={k: v for k, v in view.meta.annotations.items() if k in READ_ANNOTATIONS},
    )
    return dataclasses.replace(view, meta=meta)


@pytest.mark.parametrize(("name", "raw"), CASES, ids=[name for name, _ in CASES])
def test_the_kept_fields_parse_to_the_same_view(name: str, raw: dict[str, Any]) -> None:
    kind = kind_of(str(raw.get("apiVersion") or ""), str(raw["kind"]))
    kept = read_fields(kind, raw)
    assert kept is not None
    parse = KINDS[kind].parse
    assert parse(kept) == without_unread_annotations(parse(raw))
    assert SECRET not in json.dumps(kept)


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_every_kind_volsched_reads_has_a_shape(kind: str) -> None:
    """A kind without one would be stored as nothing (``read_fields`` answers None)."""
    raw = {"metadata": {"name": next(iter(SETTING_TYPES))}}
    assert read_fields(kind, raw) is not None


def test_the_rich_pod_keeps_what_scheduling_reads_and_nothing_it_must_not() -> None:
    kept = read_fields("Pod", rich_pod())
    assert kept is not None
    container = kept["spec"]["containers"][0]
    assert container == {
        "name": "app",
        "image": "registry.example/app:1",
        "resources": {"requests": {"cpu": "250m", "memory": "64Mi"}, "limits": {"cpu": "1"}},
        "ports": [{"hostPort": 8080, "protocol": "TCP"}],
    }
    assert [v for v in kept["spec"]["volumes"] if v["name"] in ("creds", "conf", "scratch")] == [
        {"name": "creds"},
        {"name": "conf"},
        {"name": "scratch", "ephemeral": {}},
    ]
    assert "annotations" not in kept["metadata"]
    assert "managedFields" not in kept["metadata"]


@pytest.mark.parametrize(
    ("name", "kept"),
    [("replica-soft-anti-affinity", True), ("backup-target-credential-secret", False)],
)
def test_only_the_longhorn_settings_volsched_reads_are_kept(name: str, kept: bool) -> None:
    raw = {
        "apiVersion": "longhorn.io/v1beta2",
        "kind": "Setting",
        "metadata": support.meta(name, "longhorn-system"),
        "value": "true",
    }
    assert (read_fields("LonghornSetting", raw) is not None) is kept
