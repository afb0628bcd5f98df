"""A KubeSchedulerConfiguration in the config file, as a user writes one: two profiles
(two scheduler names) deciding one snapshot, arguments that change a decision, and the
config file's two documents filling one settings tree."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from volsched.cache.errors import ConfigError
from volsched.daemon.cli.main import main
from volsched.daemon.config.loading import load_settings

HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

# n-busy already runs a 3-cpu pod; n-idle runs nothing. Both fit either new pod.
SNAPSHOT = """
kind: Node
metadata: {name: n-busy, labels: {pool: general}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
kind: Node
metadata: {name: n-idle, labels: {pool: general}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
kind: Node
metadata: {name: n-storage, labels: {pool: storage}}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
kind: Pod
metadata: {name: running, namespace: default}
spec:
  nodeName: n-busy
  containers: [{name: c, resources: {requests: {cpu: "3", memory: 1Gi}}}]
status: {phase: Running}
---
kind: Pod
metadata: {name: spread-me, namespace: default}
spec:
  schedulerName: spreading
  containers: [{name: c, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
---
kind: Pod
metadata: {name: pack-me, namespace: default}
spec:
  schedulerName: packing
  containers: [{name: c, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
"""

TWO_PROFILES = (
    HEAD
    + """
profiles:
- schedulerName: spreading
  pluginConfig:
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [general]}]}]
- schedulerName: packing
  plugins:
    score:
      disabled: [{name: '*'}]
      enabled: [{name: NodeResourcesFit}]
  pluginConfig:
  - name: NodeResourcesFit
    args: {scoringStrategy: {type: MostAllocated}}
  - name: NodeAffinity
    args:
      addedAffinity:
        requiredDuringSchedulingIgnoredDuringExecution:
          nodeSelectorTerms: [{matchExpressions: [{key: pool, operator: In, values: [general]}]}]
"""
)


def write(tmp_path: Path, name: str, text: str) -> str:
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def simulate(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    status = main(["simulate", *argv, "-o", "json", "--seed", "3"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    return {entry["pod"]: entry for entry in json.loads(captured.out)["pods"]}


def test_each_profile_decides_its_own_pods(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = write(tmp_path, "cluster.yaml", SNAPSHOT)
    config = write(tmp_path, "config.yaml", TWO_PROFILES)
    pods = simulate(capsys, snapshot, "--config", config)
    # LeastAllocated spreads onto the idle node; MostAllocated packs onto the busy one;
    # the added affinity keeps both off the storage pool.
    assert pods["default/spread-me"]["node"] == "n-idle"
    assert pods["default/pack-me"]["node"] == "n-busy"


def test_without_the_profiles_both_pods_spread(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = write(tmp_path, "cluster.yaml", SNAPSHOT)
    pods = simulate(capsys, snapshot)
    assert pods["default/pack-me"]["node"] != "n-busy"


def test_explain_names_the_enforced_affinity(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = write(tmp_path, "cluster.yaml", SNAPSHOT)
    config = write(tmp_path, "config.yaml", TWO_PROFILES)
    status = main(["explain", "default/pack-me", snapshot, "--config", config, "-o", "json"])
    report = json.loads(capsys.readouterr().out)
    assert status == 0
    rows = {row["node"]: row for row in report["nodes"]}
    assert rows["n-storage"]["predicate"] == "NodeAffinity"
    assert rows["n-storage"]["reasons"] == ["node(s) didn't match scheduler-enforced node affinity"]
    assert set(rows["n-busy"]["scores"]) == {"NodeResourcesFit"}


def test_config_file_with_both_documents(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        "config.yaml",
        "database: {path: /var/lib/volsched/db}\nbindTimeoutSeconds: 300\n---\n"
        + HEAD
        + "podInitialBackoffSeconds: 2\npodMaxBackoffSeconds: 30\npercentageOfNodesToScore: 40\n"
        + "leaderElection: {leaderElect: false, leaseDuration: 1m30s, retryPeriod: 500ms}\n"
        + "profiles: [{schedulerName: fast}, {schedulerName: slow, pluginConfig: "
        + "[{name: VolumeBinding, args: {bindTimeoutSeconds: 900}}]}]\n",
    )
    settings = load_settings(path, environ={})
    assert settings.database.path == "/var/lib/volsched/db"
    assert [p.scheduler_name for p in settings.profiles] == ["fast", "slow"]
    assert settings.scheduler_name == "fast"
    assert (settings.backoff.initial_seconds, settings.backoff.max_seconds) == (2, 30)
    assert settings.percentage_of_nodes_to_score == 40
    assert not settings.leader_election.enabled
    assert settings.leader_election.lease_duration_seconds == 90
    assert settings.leader_election.retry_period_seconds == 0.5
    assert [p.bind_timeout_seconds for p in settings.profiles] == [600, 900]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "percentageOfNodesToScore: 10\n---\n" + HEAD + "percentageOfNodesToScore: 20\n",
            "percentageOfNodesToScore is set in the KubeSchedulerConfiguration document and "
            "percentageOfNodesToScore in volsched's; keep one",
        ),
        (
            "schedulerName: x\n---\n" + HEAD + "profiles: [{schedulerName: y}]\n",
            "profiles[].schedulerName is set in the KubeSchedulerConfiguration document",
        ),
        (HEAD + "---\n" + HEAD, "holds 2 KubeSchedulerConfiguration documents; keep one"),
        (
            HEAD + "leaderElection: {leaseDuration: soon}\n",
            "leaderElection.leaseDuration: must be a duration such as 15s, not 'soon'",
        ),
        (
            HEAD + "leaderElection: {resourceLock: endpoints}\n",
            "leaderElection.resourceLock: must be leases when leaderElect is true",
        ),
        (
            HEAD + "profiles: [{plugins: {filter: {enabled: [{name: Nope}]}}}]\n",
            "config.yaml (KubeSchedulerConfiguration): profiles[0].plugins.filter.enabled[0].name",
        ),
    ],
)
def test_config_file_mistakes(tmp_path: Path, text: str, message: str) -> None:
    path = write(tmp_path, "config.yaml", text)
    with pytest.raises(ConfigError) as error:
        load_settings(path, environ={})
    assert message in str(error.value)


def test_policy_and_profiles_together_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    snapshot = write(tmp_path, "cluster.yaml", SNAPSHOT)
    config = write(tmp_path, "config.yaml", TWO_PROFILES)
    policy = write(
        tmp_path, "policy.json", '{"kind": "Policy", "predicates": [], "priorities": []}'
    )
    status = main(["simulate", snapshot, "--config", config, "--policy", policy])
    err = capsys.readouterr().err
    assert status == 2
    assert "a Policy file and a KubeSchedulerConfiguration's profiles cannot both be given" in err


def test_the_documented_example_loads(tmp_path: Path) -> None:
    root = Path(__file__).resolve().parents[2]
    page = (root / "docs" / "reference" / "kubeschedulerconfiguration.md").read_text()
    start = page.index("```yaml\ndatabase: {path: /var/lib/volsched/volsched.db}")
    block = page[start + len("```yaml\n") :]
    block = block[: block.index("```")]
    settings = load_settings(write(tmp_path, "config.yaml", block), environ={})
    assert [p.scheduler_name for p in settings.profiles] == ["volsched", "volsched-packing"]
    packing = settings.profiles[1].policy
    assert "NodeResourcesBalancedAllocation" not in [p.name for p in packing.priorities]
