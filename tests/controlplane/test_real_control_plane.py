"""The real control plane harness (``bench.oracle``) against real Kubernetes binaries.

These tests need etcd, kube-apiserver, kube-controller-manager and kube-scheduler v1.36.2 in
the directory named by ``VOLSCHED_KUBE_ASSETS`` (docs/guides/oracle.md says how to build
them); without it the module is skipped. They prove the harness starts a working cluster and
that the recorder reproduces committed recordings, so new recordings can be trusted.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from bench.oracle.controlplane import ControlPlane
from bench.oracle.record import record
from tests.controlplane import required_assets

ASSETS = required_assets()

RECORDINGS = Path(__file__).resolve().parents[1] / "oracle" / "kube-scheduler-1.36.2"
MERGE = "application/merge-patch+json"


def test_control_plane_serves_and_binds_a_claim(tmp_path: Path) -> None:
    assert ASSETS is not None
    with ControlPlane(ASSETS, tmp_path / "cp") as cp:
        assert cp.readyz() == "ok"
        assert cp.get("/version")["gitVersion"] == "v1.36.2"
        cp.request(
            "POST",
            "/api/v1/persistentvolumes",
            {
                "metadata": {"name": "pv-1"},
                "spec": {
                    "capacity": {"storage": "1Gi"},
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "",
                    "hostPath": {"path": "/tmp/volsched-oracle-pv-1"},
                },
            },
        )
        cp.request(
            "POST",
            "/api/v1/namespaces/default/persistentvolumeclaims",
            {
                "metadata": {"name": "claim-1"},
                "spec": {
                    "accessModes": ["ReadWriteOnce"],
                    "storageClassName": "",
                    "resources": {"requests": {"storage": "1Gi"}},
                },
            },
        )
        claim: dict[str, Any] = {}
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            claim = cp.get("/api/v1/namespaces/default/persistentvolumeclaims/claim-1")
            if claim.get("status", {}).get("phase") == "Bound":
                break
            time.sleep(0.2)
        assert claim["status"]["phase"] == "Bound", claim.get("status")
        assert claim["spec"]["volumeName"] == "pv-1"
    assert cp.log_path("kube-apiserver").stat().st_size > 0


@pytest.mark.parametrize("stem", ["002-fit-existing-load", "024-msg-all-tainted"])
def test_recorder_reproduces_a_committed_recording(tmp_path: Path, stem: str) -> None:
    assert ASSETS is not None
    committed = yaml.safe_load((RECORDINGS / f"{stem}.yaml").read_text())
    scenario = {key: committed[key] for key in ("name", "config", "objects")}
    source = tmp_path / "scenarios" / f"{stem}.yaml"
    source.parent.mkdir()
    source.write_text(yaml.safe_dump(scenario, sort_keys=False))
    [written] = record([source], tmp_path / "out", ASSETS, keep_logs=tmp_path / "logs")
    recorded = yaml.safe_load(written.read_text())
    assert recorded["expect"] == committed["expect"]
    assert recorded["objects"] == committed["objects"]
