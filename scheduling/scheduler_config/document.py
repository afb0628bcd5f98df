"""A whole KubeSchedulerConfiguration document: ``apiVersion`` first, then the top-level
fields with upstream's defaults and limits, then each profile."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from volsched.scheduling.extender_config import ExtenderSpec, parse_extenders
from volsched.scheduling.scheduler_config.catalog import DEFAULT_SCHEDULER_NAME, KIND
from volsched.scheduling.scheduler_config.feature_gates import DEFAULT_GATES, FeatureGates
from volsched.scheduling.scheduler_config.fields import (
    INT32_MAX,
    Where,
    integer,
    items,
    mapping,
    name,
    positive,
)
from volsched.scheduling.scheduler_config.leader_election import (
    LeaderElection,
    parse_leader_election,
)
from volsched.scheduling.scheduler_config.profile import ProfileSpec, compile_profile
from volsched.scheduling.scheduler_config.versions import check_api_version

TOP_LEVEL_FIELDS = (
    "apiVersion",
    "kind",
    "profiles",
    "percentageOfNodesToScore",
    "podInitialBackoffSeconds",
    "podMaxBackoffSeconds",
    "parallelism",
    "leaderElection",
    "clientConnection",
    "extenders",
    "delayCacheUntilActive",
    "enableProfiling",
    "enableContentionProfiling",
)
CLIENT_CONNECTION_FIELDS = ("kubeconfig", "acceptContentTypes", "contentType", "qps", "burst")


@dataclass(frozen=True, slots=True)
class SchedulerConfiguration:
    """The parts of a KubeSchedulerConfiguration volsched reads (None: not given)."""

    profiles: tuple[ProfileSpec, ...]
    percentage_of_nodes_to_score: int | None = None
    pod_initial_backoff_seconds: float | None = None
    pod_max_backoff_seconds: float | None = None
    parallelism: int | None = None
    leader_election: LeaderElection = field(default_factory=LeaderElection)
    kubeconfig: str | None = None
    extenders: tuple[ExtenderSpec, ...] = ()


def is_scheduler_configuration(document: Any) -> bool:
    return isinstance(document, Mapping) and document.get("kind") == KIND


def _percentage(value: Any, where: Where) -> int | None:
    return None if value is None else integer(value, where, 0, 100)


def _profiles(
    body: Mapping[str, Any],
    where: Where,
    with_storage: bool,
    default_name: str,
    gates: FeatureGates,
) -> tuple[tuple[ProfileSpec, ...], int | None]:
    profiles_data = items(body.get("profiles"), where.at("profiles"))
    profiles: list[ProfileSpec] = []
    shared = _percentage(body.get("percentageOfNodesToScore"), where.at("percentageOfNodesToScore"))
    for index, item in enumerate(profiles_data or [None]):
        at = where.at("profiles").at(index) if profiles_data else where.at("profiles")
        if item is not None and not isinstance(item, Mapping):
            raise at.fail("must be a mapping")
        profile = compile_profile(item, at, default_name, with_storage, gates)
        if item is not None and item.get("percentageOfNodesToScore") is not None:
            # As upstream: a profile's own value overrides the top-level one.
            profile = replace(
                profile,
                percentage_of_nodes_to_score=_percentage(
                    item["percentageOfNodesToScore"], at.at("percentageOfNodesToScore")
                ),
            )
        if any(p.scheduler_name == profile.scheduler_name for p in profiles):
            raise at.at("schedulerName").fail(f"{profile.scheduler_name!r} is used by two profiles")
        profiles.append(profile)
    return tuple(profiles), shared


def parse_scheduler_configuration(
    data: Any,
    source: str,
    with_storage: bool = True,
    default_name: str = DEFAULT_SCHEDULER_NAME,
    gates: FeatureGates = DEFAULT_GATES,
) -> SchedulerConfiguration:
    """A decoded KubeSchedulerConfiguration document, read with kube-scheduler's feature
    gates as given."""
    where = Where(source, "")
    if not isinstance(data, Mapping):
        raise where.fail("must be a mapping")
    check_api_version(data.get("apiVersion"), where)
    body = mapping(data, where, TOP_LEVEL_FIELDS)
    extenders = parse_extenders(body.get("extenders"), source)
    profiles, percentage = _profiles(body, where, with_storage, default_name, gates)
    initial = maximum = None
    if body.get("podInitialBackoffSeconds") is not None:
        initial = float(
            positive(body["podInitialBackoffSeconds"], where.at("podInitialBackoffSeconds"))
        )
    if body.get("podMaxBackoffSeconds") is not None:
        maximum = float(positive(body["podMaxBackoffSeconds"], where.at("podMaxBackoffSeconds")))
    if initial is not None and maximum is not None and maximum < initial:
        raise where.at("podMaxBackoffSeconds").fail(
            "must be greater than or equal to PodInitialBackoffSeconds"
        )
    parallelism = None
    if body.get("parallelism") is not None:
        parallelism = positive(body["parallelism"], where.at("parallelism"), INT32_MAX)
    client = mapping(
        body.get("clientConnection"), where.at("clientConnection"), CLIENT_CONNECTION_FIELDS
    )
    kubeconfig = client.get("kubeconfig") or None
    if kubeconfig is not None:
        kubeconfig = name(kubeconfig, where.at("clientConnection").at("kubeconfig"))
    return SchedulerConfiguration(
        profiles=profiles,
        percentage_of_nodes_to_score=percentage,
        pod_initial_backoff_seconds=initial,
        pod_max_backoff_seconds=maximum,
        parallelism=parallelism,
        leader_election=parse_leader_election(
            body.get("leaderElection"), where.at("leaderElection")
        ),
        kubeconfig=kubeconfig,
        extenders=extenders,
    )
