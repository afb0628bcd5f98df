"""The Helm chart in shadow mode (``--set shadow.enabled=true``): the daemon's RBAC is
get, list and watch and nothing else; the reviews that authenticate callers of /metrics
come from the API server's own ``system:auth-delegator``; one replica, no Lease, and no
webhook or extender that would send pods to a scheduler that binds none."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import kubernetes_validate
import pytest

from tests.deploy.test_helm import CHART, key, render, settings_of
from tests.deploy.test_manifests import (
    ADD_ON_API_GROUPS,
    KUBERNETES_VERSION,
    READ,
    WATCHED_RESOURCES,
)
from volsched.daemon.config.settings import ShadowSettings

Raw = dict[str, Any]
SHADOW = ("--set", "shadow.enabled=true")
ROLE_KINDS = ("Role", "ClusterRole")
BINDING_KINDS = ("RoleBinding", "ClusterRoleBinding")
# The API server's bootstrap role for delegated authentication and authorisation:
# create on tokenreviews and subjectaccessreviews, which it answers and never stores.
AUTH_DELEGATOR = "system:auth-delegator"


@pytest.fixture(scope="module")
def shadow(helm: Path) -> list[Raw]:
    return render(helm, "--include-crds", *SHADOW)


def test_no_rule_grants_a_verb_other_than_get_list_watch(shadow: list[Raw]) -> None:
    verbs = {
        (obj["metadata"]["name"], verb)
        for obj in shadow
        if obj["kind"] in ROLE_KINDS
        for rule in obj.get("rules", [])
        for verb in rule["verbs"]
    }
    assert verbs and {verb for _, verb in verbs} <= set(READ), sorted(verbs)


def test_every_binding_is_to_a_role_of_the_chart_or_the_auth_delegator(
    shadow: list[Raw],
) -> None:
    defined = {
        (obj["kind"], obj["metadata"]["name"]) for obj in shadow if obj["kind"] in ROLE_KINDS
    }
    outside = {
        (binding["roleRef"]["kind"], binding["roleRef"]["name"])
        for binding in shadow
        if binding["kind"] in BINDING_KINDS
    } - defined
    assert outside == {("ClusterRole", AUTH_DELEGATOR)}
    (delegation,) = [
        b for b in shadow if b["kind"] in BINDING_KINDS and b["roleRef"]["name"] == AUTH_DELEGATOR
    ]
    assert delegation["subjects"] == [
        {"kind": "ServiceAccount", "name": "volsched", "namespace": "volsched-system"}
    ]


def test_the_shadow_reads_everything_the_daemon_watches(shadow: list[Raw]) -> None:
    (role,) = [o for o in shadow if key(o) == ("ClusterRole", "", "volsched")]
    granted = {
        (group, resource, verb)
        for rule in role["rules"]
        for group in rule["apiGroups"]
        for resource in rule["resources"]
        for verb in rule["verbs"]
    }
    assert granted == {(g, r, verb) for g, r in WATCHED_RESOURCES for verb in READ}


def test_one_replica_no_lease_and_the_shadow_configured(shadow: list[Raw]) -> None:
    kinds = {obj["kind"] for obj in shadow}
    assert "PodDisruptionBudget" not in kinds and "Role" not in kinds
    (deployment,) = [o for o in shadow if o["kind"] == "Deployment"]
    assert deployment["spec"]["replicas"] == 1
    (config_map,) = [
        o for o in shadow if key(o) == ("ConfigMap", "volsched-system", "volsched-config")
    ]
    assert settings_of(config_map).shadow == ShadowSettings(True, ("default-scheduler",))
    (reader,) = [o for o in shadow if key(o) == ("ClusterRole", "", "volsched-metrics-reader")]
    assert reader["rules"] == [
        {"nonResourceURLs": ["/metrics", "/shadow/report"], "verbs": ["get"]}
    ]


def test_the_shadowed_names_are_a_value(helm: Path) -> None:
    rendered = render(helm, *SHADOW, "--set", "shadow.schedulerNames={default-scheduler,batch}")
    (config_map,) = [o for o in rendered if o["kind"] == "ConfigMap"]
    assert settings_of(config_map).shadow.scheduler_names == ("default-scheduler", "batch")


def test_the_output_is_valid_for_kubernetes(shadow: list[Raw]) -> None:
    for obj in shadow:
        if obj["apiVersion"].startswith(ADD_ON_API_GROUPS):
            continue
        try:
            kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
        except kubernetes_validate.ValidationError as exc:
            pytest.fail(f"{key(obj)}: {'.'.join(map(str, exc.path))}: {exc.message}")


@pytest.mark.parametrize("other", ["webhook.enabled=true", "extender.enabled=true"])
def test_a_shadow_refuses_what_would_route_pods_to_it(helm: Path, other: str) -> None:
    completed = subprocess.run(
        [str(helm), "template", "volsched", str(CHART), *SHADOW, "--set", other],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode != 0
    assert "shadow.enabled: a shadow binds nothing" in completed.stderr


def test_the_chart_lints_in_shadow_mode(helm: Path) -> None:
    completed = subprocess.run(
        [str(helm), "lint", str(CHART), "--strict", *SHADOW],
        capture_output=True,
        text=True,
        check=False,
    )
    assert completed.returncode == 0, completed.stdout + completed.stderr
