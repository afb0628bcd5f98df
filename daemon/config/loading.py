"""Reading the config file into the settings tree.

A bad key or value is one ``ConfigError`` naming the file and the key. The file holds
volsched's own keys and/or a ``KubeSchedulerConfiguration`` document (``---``-separated):
its profiles, backoff, percentageOfNodesToScore, parallelism, leader election and
kubeconfig fill the same tree. A value given in both documents is a mistake, not a silent
override.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from volsched.cache.errors import ConfigError
from volsched.cache.file_limits import FileLimitError, read_text_bounded
from volsched.cache.objects.core import DEFAULT_SCHEDULER
from volsched.cache.objects.durations import duration_problem, go_duration_seconds
from volsched.cache.yaml_limits import YamlLimitError, load_all
from volsched.daemon.config.database_path import database_path_problem, default_database_path
from volsched.daemon.config.overrides import address_problem, is_loopback
from volsched.daemon.config.settings import (
    DEFAULT_HTTP_ADDRESS,
    DEFAULT_WEBHOOK_ADDRESS,
    AuthSettings,
    BackoffSettings,
    DatabaseSettings,
    HttpSettings,
    LeaderElectionSettings,
    Settings,
    WebhookSettings,
)
from volsched.daemon.config.shadow import shadow_from_data
from volsched.scheduling.replicas.settings import settings_from_mapping
from volsched.scheduling.scheduler_config import (
    DEFAULT_SCHEDULER_NAME,
    SchedulerConfiguration,
    is_scheduler_configuration,
    parse_scheduler_configuration,
)
from volsched.scheduling.scheduler_config import (
    KIND as SCHEDULER_CONFIGURATION,
)
from volsched.scheduling.scheduler_config.feature_gates import (
    STORAGE_CAPACITY_SCORING,
    FeatureGates,
    parse_feature_gates_flag,
    parse_feature_gates_mapping,
)

_KEYS = {
    "schedulerName",
    "kubeconfig",
    "database",
    "http",
    "policyFile",
    "bindTimeoutSeconds",
    "backoff",
    "parallelism",
    "percentageOfNodesToScore",
    "replicaScheduling",
    "tracing",
    "extender",
    "leaderElection",
    "webhook",
    "shadow",
    "featureGates",
}


class _Reader:
    def __init__(self, data: Mapping[str, Any], source: str, prefix: str = "") -> None:
        self.data = data
        self.source = source
        self.prefix = prefix

    def fail(self, key: str, problem: str) -> ConfigError:
        return ConfigError(f"{self.source}: {self.prefix}{key}: {problem}")

    def section(self, key: str, allowed: set[str]) -> _Reader:
        value = self.data.get(key, {})
        if value is None:
            value = {}
        if not isinstance(value, Mapping):
            raise self.fail(key, "must be a mapping")
        unknown = set(value) - allowed
        if unknown:
            raise self.fail(f"{key}.{min(map(str, unknown))}", "unknown key")
        return _Reader(value, self.source, f"{self.prefix}{key}.")

    def string(self, key: str, default: str | None) -> str | None:
        value = self.data.get(key, default)
        if value is not None and (not isinstance(value, str) or not value):
            raise self.fail(key, "must be a non-empty string")
        return value

    def number(self, key: str, default: float, minimum: float, maximum: float) -> float:
        value = self.data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise self.fail(key, f"must be a number, not {value!r}")
        if not minimum <= value <= maximum:
            raise self.fail(key, f"must be between {minimum:g} and {maximum:g}, not {value}")
        return float(value)

    def names(self, key: str, default: tuple[str, ...]) -> tuple[str, ...]:
        value = self.data.get(key)
        if value is None:
            return default
        if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
            raise self.fail(key, "must be a list of names")
        return tuple(value)

    def integer(self, key: str, default: int, minimum: int, maximum: int) -> int:
        value = self.data.get(key, default)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(key, f"must be an integer, not {value!r}")
        if not minimum <= value <= maximum:
            raise self.fail(key, f"must be between {minimum} and {maximum}, not {value}")
        return value


def settings_from_data(
    data: Any, source: str, environ: Mapping[str, str] | None = None
) -> Settings:
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(f"{source}: the config file must be a YAML mapping")
    unknown = set(data) - _KEYS
    if unknown:
        raise ConfigError(f"{source}: {min(map(str, unknown))}: unknown key")
    env = environ if environ is not None else {}
    read = _Reader(data, source)
    default_db = default_database_path(env)
    database = read.section("database", {"path"})
    database_path = database.string("path", default_db) or default_db
    if (problem := database_path_problem(database_path)) is not None:
        raise database.fail("path", problem)
    limits = {"maxConnections", "idleTimeoutSeconds", "headerTimeoutSeconds"}
    http = read.section("http", {"address", "authentication", *limits})
    address = http.string("address", DEFAULT_HTTP_ADDRESS) or DEFAULT_HTTP_ADDRESS
    host = address_problem(address)
    if host is not None:
        raise http.fail("address", host)
    auth = http.section(
        "authentication",
        {"enabled", "certFile", "keyFile", "clientCAFile", "cacheTTLSeconds"},
    )
    auth_enabled = auth.data.get("enabled", True)
    if not isinstance(auth_enabled, bool):
        raise auth.fail("enabled", "must be true or false")
    if not auth_enabled and not is_loopback(address):
        raise auth.fail(
            "enabled",
            f"may be false only when http.address is a loopback address, not {address}",
        )
    cert_file = auth.string("certFile", None)
    key_file = auth.string("keyFile", None)
    if (cert_file is None) != (key_file is None):
        raise auth.fail("certFile" if cert_file is None else "keyFile", "give both or neither")
    http_settings = HttpSettings(
        address=address,
        authentication=AuthSettings(
            enabled=auth_enabled,
            cert_file=cert_file,
            key_file=key_file,
            client_ca_file=auth.string("clientCAFile", None),
            cache_ttl_seconds=auth.number("cacheTTLSeconds", 10.0, 0, 3600),
        ),
        max_connections=http.integer("maxConnections", 256, 1, 65536),
        idle_timeout_seconds=http.number("idleTimeoutSeconds", 30.0, 0.1, 3600),
        header_timeout_seconds=http.number("headerTimeoutSeconds", 10.0, 0.1, 3600),
    )
    backoff = read.section("backoff", {"initialSeconds", "maxSeconds", "maxInUnschedulableSeconds"})
    initial = backoff.number("initialSeconds", 1.0, 0.001, 3600)
    maximum = backoff.number("maxSeconds", 10.0, 0.001, 3600)
    unschedulable = backoff.number("maxInUnschedulableSeconds", 300.0, 1, 86400)
    if maximum < initial:
        raise backoff.fail("maxSeconds", "must not be smaller than initialSeconds")
    tracing = read.section("tracing", {"otlpEndpoint"})
    tracing_endpoint = (
        tracing.string("otlpEndpoint", None)
        or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
        or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or None
    )
    extender = read.section("extender", {"pathPrefix", "localityPoints", "schedulerNames"})
    served = extender.data.get("schedulerNames", [DEFAULT_SCHEDULER])
    if not isinstance(served, list) or not all(isinstance(n, str) and n for n in served):
        raise extender.fail("schedulerNames", "must be a list of scheduler names")
    prefix = extender.string("pathPrefix", "/scheduler") or "/scheduler"
    if not prefix.startswith("/"):
        raise extender.fail("pathPrefix", "must start with /")
    locality_points = extender.data.get("localityPoints", False)
    if not isinstance(locality_points, bool):
        raise extender.fail("localityPoints", "must be true or false")
    election = read.section(
        "leaderElection",
        {
            "enabled",
            "leaseName",
            "leaseNamespace",
            "leaseDurationSeconds",
            "renewDeadlineSeconds",
            "retryPeriodSeconds",
            "identity",
        },
    )
    enabled = election.data.get("enabled", True)
    if not isinstance(enabled, bool):
        raise election.fail("enabled", "must be true or false")
    lease_duration = election.number("leaseDurationSeconds", 15, 1, 3600)
    renew_deadline = election.number("renewDeadlineSeconds", 10, 0.5, 3600)
    retry_period = election.number("retryPeriodSeconds", 2, 0.1, 3600)
    lease_name = election.string("leaseName", DEFAULT_SCHEDULER_NAME) or DEFAULT_SCHEDULER_NAME
    lease_namespace = election.string("leaseNamespace", "kube-system") or "kube-system"
    try:
        leader_election = LeaderElectionSettings(
            enabled, lease_name, lease_namespace, lease_duration, renew_deadline, retry_period
        )
    except ConfigError as exc:
        raise ConfigError(f"{source}: {exc}") from None
    identity = election.string("identity", None)
    if identity:
        leader_election = replace(leader_election, identity=identity)
    hook = read.section("webhook", {
        "address", "certFile", "keyFile", "schedulerName", "storageClasses", "provisioners",
        "lookupTimeoutSeconds",
    })  # fmt: skip
    hook_address = hook.string("address", DEFAULT_WEBHOOK_ADDRESS) or DEFAULT_WEBHOOK_ADDRESS
    problem = address_problem(hook_address)
    if problem is not None:
        raise hook.fail("address", problem)
    webhook = WebhookSettings(
        address=hook_address,
        cert_file=hook.string("certFile", None),
        key_file=hook.string("keyFile", None),
        scheduler_name=hook.string("schedulerName", None),
        storage_classes=hook.names("storageClasses", ()),
        provisioners=hook.names("provisioners", WebhookSettings().provisioners),
        lookup_timeout_seconds=hook.number("lookupTimeoutSeconds", 1.5, 0.1, 15),
    )
    replica_data = data.get("replicaScheduling") or {}
    if not isinstance(replica_data, Mapping):
        raise read.fail("replicaScheduling", "must be a mapping")
    return Settings(
        scheduler_name=read.string("schedulerName", DEFAULT_SCHEDULER_NAME)
        or DEFAULT_SCHEDULER_NAME,
        kubeconfig=read.string("kubeconfig", None) or env.get("KUBECONFIG") or None,
        database=DatabaseSettings(database_path),
        http=http_settings,
        policy_file=read.string("policyFile", None),
        bind_timeout_seconds=read.number("bindTimeoutSeconds", 600.0, 1, 86400),
        backoff=BackoffSettings(initial, maximum, unschedulable),
        parallelism=read.integer("parallelism", 16, 1, 1024),
        percentage_of_nodes_to_score=read.integer("percentageOfNodesToScore", 0, 0, 100),
        replica_scheduling=settings_from_mapping(replica_data, source),
        tracing_endpoint=tracing_endpoint,
        leader_election=leader_election,
        extender_path_prefix=prefix,
        extender_locality_points=locality_points,
        webhook=webhook,
        extender_scheduler_names=tuple(served),
        shadow=shadow_from_data(data.get("shadow"), source),
        feature_gates=FeatureGates.from_mapping(
            parse_feature_gates_mapping(data.get("featureGates"), source)
        ),
        source=source,
    )


def parse_duration(value: Any, where: str) -> float:
    """A Go duration (``15s``, ``1m30s``, ``500ms``) in seconds."""
    if not isinstance(value, str) or not value:
        raise ConfigError(f"{where}: must be a duration such as 15s, not {value!r}")
    total = go_duration_seconds(value)
    if total is None:
        raise ConfigError(f"{where}: {duration_problem(value)}")
    if total <= 0:
        raise ConfigError(f"{where}: must be a positive duration such as 15s, not {value!r}")
    return total


def apply_scheduler_configuration(
    settings: Settings, config: SchedulerConfiguration, own: Mapping[str, Any], source: str
) -> Settings:
    """Fill the tree from a KubeSchedulerConfiguration; refuse values set twice."""

    def once(own_key: str, ksc_key: str) -> None:
        if own_key in own:
            raise ConfigError(
                f"{source}: {ksc_key} is set in the {SCHEDULER_CONFIGURATION} document and "
                f"{own_key} in volsched's; keep one"
            )

    changes: dict[str, Any] = {"profiles": config.profiles, "extenders": config.extenders}
    if config.profiles:
        once("schedulerName", "profiles[].schedulerName")
        once("policyFile", "profiles")
        changes["scheduler_name"] = config.profiles[0].scheduler_name
        timeouts = {profile.bind_timeout_seconds for profile in config.profiles}
        changes["bind_timeout_seconds"] = max(timeouts)
    if config.percentage_of_nodes_to_score is not None:
        once("percentageOfNodesToScore", "percentageOfNodesToScore")
        changes["percentage_of_nodes_to_score"] = config.percentage_of_nodes_to_score
    if config.parallelism is not None:
        once("parallelism", "parallelism")
        changes["parallelism"] = config.parallelism
    if config.pod_initial_backoff_seconds is not None or config.pod_max_backoff_seconds is not None:
        once("backoff", "podInitialBackoffSeconds/podMaxBackoffSeconds")
        initial = config.pod_initial_backoff_seconds or settings.backoff.initial_seconds
        maximum = config.pod_max_backoff_seconds or max(initial, settings.backoff.max_seconds)
        if maximum < initial:
            raise ConfigError(
                f"{source}: podMaxBackoffSeconds must not be smaller than podInitialBackoffSeconds"
            )
        changes["backoff"] = replace(settings.backoff, initial_seconds=initial, max_seconds=maximum)
    if config.kubeconfig is not None:
        once("kubeconfig", "clientConnection.kubeconfig")
        changes["kubeconfig"] = config.kubeconfig
    election = config.leader_election
    if election.given:
        once("leaderElection", "leaderElection")
        current = settings.leader_election
        given: dict[str, Any] = {
            "enabled": election.leader_elect,
            "lease_duration_seconds": election.lease_duration_seconds,
            "renew_deadline_seconds": election.renew_deadline_seconds,
            "retry_period_seconds": election.retry_period_seconds,
            "lease_name": election.resource_name,
            "lease_namespace": election.resource_namespace,
        }
        try:
            changes["leader_election"] = replace(
                current, **{key: value for key, value in given.items() if value is not None}
            )
        except ConfigError as exc:
            raise ConfigError(f"{source}: {exc}") from None
    return replace(settings, **changes)


def _documents(text: str, path: str) -> list[Any]:
    try:
        return [document for document in load_all(text) if document is not None]
    except YamlLimitError as exc:
        raise ConfigError(f"{path}: {exc}") from None


def _with_gates(settings: Settings, flag: str | None) -> Settings:
    if flag is None:
        return settings
    gates = {STORAGE_CAPACITY_SCORING: settings.feature_gates.storage_capacity_scoring}
    gates.update(parse_feature_gates_flag(flag))
    return replace(settings, feature_gates=FeatureGates.from_mapping(gates))


def load_settings(
    path: str | None,
    environ: Mapping[str, str] | None = None,
    feature_gates: str | None = None,
) -> Settings:
    """Settings from a YAML file (or defaults when ``path`` is None); ``feature_gates``
    is kube-scheduler's flag, whose gates override the file's."""
    env = dict(os.environ) if environ is None else dict(environ)
    if path is None:
        return _with_gates(settings_from_data({}, "(defaults)", env), feature_gates)
    try:
        text = read_text_bounded(path)
    except FileLimitError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    documents = _documents(text, str(path))
    schedulers = [d for d in documents if is_scheduler_configuration(d)]
    own = [d for d in documents if not is_scheduler_configuration(d)]
    if len(schedulers) > 1:
        raise ConfigError(
            f"{path}: holds {len(schedulers)} {SCHEDULER_CONFIGURATION} documents; keep one"
        )
    if len(own) > 1:
        raise ConfigError(f"{path}: holds {len(own)} volsched settings documents; keep one")
    data = own[0] if own else {}
    settings = _with_gates(settings_from_data(data, str(path), env), feature_gates)
    if not schedulers:
        return settings
    source = f"{path} ({SCHEDULER_CONFIGURATION})"
    config = parse_scheduler_configuration(
        schedulers[0],
        source,
        with_storage=True,
        default_name=settings.scheduler_name,
        gates=settings.feature_gates,
    )
    return apply_scheduler_configuration(settings, config, data, source)
