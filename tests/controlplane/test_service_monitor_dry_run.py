"""The chart's ServiceMonitor and its token Secret, created with ``dryRun=All`` and strict
field validation on a real kube-apiserver that serves prometheus-operator's current
ServiceMonitor CRD: what ``kubectl apply --dry-run=server`` of the rendered chart says.
tests/deploy checks the same against the CRD's schema without a server."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from bench.oracle.controlplane import ApiError, ControlPlane
from tests.controlplane import required_assets
from tests.deploy.crd_schema import load_crd
from tests.deploy.helm_binary import helm_binary
from tests.deploy.test_helm import SERVICE_MONITOR_CRD, monitor_objects

ASSETS = required_assets()
NAMESPACE = "volsched-system"
DRY_RUN = "?dryRun=All&fieldValidation=Strict"


def wait_established(cp: ControlPlane, name: str) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        crd = cp.get(f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}")
        conditions = (crd.get("status") or {}).get("conditions") or []
        if any(c["type"] == "Established" and c["status"] == "True" for c in conditions):
            return
        time.sleep(0.2)
    raise AssertionError(f"CRD {name} not established in 30 s")


@pytest.mark.parametrize(
    "options",
    [
        (),
        (
            "--set",
            "serviceMonitor.bearerTokenFile=/var/run/secrets/kubernetes.io/serviceaccount/token",
        ),
    ],
    ids=["authorization", "token file"],
)
def test_the_api_server_accepts_the_charts_service_monitor(
    tmp_path: Path, options: tuple[str, ...]
) -> None:
    assert ASSETS is not None
    helm, why = helm_binary()
    if helm is None:
        pytest.skip(why)
    objects = monitor_objects(helm, *options, namespace=NAMESPACE)
    crd = load_crd(SERVICE_MONITOR_CRD)
    with ControlPlane(ASSETS, tmp_path / "cp") as cp:
        cp.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        wait_established(cp, crd["metadata"]["name"])
        cp.request("POST", "/api/v1/namespaces", {"metadata": {"name": NAMESPACE}})
        paths = {
            "ServiceMonitor": f"/apis/monitoring.coreos.com/v1/namespaces/{NAMESPACE}/servicemonitors",
            "ServiceAccount": f"/api/v1/namespaces/{NAMESPACE}/serviceaccounts",
            "Secret": f"/api/v1/namespaces/{NAMESPACE}/secrets",
        }
        for (kind, _, name), obj in objects.items():
            if kind not in paths or (kind != "ServiceMonitor" and "metrics" not in name):
                continue
            try:
                created = cp.request("POST", paths[kind] + DRY_RUN, obj)
            except ApiError as error:
                pytest.fail(f"{kind} {name}: {error}")
            assert created["metadata"]["name"] == name
            if kind == "ServiceMonitor":
                # Nothing was pruned: every field the chart wrote is in the schema.
                assert created["spec"]["endpoints"] == obj["spec"]["endpoints"]
        # A dry run stores nothing.
        with pytest.raises(ApiError) as missing:
            cp.get(f"{paths['ServiceMonitor']}/volsched")
        assert missing.value.status == 404
