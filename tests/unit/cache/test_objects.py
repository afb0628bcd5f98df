"""Parsing raw objects: the API server's defaults, the pod's effective requests, and one
clear error naming the field for anything malformed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import node, pod, pv, pvc, storage_class
from volsched.cache.errors import ObjectError
from volsched.cache.objects.registry import KINDS


def parse(raw: dict[str, Any]) -> Any:
    return KINDS[raw["kind"]].parse(raw)


def test_pod_requests_follow_the_init_container_max_rule_sidecars_and_overhead() -> None:
    raw = pod("p", cpu="500m", memory="1Gi")
    raw["spec"]["initContainers"] = [
        {"name": "init", "resources": {"requests": {"cpu": "2", "memory": "100Mi"}}},
        {
            "name": "sidecar",
            "restartPolicy": "Always",
            "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}},
        },
    ]
    raw["spec"]["overhead"] = {"cpu": "10m"}
    view = parse(raw)
    # containers 500m + sidecar 100m = 600m; init peak 2000m (before the sidecar); + 10m
    assert view.requests["cpu"] == 2010
    assert view.requests["memory"] == 2**30 + 64 * 2**20


def test_pod_level_resources_replace_the_containers_sum() -> None:
    """PodLevelResources (on by default in 1.36): spec.resources' cpu and memory stand for
    the pod, a limit standing in for a missing request; other resources and overhead
    still come from the containers and spec.overhead."""
    raw = pod("p", cpu="500m", memory="1Gi")
    raw["spec"]["containers"][0]["resources"]["requests"]["example.com/dev"] = "1"
    raw["spec"]["resources"] = {"requests": {"cpu": "2"}, "limits": {"memory": "3Gi"}}
    raw["spec"]["overhead"] = {"cpu": "10m"}
    view = parse(raw)
    assert view.requests == {"cpu": 2010, "memory": 3 * 2**30, "example.com/dev": 1}
    assert (view.nonzero_cpu, view.nonzero_memory) == (2010, 3 * 2**30)
    # NodeResourcesFit's scorer skips pod-level resources for the incoming pod (its
    # scorer is built without the switch): the container's 500m and 1Gi, plus overhead.
    assert view.fit_score_nonzero == (510, 2**30)


def test_without_pod_level_resources_the_fit_scorer_reads_the_non_zero_figures() -> None:
    view = parse(pod("p", cpu="500m"))
    assert view.containers_nonzero is None
    assert view.fit_score_nonzero == (500, 200 * 2**20) == (view.nonzero_cpu, view.nonzero_memory)


def test_limits_stand_in_for_missing_requests() -> None:
    raw = pod("p")
    raw["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1", "nvidia.com/gpu": "2"}}
    view = parse(raw)
    assert view.requests == {"cpu": 1000, "nvidia.com/gpu": 2}


def test_nonzero_requests_for_scoring() -> None:
    view = parse(pod("p"))
    assert (view.nonzero_cpu, view.nonzero_memory) == (100, 200 * 2**20)


def test_defaults_applied() -> None:
    assert parse(storage_class("s", mode=None)).binding_mode == "Immediate"  # type: ignore[arg-type]
    volume = parse(pv("v", "1Gi"))
    assert volume.volume_mode == "Filesystem"
    claim = parse(pvc("c", storage_class=None))
    assert claim.storage_class is None and claim.volume_mode == "Filesystem"


def test_beta_storage_class_annotation_wins() -> None:
    raw = pvc("c", storage_class="spec-class")
    raw["metadata"]["annotations"] = {"volume.beta.kubernetes.io/storage-class": "beta-class"}
    assert parse(raw).storage_class == "beta-class"


@pytest.mark.parametrize(
    ("raw", "field", "problem"),
    [
        (node("n", cpu="four"), "status.allocatable.cpu", "is not a quantity"),
        (pv("v", "ten"), "spec.capacity.storage", "is not a quantity"),
        (pvc("c", request="-1Gi"), "spec.resources.requests.storage", "must not be negative"),
        (
            {"kind": "Pod", "metadata": {"name": "p"}, "spec": {"containers": "x"}},
            "spec.containers",
            "must be a list",
        ),
        (
            {"kind": "Node", "metadata": {"name": "n", "labels": {"a": 1}}},
            "metadata.labels.a",
            "must be a string",
        ),
        ({"kind": "Node", "metadata": {}}, "metadata.name", "is required"),
        (
            {
                "kind": "StorageClass",
                "metadata": {"name": "s"},
                "provisioner": "x",
                "volumeBindingMode": "Later",
            },
            "volumeBindingMode",
            "is not Immediate or WaitForFirstConsumer",
        ),
        (
            {
                "kind": "Pod",
                "metadata": {"name": "p"},
                "spec": {
                    "containers": [],
                    "affinity": {
                        "nodeAffinity": {
                            "requiredDuringSchedulingIgnoredDuringExecution": {
                                "nodeSelectorTerms": [
                                    {"matchExpressions": [{"key": "a", "operator": "Near"}]}
                                ]
                            }
                        }
                    },
                },
            },
            "spec.affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution"
            ".nodeSelectorTerms[0].matchExpressions[0].operator",
            "is not one of",
        ),
    ],
)
def test_malformed_objects_name_the_field(raw: dict[str, Any], field: str, problem: str) -> None:
    with pytest.raises(ObjectError) as caught:
        parse(raw)
    assert caught.value.field == field
    assert problem in str(caught.value)
    assert raw["kind"] in str(caught.value)


def test_nonzero_defaults_apply_per_container_only_when_absent() -> None:
    raw = pod("p")
    raw["spec"]["containers"] = [
        {"name": "a", "resources": {"requests": {"cpu": "50m", "memory": "0"}}},
    ]
    raw["spec"]["initContainers"] = [{"name": "init", "resources": {}}]
    view = parse(raw)
    # the init container asks for nothing: scored as 100m / 200Mi, above the 50m container
    assert view.nonzero_cpu == 100
    assert view.nonzero_memory == 200 * 2**20
    raw["spec"]["initContainers"] = []
    view = parse(raw)
    assert (view.nonzero_cpu, view.nonzero_memory) == (50, 0)
