"""``volsched simulate`` with a configuration that lists HTTP extenders: they cannot be
called offline, so one warning names them, and the resources they manage for the
scheduler are still left out of NodeResourcesFit."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from volsched.daemon.cli.main import main

SNAPSHOT = """
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
kind: Pod
metadata: {name: trainer, namespace: default}
spec:
  schedulerName: volsched
  containers: [{name: c, resources: {limits: {example.com/gpu: "1"}}}]
---
kind: Pod
metadata: {name: fpga, namespace: default}
spec:
  schedulerName: volsched
  containers: [{name: c, resources: {limits: {example.com/fpga: "1"}}}]
"""
CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles: [{schedulerName: volsched}]
extenders:
- urlPrefix: http://gpu-extender:8888/scheduler
  filterVerb: filter
  managedResources: [{name: example.com/gpu, ignoredByScheduler: true}]
- urlPrefix: https://fpga-extender/
  prioritizeVerb: prioritize
  weight: 1
  managedResources: [{name: example.com/fpga}]
"""


@pytest.mark.parametrize("command", ["simulate", "explain"])
def test_one_warning_names_the_extenders_and_ignored_resources_still_fit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    snapshot = tmp_path / "cluster.yaml"
    snapshot.write_text(SNAPSHOT)
    config = tmp_path / "config.yaml"
    config.write_text(CONFIG)
    pod = ["default/trainer"] if command == "explain" else []
    status = main([command, *pod, str(snapshot), "--config", str(config), "-o", "json"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert captured.err.splitlines() == [
        "warning: extenders are not called offline, decided without: "
        "http://gpu-extender:8888/scheduler, https://fpga-extender/"
    ]
    if command == "simulate":
        pods = {entry["pod"]: entry for entry in json.loads(captured.out)["pods"]}
        # The gpu is the extender's to account for; the fpga is NodeResourcesFit's.
        assert pods["default/trainer"]["node"] == "n1"
        assert pods["default/fpga"]["node"] is None
