"""The Kubernetes manifests under deploy/, checked offline: every object against the
API's own schemas (kubernetes-validate), the CRDs against the example storage objects,
RBAC against what the daemon calls, and the pieces against each other (labels and
selectors, ports, mounted paths, the image the Dockerfile builds)."""

from __future__ import annotations

import copy
import re
import tempfile
import tomllib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

import jsonschema
import kubernetes_validate  # type: ignore[import-untyped]
import pytest
import yaml

from volsched.cache.objects.registry import KINDS
from volsched.daemon.config.loading import load_settings
from volsched.daemon.config.settings import Settings
from volsched.daemon.watch.watching import VOLSCHED_STORAGE_KINDS, WATCHED_KINDS
from volsched.scheduling.scheduler_config import default_profile

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
EXAMPLES = ROOT / "examples" / "hyperconverged.yaml"
# The newest Kubernetes release kubernetes-validate (>= 1.37.0) ships schemas for.
KUBERNETES_VERSION = "1.37"
NAMESPACE = "volsched-system"
SERVICE_ACCOUNT = ("volsched", NAMESPACE)

Raw = dict[str, Any]


class _KubectlLoader(yaml.SafeLoader):
    """YAML as kubectl reads it: an unquoted timestamp stays a string (PyYAML would make
    it a datetime, which no JSON schema accepts)."""


_KubectlLoader.yaml_implicit_resolvers = {
    first: [(tag, regex) for tag, regex in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}


def load_documents(path: Path) -> list[Raw]:
    text = path.read_text(encoding="utf-8")
    return [doc for doc in yaml.load_all(text, Loader=_KubectlLoader) if doc]


@dataclass(frozen=True)
class Manifest:
    path: Path
    index: int
    obj: Raw

    @property
    def id(self) -> str:
        name = self.obj.get("metadata", {}).get("name", "?")
        return f"{self.path.relative_to(DEPLOY)}#{self.index}:{self.obj.get('kind')}/{name}"


def plain_manifest_files() -> list[Path]:
    """The plain manifests (the Helm chart under deploy/helm is tested on its own)."""
    return [
        path
        for path in sorted(DEPLOY.rglob("*.yaml"))
        if path.name != "kustomization.yaml" and "helm" not in path.relative_to(DEPLOY).parts
    ]


MANIFESTS = [
    Manifest(path, index, obj)
    for path in plain_manifest_files()
    for index, obj in enumerate(load_documents(path))
]
KUSTOMIZATION = load_documents(DEPLOY / "kustomization.yaml")[0]


def objects(kind: str, in_file: str | None = None) -> list[Raw]:
    return [
        m.obj
        for m in MANIFESTS
        if m.obj["kind"] == kind
        and (in_file is None or m.path.relative_to(DEPLOY).as_posix() == in_file)
    ]


def one(kind: str, name: str) -> Raw:
    (found,) = [obj for obj in objects(kind) if obj["metadata"]["name"] == name]
    return found


def config_map_file(key: str) -> str:
    text: str = one("ConfigMap", "volsched-config")["data"][key]
    return text


def _settings_from_config_map() -> Settings:
    """The settings a replica reads from the mounted file, through the real loader."""
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "config.yaml"
        path.write_text(config_map_file("config.yaml"))
        return load_settings(str(path), environ={})


SETTINGS = _settings_from_config_map()
# The Lease volsched elects its leader on, as its config names it.
LEASE_NAMESPACE = SETTINGS.leader_election.lease_namespace
LEASE_NAME = SETTINGS.leader_election.lease_name


# -- schemas of the Kubernetes API -----------------------------------------------------


# Kinds of add-ons the optional manifests use, not of Kubernetes itself; their shape is
# checked by tests of their own below.
ADD_ON_API_GROUPS = ("cert-manager.io/",)


@pytest.mark.parametrize(
    "manifest",
    [m for m in MANIFESTS if not m.obj["apiVersion"].startswith(ADD_ON_API_GROUPS)],
    ids=lambda m: m.id,
)
def test_manifest_is_valid_for_kubernetes(manifest: Manifest) -> None:
    # strict: unknown fields are errors too (the API server would drop them silently).
    try:
        kubernetes_validate.validate(manifest.obj, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as exc:
        where = ".".join(str(part) for part in exc.path)
        pytest.fail(f"{manifest.id}: {where}: {exc.message}")
    except kubernetes_validate.SchemaNotFoundError:
        pytest.fail(f"{manifest.id}: no such kind in Kubernetes {KUBERNETES_VERSION}")


def test_namespaced_objects_live_in_volsched_system_or_beside_the_lease() -> None:
    cluster_scoped = {
        "Namespace",
        "ClusterRole",
        "ClusterRoleBinding",
        "CustomResourceDefinition",
        "MutatingWebhookConfiguration",
    }
    for manifest in MANIFESTS:
        namespace = manifest.obj["metadata"].get("namespace")
        if manifest.obj["kind"] in cluster_scoped:
            assert namespace is None, manifest.id
        elif manifest.obj["kind"] in {"Role", "RoleBinding"} and namespace in {
            LEASE_NAMESPACE,
            "kube-system",  # the extender scheduler's authentication reader
        }:
            continue
        else:
            assert namespace == NAMESPACE, manifest.id
    assert one("Namespace", NAMESPACE)


# -- kustomization ---------------------------------------------------------------------


OPTIONAL_SETS = ("extender", "webhook")


def test_kustomization_lists_every_manifest_but_the_optional_ones() -> None:
    expected = {
        path.relative_to(DEPLOY).as_posix()
        for path in plain_manifest_files()
        if not set(OPTIONAL_SETS) & set(path.parts)
    }
    assert sorted(KUSTOMIZATION["resources"]) == sorted(expected)
    # No namespace override: it would move the leader-election Role out of kube-system.
    assert "namespace" not in KUSTOMIZATION


def test_image_tag_is_the_project_version() -> None:
    version = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["version"]
    (image,) = KUSTOMIZATION["images"]
    container = volsched_container()
    name, _, tag = container["image"].partition(":")
    assert image["name"] == name
    assert tag == image["newTag"] == version


# -- CRDs against the example objects --------------------------------------------------


def structural_to_json_schema(schema: Raw) -> Raw:
    """An openAPIV3Schema as a JSON Schema that also rejects what the API server would
    prune: an object with declared properties takes no others unless it says so. CEL
    rules (x-kubernetes-validations) are not evaluated here."""
    out = copy.deepcopy(schema)

    def convert(node: Raw) -> None:
        # Only where subschemas live: a field may well be called "type" or "nullable".
        for child in node.get("properties", {}).values():
            convert(child)
        for key in ("items", "additionalProperties", "not"):
            if isinstance(node.get(key), dict):
                convert(node[key])
        for key in ("anyOf", "allOf", "oneOf"):
            for child in node.get(key, []):
                convert(child)
        if node.pop("nullable", False) and "type" in node:
            node["type"] = [node["type"], "null"]
        if node.get("x-kubernetes-list-type") == "set":
            node["uniqueItems"] = True
        if (
            "properties" in node
            and "additionalProperties" not in node
            and not node.get("x-kubernetes-preserve-unknown-fields")
        ):
            node["additionalProperties"] = False

    convert(out)
    return out


CRDS = {crd["spec"]["names"]["kind"]: crd for crd in objects("CustomResourceDefinition")}
EXAMPLE_STORAGE_OBJECTS = [
    obj for obj in load_documents(EXAMPLES) if obj["kind"] in {"StorageNode", "Volume", "Replica"}
]


def crd_schema(api_version: str, kind: str) -> Raw:
    crd = CRDS[kind]
    group, _, version = api_version.partition("/")
    assert crd["spec"]["group"] == group
    (served,) = [v for v in crd["spec"]["versions"] if v["name"] == version and v["served"]]
    return structural_to_json_schema(served["schema"]["openAPIV3Schema"])


def test_every_storage_kind_has_a_crd() -> None:
    """volsched's own kinds; Longhorn's CRDs come with Longhorn."""
    assert set(CRDS) == set(VOLSCHED_STORAGE_KINDS)
    for kind in VOLSCHED_STORAGE_KINDS:
        assert CRDS[kind]["spec"]["names"]["plural"] == KINDS[kind].plural
        assert CRDS[kind]["spec"]["scope"] == (
            "Namespaced" if KINDS[kind].namespaced else "Cluster"
        )


def test_examples_have_every_storage_kind() -> None:
    assert {obj["kind"] for obj in EXAMPLE_STORAGE_OBJECTS} == set(VOLSCHED_STORAGE_KINDS)


@pytest.mark.parametrize(
    "obj", EXAMPLE_STORAGE_OBJECTS, ids=lambda o: f"{o['kind']}/{o['metadata']['name']}"
)
def test_crd_schema_accepts_the_example(obj: Raw) -> None:
    schema = crd_schema(obj["apiVersion"], obj["kind"])
    validator = jsonschema.Draft4Validator(schema)
    errors = sorted(validator.iter_errors(obj), key=lambda e: list(e.path))
    assert not errors, "; ".join(f"{'.'.join(str(p) for p in e.path)}: {e.message}" for e in errors)


def test_the_schema_check_rejects_a_misspelt_field() -> None:
    # The check above is only worth something if it can fail.
    volume = next(o for o in EXAMPLE_STORAGE_OBJECTS if o["kind"] == "Volume")
    bad = copy.deepcopy(volume)
    bad["spec"]["numberOfReplica"] = 3
    schema = crd_schema(bad["apiVersion"], "Volume")
    assert not jsonschema.Draft4Validator(schema).is_valid(bad)


# -- RBAC ------------------------------------------------------------------------------

READ = ("get", "list", "watch")

# What volsched reads: (apiGroup, resource) of each kind its informer cache lists and
# watches (and gets again during binding and recovery).
WATCHED_RESOURCES = [
    ("", "nodes"),
    ("", "pods"),
    ("", "persistentvolumes"),
    ("", "persistentvolumeclaims"),
    ("", "services"),
    ("", "namespaces"),
    ("storage.k8s.io", "storageclasses"),
    ("storage.k8s.io", "csinodes"),
    ("storage.k8s.io", "csidrivers"),
    ("storage.k8s.io", "csistoragecapacities"),
    ("resource.k8s.io", "deviceclasses"),
    ("resource.k8s.io", "resourceclaims"),
    ("scheduling.k8s.io", "priorityclasses"),
    ("apps", "replicasets"),
    ("apps", "statefulsets"),
    ("policy", "poddisruptionbudgets"),
    ("volsched.io", "storagenodes"),
    ("volsched.io", "volumes"),
    ("volsched.io", "replicas"),
    ("longhorn.io", "nodes"),
    ("longhorn.io", "volumes"),
    ("longhorn.io", "replicas"),
    ("longhorn.io", "settings"),
]
# Everything volsched does against the API server, as (apiGroup, resource, verb).
DAEMON_NEEDS_CLUSTER_WIDE: list[tuple[str, str, str]] = [
    *((group, resource, verb) for group, resource in WATCHED_RESOURCES for verb in READ),
    ("", "pods/binding", "create"),
    ("", "pods/status", "patch"),
    ("", "pods", "delete"),  # preemption
    ("events.k8s.io", "events", "create"),
    ("events.k8s.io", "events", "patch"),  # an event seen again: its series
    # Delegated authentication and authorisation of callers of the extender and /metrics.
    ("authentication.k8s.io", "tokenreviews", "create"),
    ("authorization.k8s.io", "subjectaccessreviews", "create"),
    ("", "persistentvolumes", "update"),
    ("", "persistentvolumes", "patch"),
    ("", "persistentvolumeclaims", "update"),
    ("", "persistentvolumeclaims", "patch"),
    ("volsched.io", "replicas", "create"),
    ("volsched.io", "replicas", "update"),
    ("volsched.io", "replicas", "patch"),
    ("volsched.io", "replicas", "delete"),
]
# Leader election, in the Lease's namespace: (apiGroup, resource, verb, resourceName);
# create cannot be limited by name, get and update are limited to volsched's Lease.
DAEMON_NEEDS_LEASE: list[tuple[str, str, str, str | None]] = [
    ("coordination.k8s.io", "leases", "create", None),
    ("coordination.k8s.io", "leases", "get", LEASE_NAME),
    ("coordination.k8s.io", "leases", "update", LEASE_NAME),
]


@dataclass(frozen=True)
class Grant:
    namespace: str | None  # None: cluster-wide
    group: str
    resource: str
    verb: str
    resource_name: str | None


def _role(kind: str, name: str, namespace: str | None) -> Raw:
    found = [
        obj
        for obj in objects(kind)
        if obj["metadata"]["name"] == name and obj["metadata"].get("namespace") == namespace
    ]
    assert len(found) == 1, f"{kind} {namespace}/{name} is not defined in deploy/"
    return found[0]


def _expand(rules: list[Raw], namespace: str | None) -> Iterator[Grant]:
    for rule in rules:
        names = rule.get("resourceNames") or [None]
        for group in rule["apiGroups"]:
            for resource in rule["resources"]:
                for verb in rule["verbs"]:
                    for name in names:
                        yield Grant(namespace, group, resource, verb, name)


def granted_to(account: tuple[str, str], files: set[str]) -> set[Grant]:
    """Everything the bindings in ``files`` grant the service account ``account``."""
    subject = {"kind": "ServiceAccount", "name": account[0], "namespace": account[1]}
    grants: set[Grant] = set()
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        for binding in (b for f in files for b in objects(kind, f)):
            if subject not in binding["subjects"]:
                continue
            namespace = binding["metadata"].get("namespace")
            ref = binding["roleRef"]
            role_namespace = namespace if ref["kind"] == "Role" else None
            role = _role(ref["kind"], ref["name"], role_namespace)
            grants |= set(_expand(role.get("rules", []), namespace))
    return grants


VOLSCHED_GRANTS = granted_to(SERVICE_ACCOUNT, {"rbac.yaml"})


@pytest.mark.parametrize(("group", "resource", "verb"), DAEMON_NEEDS_CLUSTER_WIDE)
def test_rbac_grants_cluster_wide(group: str, resource: str, verb: str) -> None:
    assert Grant(None, group, resource, verb, None) in VOLSCHED_GRANTS


@pytest.mark.parametrize(("group", "resource", "verb", "name"), DAEMON_NEEDS_LEASE)
def test_rbac_grants_on_the_lease(group: str, resource: str, verb: str, name: str | None) -> None:
    assert Grant(LEASE_NAMESPACE, group, resource, verb, name) in VOLSCHED_GRANTS


def test_only_the_extender_scheduler_may_call_the_extender_verbs() -> None:
    """Callers are authorised by SubjectAccessReview on non-resource URLs: the extender's
    kube-scheduler (its client certificate's CN) may POST the verbs, Prometheus may GET
    /metrics, and nobody else is granted either."""
    granted: dict[tuple[str, str], set[str]] = {}
    for binding in objects("ClusterRoleBinding"):
        if binding["roleRef"]["name"].startswith("system:"):
            continue  # the API server's own roles: no non-resource URL of volsched's
        role = _role("ClusterRole", binding["roleRef"]["name"], None)
        for rule in role.get("rules", []):
            for url in rule.get("nonResourceURLs", []):
                for verb in rule["verbs"]:
                    for subject in binding["subjects"]:
                        granted.setdefault((url, verb), set()).add(subject["name"])
    verbs = [f"/scheduler/{v}" for v in ("filter", "prioritize", "bind", "preempt")]
    for url in verbs:
        assert granted.pop((url, "post")) == {"volsched-extender-scheduler"}
    assert granted.pop(("/metrics", "get")) == {"prometheus-k8s"}
    assert granted == {}


def test_rbac_grants_nothing_else() -> None:
    needed = {Grant(None, *need, None) for need in DAEMON_NEEDS_CLUSTER_WIDE} | {
        Grant(LEASE_NAMESPACE, *need) for need in DAEMON_NEEDS_LEASE
    }
    assert VOLSCHED_GRANTS - needed == set()


def test_rbac_reads_are_what_the_daemon_watches() -> None:
    """The table's reads follow daemon.watching: a kind added there needs RBAC here."""
    watched = set()
    for kind in WATCHED_KINDS:
        info = KINDS[kind]
        group = info.api_version.rpartition("/")[0]
        watched |= {(group, info.plural, verb) for verb in READ}
    table_reads = {need for need in DAEMON_NEEDS_CLUSTER_WIDE if need[2] in READ}
    assert table_reads == watched


RBAC_KINDS = {"Role", "ClusterRole"}


@pytest.mark.parametrize(
    "role",
    [m for m in MANIFESTS if m.obj["kind"] in RBAC_KINDS],
    ids=lambda m: m.id,
)
def test_no_rule_grants_a_wildcard(role: Manifest) -> None:
    assert "aggregationRule" not in role.obj
    for rule in role.obj.get("rules", []):
        for field in ("apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"):
            assert "*" not in rule.get(field, []), f"{role.id}: {field}: *"
            assert not any("*" in value for value in rule.get(field, [])), role.id


def test_extender_scheduler_binds_only_kube_schedulers_builtin_roles() -> None:
    """The extender's kube-scheduler gets what a stock kube-scheduler gets (roles the API
    server bootstraps), plus its own Lease; nothing of volsched's."""
    builtin = {
        ("ClusterRole", "system:kube-scheduler"),
        ("ClusterRole", "system:volume-scheduler"),
        ("Role", "extension-apiserver-authentication-reader"),
    }
    for kind in ("ClusterRoleBinding", "RoleBinding"):
        for binding in objects(kind, "extender/rbac.yaml"):
            ref = (binding["roleRef"]["kind"], binding["roleRef"]["name"])
            if ref in builtin:
                continue
            role = _role(ref[0], ref[1], binding["metadata"].get("namespace"))
            assert {
                (g.group, g.resource, g.verb, g.resource_name) for g in _expand(role["rules"], None)
            } == {
                ("coordination.k8s.io", "leases", "create", None),
                ("coordination.k8s.io", "leases", "get", "volsched-extender-scheduler"),
                ("coordination.k8s.io", "leases", "update", "volsched-extender-scheduler"),
            }


# -- the Deployment, its config and its neighbours -------------------------------------


def volsched_deployment() -> Raw:
    return one("Deployment", "volsched")


def volsched_pod() -> Raw:
    pod: Raw = volsched_deployment()["spec"]["template"]
    return pod


def volsched_container() -> Raw:
    (container,) = volsched_pod()["spec"]["containers"]
    assert isinstance(container, dict)
    return container


CONFIG_DIR = PurePosixPath("/etc/volsched")


def mount_path(volume_name: str) -> PurePosixPath:
    (mount,) = [m for m in volsched_container()["volumeMounts"] if m["name"] == volume_name]
    return PurePosixPath(mount["mountPath"])


def test_deployment_runs_two_replicas_of_volsched_run_with_the_config() -> None:
    assert volsched_deployment()["spec"]["replicas"] == 2
    container = volsched_container()
    command = container.get("command", []) + container["args"]
    assert command == ["volsched", "run", "--config", str(CONFIG_DIR / "config.yaml")]
    assert volsched_pod()["spec"]["serviceAccountName"] == SERVICE_ACCOUNT[0]


def test_config_is_valid_and_listens_on_all_interfaces() -> None:
    # SETTINGS, read at import, is the proof that the config is valid.
    settings = SETTINGS
    assert settings.http.address == "0.0.0.0:10351"
    assert settings.http.authentication.enabled
    tls = mount_path("tls")
    auth = settings.http.authentication
    assert {auth.cert_file, auth.key_file, auth.client_ca_file} == {
        str(tls / "tls.crt"),
        str(tls / "tls.key"),
        str(tls / "client-ca.crt"),
    }
    assert settings.extender_scheduler_names == ("volsched-extender",)
    ports = {p["name"]: p["containerPort"] for p in volsched_container()["ports"]}
    assert ports["http"] == int(settings.http.address.rsplit(":", 1)[1])
    assert mount_path("config") == CONFIG_DIR
    assert settings.policy_file is None


def test_the_profile_is_the_daemons_default() -> None:
    (profile,) = SETTINGS.profiles
    default = default_profile(with_storage=True)
    assert profile.scheduler_name == SETTINGS.scheduler_name == "volsched"
    assert (profile.policy.predicates, profile.policy.priorities) == (
        default.policy.predicates,
        default.policy.priorities,
    )
    assert profile.bind_timeout_seconds == SETTINGS.bind_timeout_seconds == 600


def test_database_is_on_the_state_volume() -> None:
    database = PurePosixPath(SETTINGS.database.path)
    state = mount_path("state")
    assert database.parent == state
    (volume,) = [v for v in volsched_pod()["spec"]["volumes"] if v["name"] == "state"]
    assert "emptyDir" in volume
    # The same directory the image declares as its VOLUME.
    assert re.search(rf'^VOLUME \["{state}"\]$', (ROOT / "Dockerfile").read_text(), re.M)


def test_probes() -> None:
    container = volsched_container()
    for probe, path in (("livenessProbe", "/livez"), ("readinessProbe", "/readyz")):
        assert container[probe]["httpGet"] == {"path": path, "port": "http", "scheme": "HTTPS"}


def test_pod_security() -> None:
    pod = volsched_pod()["spec"]
    container = volsched_container()["securityContext"]
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    user = pod["securityContext"]["runAsUser"]
    assert isinstance(user, int) and user != 0
    assert container["allowPrivilegeEscalation"] is False
    assert container["readOnlyRootFilesystem"] is True
    assert container["capabilities"] == {"drop": ["ALL"]}
    # The user the image is built with.
    assert re.search(rf"^USER {user}(:\d+)?$", (ROOT / "Dockerfile").read_text(), re.M)


def test_resources_have_requests_and_limits() -> None:
    resources = volsched_container()["resources"]
    assert set(resources["requests"]) == {"cpu", "memory"}
    assert set(resources["limits"]) >= {"memory"}


def _selects(selector: Raw, labels: Raw) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def test_anti_affinity_spreads_replicas_across_nodes() -> None:
    labels = volsched_pod()["metadata"]["labels"]
    anti = volsched_pod()["spec"]["affinity"]["podAntiAffinity"]
    (term,) = anti["requiredDuringSchedulingIgnoredDuringExecution"]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert _selects(term["labelSelector"]["matchLabels"], labels)


def test_selectors_match_the_pods() -> None:
    labels = volsched_pod()["metadata"]["labels"]
    assert _selects(volsched_deployment()["spec"]["selector"]["matchLabels"], labels)
    (budget,) = objects("PodDisruptionBudget", "deployment.yaml")
    assert _selects(budget["spec"]["selector"]["matchLabels"], labels)
    assert budget["spec"]["minAvailable"] == 1
    service = one("Service", "volsched")
    assert _selects(service["spec"]["selector"], labels)
    # ... and only them: the extender scheduler's pods carry the same name label.
    extender_labels = one("Deployment", "volsched-extender-scheduler")["spec"]["template"][
        "metadata"
    ]["labels"]
    assert not _selects(service["spec"]["selector"], extender_labels)
    (port,) = service["spec"]["ports"]
    assert (port["port"], port["targetPort"]) == (10351, "http")


# -- the extender kube-scheduler -------------------------------------------------------


def scheduler_configuration() -> Raw:
    config_map = one("ConfigMap", "volsched-extender-scheduler")
    (text,) = config_map["data"].values()
    data: Raw = yaml.safe_load(text)
    return data


CLIENT_DIR = "/etc/kubernetes/volsched-extender-client"


def test_extender_client_certificate_is_mounted() -> None:
    pod = one("Deployment", "volsched-extender-scheduler")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    (mount,) = [m for m in container["volumeMounts"] if m["mountPath"] == CLIENT_DIR]
    (volume,) = [v for v in pod["volumes"] if v["name"] == mount["name"]]
    assert volume["secret"]["secretName"] == "volsched-extender-client"


def test_network_policy_admits_only_the_extender_scheduler_and_the_scraper() -> None:
    (policy,) = objects("NetworkPolicy")
    labels = volsched_pod()["metadata"]["labels"]
    assert _selects(policy["spec"]["podSelector"]["matchLabels"], labels)
    (rule,) = policy["spec"]["ingress"]
    extender_labels = one("Deployment", "volsched-extender-scheduler")["spec"]["template"][
        "metadata"
    ]["labels"]
    sources = rule["from"]
    assert _selects(sources[0]["podSelector"]["matchLabels"], extender_labels)
    assert sources[1]["namespaceSelector"]["matchLabels"] == {
        "kubernetes.io/metadata.name": "monitoring"
    }
    assert len(sources) == 2
    assert rule["ports"] == [{"port": 10351, "protocol": "TCP"}]


def test_extender_configuration() -> None:
    config = scheduler_configuration()
    assert config["apiVersion"] == "kubescheduler.config.k8s.io/v1"
    assert config["kind"] == "KubeSchedulerConfiguration"
    (extender,) = config["extenders"]
    assert extender == {
        "urlPrefix": "https://volsched.volsched-system.svc:10351/scheduler",
        "filterVerb": "filter",
        "prioritizeVerb": "prioritize",
        "bindVerb": "bind",
        "preemptVerb": "preempt",
        "weight": 1,
        "enableHTTPS": True,
        "tlsConfig": {
            "serverName": "volsched.volsched-system.svc",
            "caFile": f"{CLIENT_DIR}/ca.crt",
            "certFile": f"{CLIENT_DIR}/tls.crt",
            "keyFile": f"{CLIENT_DIR}/tls.key",
        },
        "nodeCacheCapable": True,
        "ignorable": False,
        "httpTimeout": "5s",
        "managedResources": [],
    }


def test_extender_url_reaches_the_service() -> None:
    (extender,) = scheduler_configuration()["extenders"]
    match = re.fullmatch(r"https://([^.]+)\.([^.]+)\.svc:(\d+)(/.*)", extender["urlPrefix"])
    assert match is not None
    service = one("Service", match.group(1))
    assert service["metadata"]["namespace"] == match.group(2)
    assert int(match.group(3)) in {p["port"] for p in service["spec"]["ports"]}
    assert match.group(4) == SETTINGS.extender_path_prefix


def test_extender_profile_does_not_take_volscheds_pods() -> None:
    config = scheduler_configuration()
    names = {profile["schedulerName"] for profile in config["profiles"]}
    assert SETTINGS.scheduler_name not in names
    assert "default-scheduler" not in names
    election = config["leaderElection"]
    lease = (election["resourceNamespace"], election["resourceName"])
    assert lease != (LEASE_NAMESPACE, LEASE_NAME)


def test_extender_deployment_reads_the_configuration() -> None:
    pod = one("Deployment", "volsched-extender-scheduler")["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    (config_flag,) = [a for a in container["command"] if a.startswith("--config=")]
    config_path = PurePosixPath(config_flag.partition("=")[2])
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "config"]
    assert config_path.parent == PurePosixPath(mount["mountPath"])
    (volume,) = [v for v in pod["volumes"] if v["name"] == "config"]
    config_map = one("ConfigMap", volume["configMap"]["name"])
    assert config_path.name in config_map["data"]
    assert pod["serviceAccountName"] == "volsched-extender-scheduler"


# -- the routing webhook ---------------------------------------------------------------


def webhook_configuration() -> Raw:
    return one("MutatingWebhookConfiguration", "volsched-scheduler-routing")


def test_webhook_fails_open_quickly_and_only_on_pod_creation() -> None:
    (hook,) = webhook_configuration()["webhooks"]
    assert hook["failurePolicy"] == "Ignore"
    assert hook["timeoutSeconds"] <= 5
    assert hook["sideEffects"] == "None"
    assert hook["admissionReviewVersions"] == ["v1"]
    (rule,) = hook["rules"]
    assert (rule["operations"], rule["resources"]) == (["CREATE"], ["pods"])


def test_webhook_skips_system_namespaces_and_opt_outs() -> None:
    (hook,) = webhook_configuration()["webhooks"]
    by_key = {e["key"]: e for e in hook["namespaceSelector"]["matchExpressions"]}
    system = by_key["kubernetes.io/metadata.name"]
    assert system["operator"] == "NotIn"
    assert {"kube-system", NAMESPACE} <= set(system["values"])
    for selector in (hook["namespaceSelector"], hook["objectSelector"]):
        (opt_out,) = [
            e for e in selector["matchExpressions"] if e["key"] == "volsched.io/scheduler-routing"
        ]
        assert (opt_out["operator"], opt_out["values"]) == ("NotIn", ["disabled"])


def test_webhook_service_certificate_and_config_agree() -> None:
    (hook,) = webhook_configuration()["webhooks"]
    service_ref = hook["clientConfig"]["service"]
    service = one("Service", service_ref["name"])
    assert service["metadata"]["namespace"] == service_ref["namespace"] == NAMESPACE
    assert service_ref["path"] == "/mutate-pods"
    (port,) = service["spec"]["ports"]
    assert port["port"] == service_ref["port"]
    deployment = one("Deployment", "volsched-webhook")
    pod = deployment["spec"]["template"]
    assert _selects(service["spec"]["selector"], pod["metadata"]["labels"])
    assert not _selects(one("Service", "volsched")["spec"]["selector"], pod["metadata"]["labels"])
    (container,) = pod["spec"]["containers"]
    assert container["args"] == ["webhook", "--config", "/etc/volsched/config.yaml"]
    (container_port,) = container["ports"]
    assert container_port["name"] == port["targetPort"]
    # The config the container reads, through the real loader.
    text = one("ConfigMap", "volsched-webhook-config")["data"]["config.yaml"]
    with tempfile.TemporaryDirectory() as directory:
        path = Path(directory) / "config.yaml"
        path.write_text(text)
        settings = load_settings(str(path), environ={})
    assert int(settings.webhook.address.rsplit(":", 1)[1]) == container_port["containerPort"]
    assert settings.scheduler_name == SETTINGS.scheduler_name
    assert "driver.longhorn.io" in settings.webhook.provisioners
    # A claim its cache does not know yet is read within half the API server's timeout.
    (hook,) = webhook_configuration()["webhooks"]
    assert settings.webhook.lookup_timeout_seconds <= hook["timeoutSeconds"] / 2
    # The TLS files come from the Secret cert-manager writes, named in its Certificate.
    certificate = one("Certificate", "volsched-webhook")
    (tls,) = [v for v in pod["spec"]["volumes"] if v["name"] == "tls"]
    assert tls["secret"]["secretName"] == certificate["spec"]["secretName"]
    (mount,) = [m for m in container["volumeMounts"] if m["name"] == "tls"]
    assert PurePosixPath(settings.webhook.cert_file or "").parent == PurePosixPath(
        mount["mountPath"]
    )
    assert f"{service['metadata']['name']}.{NAMESPACE}.svc" in certificate["spec"]["dnsNames"]
    injected = webhook_configuration()["metadata"]["annotations"]["cert-manager.io/inject-ca-from"]
    assert injected == f"{NAMESPACE}/{certificate['metadata']['name']}"


def test_webhook_reads_only_claims_volumes_and_classes() -> None:
    grants = granted_to(("volsched-webhook", NAMESPACE), {"webhook/webhook.yaml"})
    assert {(g.group, g.resource, g.verb) for g in grants} == {
        (group, resource, verb)
        for group, resource in (
            ("", "persistentvolumeclaims"),
            ("", "persistentvolumes"),
            ("storage.k8s.io", "storageclasses"),
        )
        for verb in READ
    }
