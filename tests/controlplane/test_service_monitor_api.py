"""The chart's ServiceMonitor against prometheus-operator's own CRD on a real kube-apiserver.

The CRD (``tests/deploy/crds``, prometheus-operator v0.93.0) is installed on a real
kube-apiserver 1.36.2, and every variant of the chart's ServiceMonitor is created with
``dryRun=All`` and strict field validation: the server checks each field against the CRD's
schema, refuses an unknown one, and stores nothing. The refusals at the end show the check
would catch a wrong field.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.oracle.controlplane import ApiError, ControlPlane
from tests.controlplane import required_assets
from tests.deploy.test_helm import SERVICE_MONITOR_VARIANTS, monitor_objects

ASSETS = required_assets()

CRD = Path(__file__).resolve().parents[1] / "deploy" / "crds"
CRD_FILE = CRD / "monitoring.coreos.com_servicemonitors.yaml"
NAMESPACE = "obs"
DRY_RUN = (
    f"/apis/monitoring.coreos.com/v1/namespaces/{NAMESPACE}/servicemonitors"
    "?dryRun=All&fieldValidation=Strict"
)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ControlPlane]:
    """A control plane with the ServiceMonitor CRD established and the namespace made."""
    with ControlPlane(ASSETS, tmp_path_factory.mktemp("cp")) as cp:
        crd = yaml.safe_load(CRD_FILE.read_text(encoding="utf-8"))
        cp.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        wait_established(cp, crd["metadata"]["name"])
        cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        yield cp


def wait_established(cp: ControlPlane, name: str) -> None:
    path = f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}"
    deadline = time.monotonic() + 30
    conditions: list[Any] = []
    while time.monotonic() < deadline:
        conditions = (cp.get(path).get("status") or {}).get("conditions") or []
        if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
            return
        time.sleep(0.1)
    raise AssertionError(f"CRD {name} not established: {conditions}")


@pytest.mark.parametrize(
    "options", SERVICE_MONITOR_VARIANTS.values(), ids=SERVICE_MONITOR_VARIANTS.keys()
)
def test_each_variant_passes_a_strict_server_side_dry_run(
    cluster: ControlPlane, helm: Path, options: tuple[str, ...]
) -> None:
    (monitor,) = [o for k, o in monitor_objects(helm, *options).items() if k[0] == "ServiceMonitor"]
    created = cluster.request("POST", DRY_RUN, monitor)
    # The server kept every field it was given (strict validation would have refused an
    # unknown one), and stored nothing.
    assert created["spec"] == monitor["spec"]
    name = monitor["metadata"]["name"]
    with pytest.raises(ApiError) as missing:
        cluster.get(f"/apis/monitoring.coreos.com/v1/namespaces/{NAMESPACE}/servicemonitors/{name}")
    assert missing.value.status == 404


@pytest.mark.parametrize(
    ("endpoint", "status", "words"),
    [
        # A misspelt field: strict validation refuses what the schema does not declare.
        (
            {"port": "https", "bearerTokn": "x"},
            400,
            'unknown field "spec.endpoints[0].bearerTokn"',
        ),
        # A secret reference without its key: the schema requires one.
        (
            {"port": "https", "authorization": {"credentials": {"name": "token"}}},
            422,
            "spec.endpoints[0].authorization.credentials.key: Required value",
        ),
    ],
    ids=["unknown field", "missing key"],
)
def test_the_dry_run_refuses_what_the_crd_does_not_allow(
    cluster: ControlPlane, endpoint: dict[str, Any], status: int, words: str
) -> None:
    monitor = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "wrong", "namespace": NAMESPACE},
        "spec": {"selector": {}, "endpoints": [endpoint]},
    }
    with pytest.raises(ApiError) as refused:
        cluster.request("POST", DRY_RUN, monitor)
    assert refused.value.status == status
    assert words in status_message(refused.value)


def status_message(error: ApiError) -> str:
    """The message of the Status object kube-apiserver answered with."""
    body = str(error).split(": HTTP ", 1)[1].split(": ", 1)[1]
    message: str = json.loads(body)["message"]
    return message
