"""The settings tree: one typed object, built once from the config file, the environment
and the command line (``volsched.daemon.config.loading``), and passed explicitly. No other
module reads the environment.

Every key has a default, so ``volsched run`` needs no file.
"""

from __future__ import annotations

import math
import socket
import uuid
from dataclasses import dataclass, field

from volsched.cache.errors import ConfigError
from volsched.cache.objects.core import DEFAULT_SCHEDULER
from volsched.cache.objects.names import name_problem, shown
from volsched.cache.objects.replicated import CSI_DRIVER
from volsched.scheduling.extender_config import ExtenderSpec
from volsched.scheduling.replicas.settings import ReplicaSchedulingSettings
from volsched.scheduling.scheduler_config import (
    DEFAULT_SCHEDULER_NAME,
    ProfileSpec,
)
from volsched.scheduling.scheduler_config.feature_gates import DEFAULT_GATES, FeatureGates


def default_identity() -> str:
    """Host name plus a random suffix, as kube-scheduler builds its identity, so two
    replicas on one host (or a restarted one) never mistake each other's Lease for theirs."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True, slots=True)
class LeaderElectionSettings:
    """kube-scheduler's ``leaderElection`` block, with its defaults."""

    enabled: bool = True
    lease_name: str = DEFAULT_SCHEDULER_NAME
    lease_namespace: str = "kube-system"
    lease_duration_seconds: float = 15.0
    renew_deadline_seconds: float = 10.0
    retry_period_seconds: float = 2.0
    # A candidate waits retry_period * (1 + random() * jitter) between attempts, like
    # client-go's JitterUntil, so standbys do not poll in lockstep. Renewals are not jittered.
    retry_jitter_factor: float = 1.2
    identity: str = field(default_factory=default_identity)

    def __post_init__(self) -> None:
        # client-go's NewLeaderElector refuses the same combinations.
        if not self.identity:
            raise ConfigError("leaderElection: identity must not be empty")
        if not self.lease_name or not self.lease_namespace:
            raise ConfigError("leaderElection: lease name and namespace must not be empty")
        # The lease's name and namespace go into its API path: refuse one no Lease can have.
        for what, kind, value in (
            ("lease name (leaseName / resourceName)", "Lease", self.lease_name),
            (
                "lease namespace (leaseNamespace / resourceNamespace)",
                "Namespace",
                self.lease_namespace,
            ),
        ):
            problem = name_problem(kind, value)
            if problem is not None:
                raise ConfigError(f"leaderElection: the {what} '{shown(value, 63)}' {problem}")
        if self.retry_period_seconds <= 0 or self.retry_jitter_factor < 0:
            raise ConfigError("leaderElection: retryPeriod must be > 0 and jitter >= 0")
        if self.lease_duration_seconds <= self.renew_deadline_seconds:
            raise ConfigError("leaderElection: leaseDuration must be greater than renewDeadline")
        jittered_retry = self.retry_period_seconds * max(1.0, self.retry_jitter_factor)
        if self.renew_deadline_seconds <= jittered_retry:
            raise ConfigError(
                "leaderElection: renewDeadline must be greater than retryPeriod * jitter factor"
            )

    @property
    def lease_duration_field(self) -> int:
        """``spec.leaseDurationSeconds`` is an int32: round up, never promise less."""
        return max(1, math.ceil(self.lease_duration_seconds))


DEFAULT_DATABASE_PATH = "./volsched.db"
DEFAULT_HTTP_ADDRESS = "127.0.0.1:10351"
DEFAULT_WEBHOOK_ADDRESS = "0.0.0.0:8443"


@dataclass(frozen=True, slots=True)
class DatabaseSettings:
    path: str = DEFAULT_DATABASE_PATH


@dataclass(frozen=True, slots=True)
class AuthSettings:
    """Who may call the extender verbs and ``/metrics`` (health stays anonymous).

    On by default, as in kube-scheduler: HTTPS, bearer tokens checked with TokenReview,
    client certificates checked against ``client_ca_file``, every caller authorised with
    a SubjectAccessReview on the path and verb.  Off only for a loopback address.
    """

    enabled: bool = True
    cert_file: str | None = None
    key_file: str | None = None
    client_ca_file: str | None = None
    cache_ttl_seconds: float = 10.0


@dataclass(frozen=True, slots=True)
class HttpSettings:
    address: str = DEFAULT_HTTP_ADDRESS
    authentication: AuthSettings = field(default_factory=AuthSettings)
    max_connections: int = 256
    idle_timeout_seconds: float = 30.0
    header_timeout_seconds: float = 10.0  # TLS handshake and first request headers


@dataclass(frozen=True, slots=True)
class WebhookSettings:
    """``volsched webhook``: where it listens, its TLS pair, and what it routes."""

    address: str = DEFAULT_WEBHOOK_ADDRESS
    cert_file: str | None = None
    key_file: str | None = None
    # Empty: the daemon's schedulerName.
    scheduler_name: str | None = None
    storage_classes: tuple[str, ...] = ()
    provisioners: tuple[str, ...] = (CSI_DRIVER,)
    # How long an admission may spend reading a claim the webhook's caches do not know
    # yet; never more than half the API server's timeout for the call (deploy/: 3 s).
    lookup_timeout_seconds: float = 1.5


@dataclass(frozen=True, slots=True)
class BackoffSettings:
    initial_seconds: float = 1.0
    max_seconds: float = 10.0
    # kube-scheduler's podMaxInUnschedulablePodsDuration: an unschedulable pod no event
    # moved is retried after this long.
    max_in_unschedulable_seconds: float = 300.0


@dataclass(frozen=True, slots=True)
class ShadowSettings:
    """``volsched run --shadow``: decide the pending pods of other schedulers without
    writing anything, and compare with where those schedulers bind them."""

    enabled: bool = False
    # Whose pods are shadowed: kube-scheduler's default profile unless told otherwise.
    scheduler_names: tuple[str, ...] = (DEFAULT_SCHEDULER,)


@dataclass(frozen=True, slots=True)
class Settings:
    scheduler_name: str = DEFAULT_SCHEDULER_NAME
    kubeconfig: str | None = None
    database: DatabaseSettings = field(default_factory=DatabaseSettings)
    http: HttpSettings = field(default_factory=HttpSettings)
    policy_file: str | None = None
    bind_timeout_seconds: float = 600.0
    backoff: BackoffSettings = field(default_factory=BackoffSettings)
    parallelism: int = 16
    percentage_of_nodes_to_score: int = 0
    replica_scheduling: ReplicaSchedulingSettings = field(default_factory=ReplicaSchedulingSettings)
    tracing_endpoint: str | None = None
    leader_election: LeaderElectionSettings = field(default_factory=LeaderElectionSettings)
    extender_path_prefix: str = "/scheduler"
    extender_locality_points: bool = False
    webhook: WebhookSettings = field(default_factory=WebhookSettings)
    # From a KubeSchedulerConfiguration; empty: one default profile named scheduler_name.
    profiles: tuple[ProfileSpec, ...] = ()
    # Pods whose spec.schedulerName is one of these may be filtered and bound through the
    # extender verbs (the profiles of the kube-scheduler that calls volsched).
    extender_scheduler_names: tuple[str, ...] = (DEFAULT_SCHEDULER,)
    shadow: ShadowSettings = field(default_factory=ShadowSettings)
    # The HTTP extenders a KubeSchedulerConfiguration lists, which volsched calls.
    extenders: tuple[ExtenderSpec, ...] = ()
    # kube-scheduler's feature gates (``featureGates``, ``--feature-gates``).
    feature_gates: FeatureGates = DEFAULT_GATES
    source: str = "(defaults)"
