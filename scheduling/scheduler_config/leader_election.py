"""``leaderElection`` (component-base's LeaderElectionConfiguration) with upstream's
defaults: an empty, zero or null value is the default, as Go decodes and defaults it —
``resourceLock: ''`` is ``leases``, a zero duration is 15s / 10s / 2s, an empty
``resourceName`` / ``resourceNamespace`` is ``kube-scheduler`` / ``kube-system``. A field
the document leaves out keeps volsched's own setting (its lease is named after it)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from volsched.cache.objects.durations import (
    MAX_NANOSECONDS,
    duration_problem,
    go_duration_seconds,
)
from volsched.cache.objects.fields import shown
from volsched.scheduling.scheduler_config.fields import Where, boolean, mapping

DEFAULT_LEASE_DURATION_SECONDS = 15.0
DEFAULT_RENEW_DEADLINE_SECONDS = 10.0
DEFAULT_RETRY_PERIOD_SECONDS = 2.0
DEFAULT_RESOURCE_LOCK = "leases"
DEFAULT_RESOURCE_NAME = "kube-scheduler"
DEFAULT_RESOURCE_NAMESPACE = "kube-system"

_DURATIONS = {
    "leaseDuration": DEFAULT_LEASE_DURATION_SECONDS,
    "renewDeadline": DEFAULT_RENEW_DEADLINE_SECONDS,
    "retryPeriod": DEFAULT_RETRY_PERIOD_SECONDS,
}
_NAMES = {"resourceName": DEFAULT_RESOURCE_NAME, "resourceNamespace": DEFAULT_RESOURCE_NAMESPACE}
_FIELDS = ("leaderElect", "resourceLock", *_DURATIONS, *_NAMES)


@dataclass(frozen=True, slots=True)
class LeaderElection:
    """What the document sets (None: not given, volsched's own setting stays)."""

    leader_elect: bool | None = None
    lease_duration_seconds: float | None = None
    renew_deadline_seconds: float | None = None
    retry_period_seconds: float | None = None
    resource_name: str | None = None
    resource_namespace: str | None = None

    @property
    def given(self) -> bool:
        return any(getattr(self, field) is not None for field in self.__slots__)


def parse_go_duration(value: Any, where: Where) -> float:
    """A Go duration (``15s``, ``1m30s``, ``500ms``, ``0``) in seconds; never negative."""
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise where.fail(f"must be a duration such as 15s, not {shown(value)}")
    if isinstance(value, int | float):
        # A bare number is nanoseconds, as metav1.Duration decodes it from JSON.
        if value < 0:
            raise where.fail(f"must not be negative, not {value}")
        if value > MAX_NANOSECONDS:
            raise where.fail(f"must be at most {MAX_NANOSECONDS} nanoseconds (Go's time.Duration)")
        return float(value) * 1e-9
    seconds = go_duration_seconds(value) if value else 0.0
    if seconds is None:
        raise where.fail(duration_problem(value))
    return seconds


def parse_leader_election(value: Any, where: Where) -> LeaderElection:
    body: Mapping[str, Any] = mapping(value, where, _FIELDS)
    if value is None:
        return LeaderElection()
    elect = boolean(body.get("leaderElect"), where.at("leaderElect"), True)
    lock = body.get("resourceLock") or DEFAULT_RESOURCE_LOCK
    if elect and lock != DEFAULT_RESOURCE_LOCK:
        # Upstream's validation: with leader election on, the lock must be leases.
        raise where.at("resourceLock").fail(
            f"must be leases when leaderElect is true, not {shown(lock)}"
        )
    durations: dict[str, float | None] = {}
    for key, seconds_default in _DURATIONS.items():
        if key not in body:
            durations[key] = None
            continue
        seconds = parse_go_duration(body[key] if body[key] is not None else "", where.at(key))
        durations[key] = seconds or seconds_default
    names: dict[str, str | None] = {}
    for key, name_default in _NAMES.items():
        if key not in body:
            names[key] = None
            continue
        text = body[key]
        if text is not None and not isinstance(text, str):
            raise where.at(key).fail(f"must be a string, not {shown(text)}")
        names[key] = text or name_default
    return LeaderElection(
        leader_elect=elect if "leaderElect" in body else None,
        lease_duration_seconds=durations["leaseDuration"],
        renew_deadline_seconds=durations["renewDeadline"],
        retry_period_seconds=durations["retryPeriod"],
        resource_name=names["resourceName"],
        resource_namespace=names["resourceNamespace"],
    )
