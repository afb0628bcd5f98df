"""The Lease's ``spec`` as client-go's ``LeaderElectionRecord`` writes it: who holds it,
since when, how long it lasts, how many times it changed hands.

Pure functions over the raw Lease, so the elector keeps only the timing and the talking.
"""

from __future__ import annotations

import datetime
from collections.abc import Mapping
from typing import Any

from volsched.daemon.config.settings import LeaderElectionSettings

Raw = dict[str, Any]


def micro_time(epoch_seconds: float) -> str:
    """A Kubernetes MicroTime: ``2026-01-02T03:04:05.123456Z``."""
    moment = datetime.datetime.fromtimestamp(epoch_seconds, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def lease_spec(lease: Mapping[str, Any] | None) -> Mapping[str, Any]:
    spec = (lease or {}).get("spec")
    return spec if isinstance(spec, Mapping) else {}


def lease_holder(lease: Mapping[str, Any] | None) -> str:
    return str(lease_spec(lease).get("holderIdentity") or "")


def lease_record(
    identity: str,
    settings: LeaderElectionSettings,
    now: float,
    acquired: float | str,
    transitions: int,
) -> Raw:
    return {
        "holderIdentity": identity,
        "leaseDurationSeconds": settings.lease_duration_field,
        "acquireTime": acquired if isinstance(acquired, str) else micro_time(acquired),
        "renewTime": micro_time(now),
        "leaseTransitions": transitions,
    }


def renewed_lease(
    lease: Mapping[str, Any], identity: str, settings: LeaderElectionSettings, now: float
) -> Raw:
    """Our own Lease, renewed: acquireTime and leaseTransitions stay."""
    old = lease_spec(lease)
    acquired = str(old.get("acquireTime") or micro_time(now))
    transitions = int(old.get("leaseTransitions") or 0)
    spec = {
        **old,
        **lease_record(identity, settings, now, acquired=acquired, transitions=transitions),
    }
    return {**lease, "spec": spec}


def taken_over_lease(
    lease: Mapping[str, Any], identity: str, settings: LeaderElectionSettings, now: float
) -> Raw:
    """Another holder's (or nobody's) Lease, taken over: one more transition."""
    old = lease_spec(lease)
    transitions = int(old.get("leaseTransitions") or 0) + 1
    spec = {**old, **lease_record(identity, settings, now, acquired=now, transitions=transitions)}
    return {**lease, "spec": spec}


def released_lease(lease: Mapping[str, Any], now: float) -> Raw:
    """The Lease stepped down from: no holder and a one-second duration (client-go's
    ``ReleaseOnCancel``), so a standby takes over on its next retry."""
    spec = dict(lease_spec(lease))
    spec.update(
        holderIdentity="",
        leaseDurationSeconds=1,
        acquireTime=micro_time(now),
        renewTime=micro_time(now),
        leaseTransitions=int(spec.get("leaseTransitions") or 0),
    )
    return {**lease, "spec": spec}
