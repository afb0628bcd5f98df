"""Real-shaped KubeSchedulerConfigurations (``tests/cli/configs/``), each run through
``volsched simulate`` and checked for what it changes in the decisions, and through the
run command's loading path."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import ConfigError
from volsched.daemon.cli.main import main
from volsched.daemon.config.loading import load_settings
from volsched.daemon.runtime.profiles import build_profiles
from volsched.scheduling.policy import PrioritySpec
from volsched.scheduling.profile_builder import PluginFactory
from volsched.scheduling.scheduler_config import default_profile

ROOT = Path(__file__).resolve().parents[2]
CONFIGS = Path(__file__).resolve().parent / "configs"
EXAMPLE = str(ROOT / "examples" / "cluster.yaml")
CORPUS = sorted(CONFIGS.glob("*.yaml"))
HEAD = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"

# n-busy already runs a 3-cpu pod, n-idle nothing: LeastAllocated spreads a new pod onto
# n-idle, MostAllocated packs it onto n-busy.
BUSY_AND_IDLE = """
kind: Node
metadata: {name: n-busy}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
kind: Node
metadata: {name: n-idle}
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
metadata: {name: new, namespace: default}
spec:
  containers: [{name: c, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
---
kind: Pod
metadata: {name: unscored, namespace: default}
spec:
  schedulerName: no-scoring-scheduler
  containers: [{name: c, resources: {requests: {cpu: 500m, memory: 1Gi}}}]
"""


def config(name: str) -> str:
    return str(CONFIGS / name)


def simulate(capsys: pytest.CaptureFixture[str], *argv: str) -> dict[str, Any]:
    status = main(["simulate", *argv, "-o", "json", "--seed", "7"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    return {entry["pod"]: entry for entry in json.loads(captured.out)["pods"]}


@pytest.fixture
def busy_and_idle(tmp_path: Path) -> str:
    path = tmp_path / "cluster.yaml"
    path.write_text(BUSY_AND_IDLE)
    return str(path)


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_each_configuration_simulates_the_example_cluster(
    path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = simulate(capsys, EXAMPLE, "--config", str(path))
    assert any(entry["node"] for entry in pods.values())


@pytest.mark.parametrize("path", CORPUS, ids=lambda p: p.stem)
def test_the_run_command_loads_each_configuration(path: Path) -> None:
    settings = load_settings(str(path), environ={})
    cluster = ClusterCache()
    profiles = build_profiles(settings, cluster, PluginFactory(cluster), seed=1)
    assert profiles.names == {profile.scheduler_name for profile in settings.profiles}


def test_no_scoring_gives_every_node_the_same_score(
    busy_and_idle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    scored = simulate(capsys, busy_and_idle)["default/new"]["scores"]
    assert len(set(scored.values())) > 1
    for pods in (
        simulate(capsys, busy_and_idle, "--config", config("no-scoring.yaml")),
        simulate(capsys, EXAMPLE, "--config", config("no-scoring.yaml")),
    ):
        for entry in pods.values():
            assert len(set(entry["scores"].values())) <= 1, entry


def test_most_allocated_packs_onto_the_fullest_node(
    busy_and_idle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert simulate(capsys, busy_and_idle)["default/new"]["node"] == "n-idle"
    packed = simulate(capsys, busy_and_idle, "--config", config("most-allocated.yaml"))
    assert packed["default/new"]["node"] == "n-busy"


def test_requested_to_capacity_ratio_follows_its_shape(
    busy_and_idle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = simulate(capsys, busy_and_idle, "--config", config("requested-to-capacity-ratio.yaml"))
    assert pods["default/new"]["node"] == "n-busy"


def test_jupyterhub_weights_above_100_count_in_full(
    busy_and_idle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = simulate(capsys, busy_and_idle, "--config", config("jupyterhub-weights.yaml"))
    new = pods["default/new"]
    assert new["node"] == "n-busy"
    # MostAllocated scores n-busy 56 (cpu 87, memory 25) at weight 121: far above what
    # the default weights (at most 100 each) could sum to.
    assert new["scores"]["n-busy"] >= 56 * 121


def test_each_profile_decides_its_own_pods(
    busy_and_idle: str, capsys: pytest.CaptureFixture[str]
) -> None:
    pods = simulate(capsys, busy_and_idle, "--config", config("multiple-profiles.yaml"))
    assert len(set(pods["default/new"]["scores"].values())) > 1
    assert len(set(pods["default/unscored"]["scores"].values())) == 1


def test_a_disabled_filter_admits_a_node_it_would_reject(
    capsys: pytest.CaptureFixture[str],
) -> None:
    report = simulate(capsys, EXAMPLE)["batch/report"]
    assert report["filtered"]["node-b2"] == ["node(s) had untolerated taint(s)"]
    admitted = simulate(capsys, EXAMPLE, "--config", config("filter-disabled.yaml"))
    assert "node-b2" not in admitted["batch/report"]["filtered"]


@pytest.mark.parametrize("name", ["kwok-empty-defaults.yaml", "every-plugin-argument.yaml"])
def test_defaults_spelled_out_decide_as_kube_schedulers_default_profile(
    name: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Neither names a storage plugin: each decides as a configuration with no profile
    at all — kube-scheduler's default profile — scores included. Without a configuration
    volsched's own profile adds PrioritizeVolumes, which scores only pods whose claims
    have PVs to choose from."""
    bare = tmp_path / "bare.yaml"
    bare.write_text(HEAD)
    plain = simulate(capsys, EXAMPLE, "--config", str(bare))
    configured = simulate(capsys, EXAMPLE, "--config", config(name))
    assert {pod: (e["node"], e["scores"]) for pod, e in configured.items()} == {
        pod: (e["node"], e["scores"]) for pod, e in plain.items()
    }
    own = simulate(capsys, EXAMPLE)
    differing = {pod for pod in own if own[pod]["scores"] != plain[pod]["scores"]}
    assert differing == {"shop/kafka-0"}


def test_every_plugin_argument_at_its_default_is_the_default_profile() -> None:
    settings = load_settings(config("every-plugin-argument.yaml"), environ={})
    (profile,) = settings.profiles
    default = default_profile(with_storage=False).policy
    assert profile.policy_for(False).predicates == default.predicates
    # volsched's own default profile adds only its storage preference.
    assert (
        *profile.policy_for(False).priorities,
        PrioritySpec("PrioritizeVolumes", "PrioritizeVolumes", 1),
    ) == default.priorities
    assert profile.bind_timeout_seconds == 600
    assert profile.policy.min_candidate_nodes == (10, 100)


def test_empty_leader_election_values_take_upstreams_defaults() -> None:
    election = load_settings(config("kwok-empty-defaults.yaml"), environ={}).leader_election
    assert election.enabled
    assert (election.lease_name, election.lease_namespace) == ("kube-scheduler", "kube-system")
    assert (
        election.lease_duration_seconds,
        election.renew_deadline_seconds,
        election.retry_period_seconds,
    ) == (15, 10, 2)
    named = load_settings(config("jupyterhub-weights.yaml"), environ={}).leader_election
    assert (named.lease_name, named.lease_namespace) == ("user-scheduler-lock", "jhub")


@pytest.mark.parametrize(
    ("body", "message"),
    [
        (
            "profiles: [{plugins: {filter: {enabled: [{name: EBSLimits}]}}}]",
            'profiles[0].plugins.filter.enabled[0].name: Invalid value: "EBSLimits": was '
            'invalid in version "kubescheduler.config.k8s.io/v1"',
        ),
        (
            "profiles: [{plugins: {multiPoint: {enabled: [{name: GCEPDLimits}]}}}]",
            'profiles[0].plugins.multiPoint.enabled[0].name: Invalid value: "GCEPDLimits"',
        ),
        (
            "profiles: [{pluginConfig: [{name: AzureDiskLimits}]}]",
            'profiles[0].pluginConfig[0].name: Invalid value: "AzureDiskLimits"',
        ),
        (
            "profiles: [{plugins: {multiPoint: {enabled: [{name: Coscheduling}]}}}]",
            "Coscheduling is an out-of-tree plugin, not part of kube-scheduler",
        ),
        (
            "profiles: [{plugins: {preScore: {disabled: [{name: TaintToleration}]}}}]",
            "profiles[0].plugins.preScore.disabled[0].name: TaintToleration's Score runs without its "
            "PreScore: kube-scheduler fails every pod with: running Score plugins: plugin "
            '"TaintToleration" failed with: failed to read "PreScoreTaintToleration"',
        ),
        (
            "profiles: [{plugins: {preFilter: {disabled: [{name: '*'}]}}}]",
            "profiles[0].plugins.preFilter.disabled[0].name: NodePorts's Filter runs without its "
            "PreFilter",
        ),
        (
            "profiles: [{plugins: {multiPoint: {disabled: [{name: '*'}]}, "
            "filter: {enabled: [{name: NodePorts}]}}}]",
            "profiles[0].plugins.filter.enabled[0].name: NodePorts's Filter runs without its "
            'PreFilter: kube-scheduler fails every pod with: running "NodePorts" filter '
            'plugin: reading "PreFilterNodePorts" from cycleState: not found; enable NodePorts '
            "at multiPoint (or at preFilter as well)",
        ),
        (
            "podInitialBackoffSeconds: 0",
            "podInitialBackoffSeconds: must be greater than 0, not 0",
        ),
        ("parallelism: -2", "parallelism: must be greater than 0, not -2"),
    ],
)
def test_refusals_are_one_line_naming_the_field(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], body: str, message: str
) -> None:
    path = tmp_path / "sched.yaml"
    path.write_text(HEAD + body + "\n")
    with pytest.raises(ConfigError) as error:
        load_settings(str(path), environ={})
    assert message in str(error.value)
    status = main(["simulate", EXAMPLE, "--config", str(path)])
    err = capsys.readouterr().err
    assert status == 2
    assert err.count("\n") == 1 and "Traceback" not in err
    assert f"{path} (KubeSchedulerConfiguration): " in err


@pytest.mark.parametrize(
    "plugins",
    [
        "preScore: {disabled: [{name: NodeResourcesFit}, {name: NodeAffinity}]}",
        "preFilter: {disabled: [{name: NodeAffinity}, {name: VolumeZone}]}",
        "preFilter: {disabled: [{name: NodeResourcesFit}]}\n    filter: {disabled: [{name: NodeResourcesFit}]}",
        # The v1beta1 habit of naming a plugin at each of its points.
        "multiPoint: {disabled: [{name: '*'}]}\n    preFilter: {enabled: [{name: NodePorts}]}"
        "\n    filter: {enabled: [{name: NodePorts}]}\n    score: {enabled: [{name: ImageLocality}]}",
    ],
)
def test_points_upstreams_plugins_work_without_are_accepted(tmp_path: Path, plugins: str) -> None:
    path = tmp_path / "sched.yaml"
    path.write_text(HEAD + f"profiles:\n- plugins:\n    {plugins}\n")
    (profile,) = load_settings(str(path), environ={}).profiles
    assert profile.policy.priorities


@pytest.mark.parametrize(
    ("version", "removed_in", "advice"),
    [
        ("v1beta3", "1.29", "SelectorSpread was removed"),
        ("v1beta2", "1.28", "TaintToleration's from 1 to 3"),
        ("v1beta1", "1.23", "became NodeResourcesFit's scoringStrategy"),
        ("v1alpha1", "1.19", "became profiles of plugins"),
    ],
)
def test_retired_versions_say_how_to_migrate(
    tmp_path: Path, version: str, removed_in: str, advice: str
) -> None:
    path = tmp_path / "sched.yaml"
    # The version is read first: the unknown field after it is never reached.
    path.write_text(
        f"apiVersion: kubescheduler.config.k8s.io/{version}\n"
        "kind: KubeSchedulerConfiguration\nalgorithmSource: {provider: DefaultProvider}\n"
    )
    with pytest.raises(ConfigError) as error:
        load_settings(str(path), environ={})
    text = str(error.value)
    assert (
        f'apiVersion: no kind "KubeSchedulerConfiguration" is registered for version "kubescheduler.config.k8s.io/{version}"'
        in text
    )
    assert f"removed it in {removed_in}" in text
    assert advice in text


CLAIMING = """
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "10"}}
---
kind: Pod
metadata: {name: gpu-job, namespace: default}
spec:
  resourceClaims: [{name: gpu, resourceClaimName: a-gpu}]
  containers: [{name: c, resources: {claims: [{name: gpu}]}}]
---
kind: Pod
metadata: {name: plain, namespace: default}
spec:
  containers: [{name: c}]
---
apiVersion: resource.k8s.io/v1
kind: DeviceClass
metadata: {name: gpu.example.com}
spec:
  selectors: [{cel: {expression: 'device.driver == "gpu.example.com"'}}]
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaim
metadata: {name: a-gpu, namespace: default}
spec:
  devices:
    requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]
"""


@pytest.mark.parametrize(
    ("plugins", "gpu_job_node"),
    [("", None), ("multiPoint: {disabled: [{name: DynamicResources}]}", "n1")],
    ids=["default: left pending, with the reason", "DynamicResources disabled: placed"],
)
def test_a_pod_with_resource_claims_is_not_placed_without_its_devices(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], plugins: str, gpu_job_node: str | None
) -> None:
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLAIMING)
    configuration = tmp_path / "config.yaml"
    configuration.write_text(f"---\n{HEAD}profiles: [{{plugins: {{{plugins}}}}}]\n")
    decided = simulate(capsys, str(cluster), "--config", str(configuration))
    assert decided["default/plain"]["node"] == "n1"
    assert decided["default/gpu-job"]["node"] == gpu_job_node
    if gpu_job_node is None:
        assert decided["default/gpu-job"]["message"].startswith(
            "0/1 nodes are available: volsched does not allocate dynamic resources "
            "(the pod has ResourceClaims)."
        )


@pytest.mark.parametrize(
    ("args", "error"),
    [
        ("{filterTimeout: 10s, bindingTimeout: 600s}", None),
        ("{filterTimeout: 0s}", None),
        ("{bindingTimeout: 500ms}", "args.bindingTimeout: must be at least 1 second"),
        ("{filterTimeout: soon}", "args.filterTimeout: must be a duration such as 10s"),
        ("{claims: 3}", "args.claims: unknown field"),
    ],
)
def test_dynamic_resources_arguments_are_checked_as_upstream(
    tmp_path: Path, args: str, error: str | None
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        f"---\n{HEAD}profiles: [{{pluginConfig: [{{name: DynamicResources, args: {args}}}]}}]\n"
    )
    if error is None:
        load_settings(str(path), environ={})
        return
    with pytest.raises(ConfigError) as failure:
        load_settings(str(path), environ={})
    assert error in str(failure.value)


def test_a_profiles_own_percentage_of_nodes_to_score_overrides_the_top_level(
    tmp_path: Path,
) -> None:
    path = tmp_path / "config.yaml"
    path.write_text(
        f"---\n{HEAD}percentageOfNodesToScore: 30\n"
        "profiles: [{schedulerName: a, percentageOfNodesToScore: 70}, {schedulerName: b}]\n"
    )
    settings = load_settings(str(path), environ={})
    cluster = ClusterCache()
    profiles = build_profiles(settings, cluster, PluginFactory(cluster, ()), seed=1)
    assert {name: profiles.by_name[name].profile.percentage_of_nodes_to_score for name in "ab"} == {
        "a": 70,
        "b": 30,
    }


def test_a_pod_whose_claim_does_not_exist_is_not_attempted(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """DynamicResources' PreEnqueue holds it, as kube-scheduler 1.36 does: no filter runs
    (no ``0/N nodes are available``), and ``simulate`` says what it waits for."""
    cluster = tmp_path / "cluster.yaml"
    cluster.write_text(CLAIMING.replace("resourceClaimName: a-gpu", "resourceClaimName: b-gpu"))
    decided = simulate(capsys, str(cluster))
    assert decided["default/gpu-job"]["node"] is None
    assert decided["default/gpu-job"]["message"] == 'could not find ResourceClaim "default/b-gpu"'
    assert decided["default/plain"]["node"] == "n1"
