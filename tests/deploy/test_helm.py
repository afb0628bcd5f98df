"""The Helm chart under deploy/helm/volsched: it lints, its output is valid for
Kubernetes, its defaults render exactly the plain manifests of deploy/, and its values
change what they say they change."""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest
import yaml

from tests.deploy.service_monitor_model import service_monitor_problems
from tests.deploy.test_manifests import (
    ADD_ON_API_GROUPS,
    KUBERNETES_VERSION,
    MANIFESTS,
    OPTIONAL_SETS,
    load_documents,
)
from volsched.daemon.config.loading import load_settings
from volsched.daemon.config.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "deploy" / "helm" / "volsched"
Raw = dict[str, Any]
HELM_LABELS = (
    "helm.sh/chart",
    "app.kubernetes.io/managed-by",
    "app.kubernetes.io/instance",
    "app.kubernetes.io/version",
)


def render(helm: Path, *options: str, namespace: str = "volsched-system") -> list[Raw]:
    completed = subprocess.run(
        [str(helm), "template", "volsched", str(CHART), "--namespace", namespace, *options],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
    with tempfile.NamedTemporaryFile("w", suffix=".yaml") as out:
        out.write(completed.stdout)
        out.flush()
        return load_documents(Path(out.name))


def key(obj: Raw) -> tuple[str, str, str]:
    meta = obj["metadata"]
    return obj["kind"], meta.get("namespace", ""), meta["name"]


def without_helm(obj: Raw) -> Raw:
    """The object as the plain manifests write it: no Helm labels or config checksum."""
    obj = yaml.safe_load(yaml.safe_dump(obj))
    for meta in (obj["metadata"], obj.get("spec", {}).get("template", {}).get("metadata", {})):
        for label in HELM_LABELS:
            (meta.get("labels") or {}).pop(label, None)
        annotations = meta.get("annotations") or {}
        annotations.pop("checksum/config", None)
        if "annotations" in meta and not annotations:
            del meta["annotations"]
    return obj


def settings_of(config_map: Raw) -> Settings:
    """The settings a replica reads from the ConfigMap (less what differs per process)."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "config.yaml"
        path.write_text(config_map["data"]["config.yaml"])
        settings = load_settings(str(path), environ={})
    election = replace(settings.leader_election, identity="replica")
    return replace(settings, source="", leader_election=election)


def plain(optional: tuple[str, ...] = ()) -> dict[tuple[str, str, str], Raw]:
    """The plain manifests: the core set (no Namespace: Helm installs into one), plus
    the optional sets asked for."""
    chosen = {}
    for manifest in MANIFESTS:
        parts = manifest.path.relative_to(ROOT / "deploy").parts
        optional_set = next((s for s in OPTIONAL_SETS if s in parts), None)
        if manifest.obj["kind"] == "Namespace" or (optional_set and optional_set not in optional):
            continue
        chosen[key(manifest.obj)] = manifest.obj
    return chosen


def test_the_chart_lints(helm: Path) -> None:
    completed = subprocess.run(
        [str(helm), "lint", str(CHART), "--strict", "--set", "webhook.enabled=true"],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr


@pytest.mark.parametrize(
    "options",
    [
        (),
        ("--set", "webhook.enabled=true", "--set", "extender.enabled=true"),
        ("--set", "serviceMonitor.enabled=true", "--set", "podDisruptionBudget.enabled=false"),
    ],
    ids=["defaults", "webhook and extender", "monitoring"],
)
def test_the_output_is_valid_for_kubernetes(helm: Path, options: tuple[str, ...]) -> None:
    for obj in render(helm, "--include-crds", *options):
        if obj["apiVersion"].startswith((*ADD_ON_API_GROUPS, "monitoring.coreos.com/")):
            continue
        try:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{key(obj)}: {'.'.join(map(str, exc.path))}: {exc.message}")


@pytest.mark.parametrize(
    ("options", "sets"),
    [
        ((), ()),
        (
            ("--set", "webhook.enabled=true", "--set", "extender.enabled=true"),
            ("webhook", "extender"),
        ),
    ],
    ids=["core", "with the optional sets"],
)
def test_the_defaults_are_the_plain_manifests(
    helm: Path, options: tuple[str, ...], sets: tuple[str, ...]
) -> None:
    rendered = {key(obj): without_helm(obj) for obj in render(helm, "--include-crds", *options)}
    expected = plain(sets)
    assert sorted(rendered) == sorted(expected)
    for found_key, obj in rendered.items():
        if found_key == ("ConfigMap", "volsched-system", "volsched-config"):
            # The same settings, however the YAML is laid out.
            assert settings_of(obj) == settings_of(expected[found_key])
            continue
        assert obj == expected[found_key], found_key


def test_values_change_what_they_say(helm: Path) -> None:
    objects = {
        key(obj): obj
        for obj in render(
            helm,
            "--set",
            "replicaCount=3",
            "--set",
            "image.repository=registry.example.com/volsched",
            "--set",
            "image.tag=0.2.0",
            "--set",
            "profiles[0].schedulerName=storage-aware",
            "--set",
            "webhook.enabled=true",
            namespace="platform",
        )
    }
    deployment = objects[("Deployment", "platform", "volsched")]
    assert deployment["spec"]["replicas"] == 3
    (container,) = deployment["spec"]["template"]["spec"]["containers"]
    assert container["image"] == "registry.example.com/volsched:0.2.0"
    settings = settings_of(objects[("ConfigMap", "platform", "volsched-config")])
    assert [p.scheduler_name for p in settings.profiles] == ["storage-aware"]
    # The optional sets move to the release namespace with everything that names it.
    hook = objects[("MutatingWebhookConfiguration", "", "volsched-scheduler-routing")]
    assert hook["webhooks"][0]["clientConfig"]["service"]["namespace"] == "platform"
    assert hook["metadata"]["annotations"]["cert-manager.io/inject-ca-from"] == (
        "platform/volsched-webhook"
    )
    webhook = objects[("Deployment", "platform", "volsched-webhook")]
    assert webhook["spec"]["template"]["spec"]["containers"][0]["image"] == (
        "registry.example.com/volsched:0.2.0"
    )
    certificate = objects[("Certificate", "platform", "volsched-webhook")]
    assert "volsched-webhook.platform.svc" in certificate["spec"]["dnsNames"]


def monitor_objects(helm: Path, *options: str, namespace: str = "obs") -> dict[Any, Raw]:
    rendered = render(helm, "--set", "serviceMonitor.enabled=true", *options, namespace=namespace)
    return {key(obj): obj for obj in rendered}


def monitor_endpoint(helm: Path, *options: str) -> Raw:
    (monitor,) = [o for k, o in monitor_objects(helm, *options).items() if k[0] == "ServiceMonitor"]
    (found,) = monitor["spec"]["endpoints"]
    return dict(found)


def test_the_service_monitor_scrapes_over_https_with_a_token(helm: Path) -> None:
    """What the ServiceMonitor tells Prometheus; the integration test
    test_http_auth.py scrapes the daemon with exactly this."""
    default = monitor_endpoint(helm)
    assert default["scheme"] == "https" and default["path"] == "/metrics"
    assert default["authorization"] == {
        "type": "Bearer",
        "credentials": {"name": "volsched-metrics-token", "key": "token"},
    }
    assert "bearerTokenFile" not in default
    assert default["tlsConfig"] == {
        "serverName": "volsched.obs.svc",
        "ca": {"secret": {"name": "volsched-tls", "key": "ca.crt"}},
    }
    # The CA follows the serving Secret, or comes from where the values say.
    assert monitor_endpoint(helm, "--set", "tls.secretName=serving")["tlsConfig"]["ca"] == {
        "secret": {"name": "serving", "key": "ca.crt"}
    }
    from_config_map = monitor_endpoint(
        helm,
        "--set",
        "serviceMonitor.tlsConfig.ca.configMap.name=cluster-ca",
        "--set",
        "serviceMonitor.tlsConfig.ca.configMap.key=ca.pem",
        "--set",
        "serviceMonitor.tlsConfig.serverName=volsched.example.com",
    )
    assert from_config_map["tlsConfig"] == {
        "serverName": "volsched.example.com",
        "ca": {"configMap": {"name": "cluster-ca", "key": "ca.pem"}},
    }
    # No verification only when asked for.
    unchecked = monitor_endpoint(helm, "--set", "serviceMonitor.tlsConfig.insecureSkipVerify=true")
    assert unchecked["tlsConfig"] == {"insecureSkipVerify": True}


def test_the_service_monitors_token_comes_from_a_service_account_token_secret(
    helm: Path,
) -> None:
    objects = monitor_objects(helm)
    secret = objects[("Secret", "obs", "volsched-metrics-token")]
    assert secret["type"] == "kubernetes.io/service-account-token"
    account = secret["metadata"]["annotations"]["kubernetes.io/service-account.name"]
    assert ("ServiceAccount", "obs", account) in objects
    # That account may read /metrics, beside the readers the values list.
    subjects = objects[("ClusterRoleBinding", "", "volsched-metrics-reader")]["subjects"]
    assert {"kind": "ServiceAccount", "name": account, "namespace": "obs"} in subjects
    assert {"kind": "ServiceAccount", "name": "prometheus-k8s", "namespace": "monitoring"} in (
        subjects
    )

    # Another Secret: the chart makes none, and the account it holds a token of must be a reader.
    own = monitor_objects(
        helm,
        "--set",
        "serviceMonitor.tokenSecret.create=false",
        "--set",
        "serviceMonitor.authorization.credentials.name=prometheus-token",
    )
    (monitor,) = [o for k, o in own.items() if k[0] == "ServiceMonitor"]
    assert monitor["spec"]["endpoints"][0]["authorization"]["credentials"] == {
        "name": "prometheus-token",
        "key": "token",
    }
    assert not [k for k in own if k[0] in ("Secret", "ServiceAccount") and "metrics" in k[2]]

    # An operator older than `authorization`: the token file of Prometheus' pod, and nothing else.
    path = "/var/run/secrets/kubernetes.io/serviceaccount/token"
    old = monitor_objects(helm, "--set", f"serviceMonitor.bearerTokenFile={path}")
    (monitor,) = [o for k, o in old.items() if k[0] == "ServiceMonitor"]
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["bearerTokenFile"] == path and "authorization" not in endpoint
    assert ("Secret", "obs", "volsched-metrics-token") not in old


# The chart's ServiceMonitor as each of its values shapes it, checked against
# prometheus-operator's API here (its typed model) and on a real kube-apiserver
# (tests/controlplane/test_service_monitor_api.py).
SERVICE_MONITOR_VARIANTS = {
    "defaults": (),
    "unchecked": ("--set", "serviceMonitor.tlsConfig.insecureSkipVerify=true"),
    "ca from a config map": (
        "--set",
        "serviceMonitor.tlsConfig.ca.configMap.name=ca",
        "--set",
        "serviceMonitor.tlsConfig.ca.configMap.key=ca.pem",
    ),
    "token file": (
        "--set",
        "serviceMonitor.bearerTokenFile=/var/run/secrets/kubernetes.io/serviceaccount/token",
    ),
}


@pytest.mark.parametrize(
    "options", SERVICE_MONITOR_VARIANTS.values(), ids=SERVICE_MONITOR_VARIANTS.keys()
)
def test_the_service_monitor_fits_prometheus_operators_api(
    helm: Path, options: tuple[str, ...]
) -> None:
    (monitor,) = [o for k, o in monitor_objects(helm, *options).items() if k[0] == "ServiceMonitor"]
    assert service_monitor_problems(monitor) == []


def test_the_api_check_refuses_unknown_fields_and_missing_keys() -> None:
    monitor: Raw = {
        "apiVersion": "monitoring.coreos.com/v1",
        "kind": "ServiceMonitor",
        "metadata": {"name": "m"},
        "spec": {
            "selector": {},
            "endpoints": [
                {"port": "http", "authorization": {"credentials": {"name": "s"}}, "bearerTokn": "x"}
            ],
        },
    }
    assert service_monitor_problems(monitor) == [
        "spec.endpoints.0.authorization.credentials.key: Field required",
    ]
    del monitor["spec"]["endpoints"][0]["authorization"]
    assert service_monitor_problems(monitor) == ["spec.endpoints.0.bearerTokn: not a field"]


def test_the_metrics_readers_may_get_metrics(helm: Path) -> None:
    readers = [{"kind": "ServiceAccount", "name": "prometheus", "namespace": "observability"}]
    objects = {
        key(obj): obj
        for obj in render(
            helm,
            "--set",
            "metrics.readers[0].kind=ServiceAccount",
            "--set",
            "metrics.readers[0].name=prometheus",
            "--set",
            "metrics.readers[0].namespace=observability",
        )
    }
    role = objects[("ClusterRole", "", "volsched-metrics-reader")]
    assert role["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    binding = objects[("ClusterRoleBinding", "", "volsched-metrics-reader")]
    assert binding["roleRef"]["name"] == "volsched-metrics-reader"
    assert binding["subjects"] == readers
