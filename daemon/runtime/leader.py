"""Leader election on a ``coordination.k8s.io/v1`` Lease, the way kube-scheduler does it.

Several replicas run; one holds the Lease and schedules, the others keep their caches warm
and poll the Lease every retry period. The algorithm is client-go's ``leaderelection``:

- a candidate creates the Lease when it is missing, and takes it over when its holder is
  empty (released) or has not renewed it for ``leaseDurationSeconds``;
- the leader renews it every retry period; if renewals keep failing until the renew
  deadline has passed since the last successful one, it stops leading at once — before
  the others may take over (the renew deadline is shorter than the lease duration);
- every write is a PUT carrying the resourceVersion last read, so of two candidates racing
  for the same Lease one gets a 409 and stays a candidate.

"Not renewed for leaseDurationSeconds" is measured, as in client-go, on this replica's
monotonic clock from the moment it last saw the Lease *change*, not from the holder's
``renewTime``: the holder's wall clock may be skewed against ours, and trusting it could
make two leaders. The cost is that a candidate which first sees a stale Lease waits one
lease duration before taking it over.

The spec is written field for field as client-go writes it: ``holderIdentity``,
``leaseDurationSeconds``, ``acquireTime``, ``renewTime`` (MicroTime, RFC 3339 with
microseconds) and ``leaseTransitions`` (incremented whenever the holder changes).
"""

from __future__ import annotations

import asyncio
import datetime
import inspect
import logging
import math
import random
import socket
import time
import uuid
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn, Protocol

from volsched.cache.errors import ApiError, ConfigError, Conflict, NotFound

log = logging.getLogger("volsched.leader")

Raw = dict[str, Any]

# What OnStartedLeading / OnStoppedLeading may be: a plain function, or one returning an
# awaitable (an ``async def``).
Callback = Callable[[], Awaitable[object] | None]


def default_identity() -> str:
    """Host name plus a random suffix, as kube-scheduler builds its identity, so two
    replicas on one host (or a restarted one) never mistake each other's Lease for theirs."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"


@dataclass(frozen=True, slots=True)
class LeaderElectionSettings:
    """kube-scheduler's ``leaderElection`` block, with its defaults."""

    enabled: bool = True
    lease_name: str = "volsched"
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


class LeaseClient(Protocol):
    """The part of ``KubeClient`` the elector uses."""

    async def get(self, kind: str, name: str, namespace: str | None = None) -> Raw: ...

    async def create(
        self, kind: str, obj: Mapping[str, Any], namespace: str | None = None
    ) -> Raw: ...

    async def replace(self, kind: str, obj: Mapping[str, Any]) -> Raw: ...


def micro_time(epoch_seconds: float) -> str:
    """A Kubernetes MicroTime: ``2026-01-02T03:04:05.123456Z``."""
    moment = datetime.datetime.fromtimestamp(epoch_seconds, datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _spec(lease: Mapping[str, Any] | None) -> Mapping[str, Any]:
    spec = (lease or {}).get("spec")
    return spec if isinstance(spec, Mapping) else {}


def _holder(lease: Mapping[str, Any] | None) -> str:
    return str(_spec(lease).get("holderIdentity") or "")


class LeaderElector:
    """One replica's side of the election.

    ``run`` is the forever-loop; ``try_acquire_or_renew`` is its finite step. ``leading``
    is set while this replica leads (between ``on_started_leading`` and
    ``on_stopped_leading``), so the daemon can ``await elector.leading.wait()``.
    """

    def __init__(
        self,
        client: LeaseClient,
        settings: LeaderElectionSettings,
        clock: Callable[[], float] = time.time,
        monotonic: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.client = client
        self.settings = settings
        self.identity = settings.identity
        self.leading = asyncio.Event()
        self._clock = clock
        self._monotonic = monotonic
        self._sleep = sleep
        # The Lease as last read or written (its resourceVersion makes the next PUT
        # conditional), and when — on our monotonic clock — its spec last changed.
        self._lease: Raw | None = None
        self._observed_at = 0.0
        self._last_renew = 0.0
        self._term: asyncio.Future[object] | None = None
        self._running = False

    @property
    def is_leader(self) -> bool:
        return self.leading.is_set()

    @property
    def lease(self) -> Mapping[str, Any] | None:
        """The Lease as this replica last read or wrote it."""
        return self._lease

    @property
    def holder(self) -> str:
        """The holder as last seen ("" when none or unknown)."""
        return _holder(self._lease)

    # The forever-loop.

    async def run(self, on_started_leading: Callback, on_stopped_leading: Callback) -> NoReturn:
        """Forever: become leader, lead until renewal fails, start over.

        ``on_started_leading`` is called when a term begins; if it is a coroutine function
        its coroutine runs as a task for the term and is cancelled when the term ends
        (client-go's ``OnStartedLeading(ctx)``). ``on_stopped_leading`` is called, and
        awaited, when the term ends — lost, or this task cancelled. Exceptions in either
        are logged, never fatal. Cancel this task, then ``release()``, to step down.
        """
        if self._running:
            raise RuntimeError("LeaderElector.run is already running")
        self._running = True
        try:
            if not self.settings.enabled:
                # Election off: the only replica leads at once, for good, touching no Lease.
                await self._start_leading(on_started_leading)
                try:
                    await asyncio.Future()
                finally:
                    await self._stop_leading(on_stopped_leading)
            while True:
                await self._acquire()
                await self._start_leading(on_started_leading)
                try:
                    await self._renew_until_lost()
                finally:
                    await self._stop_leading(on_stopped_leading)
        finally:
            self._running = False

    async def _acquire(self) -> None:
        settings = self.settings
        while not await self.try_acquire_or_renew():
            jitter = random.random() * settings.retry_jitter_factor
            await self._sleep(settings.retry_period_seconds * (1.0 + jitter))
        log.info(
            "%s acquired lease %s/%s", self.identity, settings.lease_namespace, settings.lease_name
        )

    async def _renew_until_lost(self) -> None:
        while True:
            await self._sleep(self.settings.retry_period_seconds)
            if not await self.renew_before_deadline():
                return

    async def renew_before_deadline(self) -> bool:
        """Retry renewing until it succeeds (True) or the renew deadline since the last
        successful renewal passes, or another holder shows up (False).

        Each attempt is cut at the deadline, so a hung request cannot keep a leader that
        the others are about to replace.
        """
        settings = self.settings
        deadline = self._last_renew + settings.renew_deadline_seconds
        while True:
            remaining = deadline - self._monotonic()
            if remaining <= 0:
                break
            try:
                async with asyncio.timeout(remaining):
                    renewed = await self.try_acquire_or_renew()
            except TimeoutError:
                break
            if renewed:
                return True
            if self.holder != self.identity:
                log.warning("%s lost lease to %r", self.identity, self.holder)
                return False
            await self._sleep(min(settings.retry_period_seconds, deadline - self._monotonic()))
        log.warning(
            "%s failed to renew lease %s/%s within %gs",
            self.identity,
            settings.lease_namespace,
            settings.lease_name,
            settings.renew_deadline_seconds,
        )
        return False

    # The finite step.

    async def try_acquire_or_renew(self) -> bool:
        """One attempt: True if this replica holds the Lease afterwards.

        client-go's ``tryAcquireOrRenew``: a leader first renews optimistically against the
        Lease it last wrote; otherwise read it, create it if missing, leave it if another
        holder's lease is still valid, else take it over (or renew it) with a conditional PUT.
        """
        settings = self.settings
        started = self._monotonic()
        now = self._clock()
        if self._lease is not None and self.holder == self.identity and self._lease_valid(started):
            try:
                renewed = await self.client.replace("Lease", self._renewed(self._lease, now))
            except ApiError as exc:
                log.info("optimistic renewal failed (%s); reading the lease", exc)
            else:
                self._wrote(renewed, started)
                return True

        try:
            lease = await self.client.get("Lease", settings.lease_name, settings.lease_namespace)
        except NotFound:
            return await self._create(now, started)
        except ApiError as exc:
            log.info("cannot read lease %s: %s", settings.lease_name, exc)
            return False
        self._observe(lease)

        holder = _holder(lease)
        if holder and holder != self.identity and self._lease_valid(self._monotonic()):
            return False
        if holder == self.identity:
            body = self._renewed(lease, now)
        else:
            body = self._taken_over(lease, now)
        try:
            written = await self.client.replace("Lease", body)
        except Conflict:
            # Someone wrote the Lease since we read it: another candidate won this round.
            log.info("lease %s changed under us; another candidate won", settings.lease_name)
            return False
        except ApiError as exc:
            log.info("cannot update lease %s: %s", settings.lease_name, exc)
            return False
        self._wrote(written, started)
        return True

    async def _create(self, now: float, started: float) -> bool:
        settings = self.settings
        body: Raw = {
            "apiVersion": "coordination.k8s.io/v1",
            "kind": "Lease",
            "metadata": {"name": settings.lease_name, "namespace": settings.lease_namespace},
            "spec": self._record(now, acquired=now, transitions=0),
        }
        try:
            created = await self.client.create("Lease", body, namespace=settings.lease_namespace)
        except Conflict:
            # AlreadyExists: another candidate created it between our GET and POST.
            log.info("lease %s was created by another candidate", settings.lease_name)
            return False
        except ApiError as exc:
            log.info("cannot create lease %s: %s", settings.lease_name, exc)
            return False
        self._wrote(created, started)
        return True

    async def release(self) -> bool:
        """Step down on graceful shutdown, after ``run`` was cancelled: if this replica
        still holds the Lease, empty its holder and set ``leaseDurationSeconds`` to 1 (as
        client-go's ``ReleaseOnCancel``), so a standby takes over on its next retry
        instead of waiting out the lease. True if the Lease was released.
        """
        if self._running:
            raise RuntimeError("cancel LeaderElector.run before releasing the lease")
        settings = self.settings
        if not settings.enabled or self.holder != self.identity:
            return False
        try:
            async with asyncio.timeout(settings.renew_deadline_seconds):
                # Read first: our last write's response may have been lost, and a PUT with
                # a stale resourceVersion would be refused.
                lease = await self.client.get(
                    "Lease", settings.lease_name, settings.lease_namespace
                )
                self._observe(lease)
                if _holder(lease) != self.identity:
                    return False
                now = self._clock()
                spec = dict(_spec(lease))
                spec.update(
                    holderIdentity="",
                    leaseDurationSeconds=1,
                    acquireTime=micro_time(now),
                    renewTime=micro_time(now),
                    leaseTransitions=int(spec.get("leaseTransitions") or 0),
                )
                released = await self.client.replace("Lease", {**lease, "spec": spec})
        except (ApiError, TimeoutError) as exc:
            log.warning("could not release lease %s: %s", settings.lease_name, exc)
            return False
        self._observe(released)
        log.info("%s released lease %s", self.identity, settings.lease_name)
        return True

    # The Lease record.

    def _record(self, now: float, acquired: float | str, transitions: int) -> Raw:
        return {
            "holderIdentity": self.identity,
            "leaseDurationSeconds": self.settings.lease_duration_field,
            "acquireTime": acquired if isinstance(acquired, str) else micro_time(acquired),
            "renewTime": micro_time(now),
            "leaseTransitions": transitions,
        }

    def _renewed(self, lease: Mapping[str, Any], now: float) -> Raw:
        """Our own Lease, renewed: acquireTime and leaseTransitions stay."""
        old = _spec(lease)
        acquired = str(old.get("acquireTime") or micro_time(now))
        transitions = int(old.get("leaseTransitions") or 0)
        spec = {**old, **self._record(now, acquired=acquired, transitions=transitions)}
        return {**lease, "spec": spec}

    def _taken_over(self, lease: Mapping[str, Any], now: float) -> Raw:
        """Another holder's (or nobody's) Lease, taken over: one more transition."""
        old = _spec(lease)
        transitions = int(old.get("leaseTransitions") or 0) + 1
        spec = {**old, **self._record(now, acquired=now, transitions=transitions)}
        return {**lease, "spec": spec}

    def _observe(self, lease: Raw) -> None:
        """Remember a Lease read from the server; its lease clock restarts only when its
        spec changed (a renewal by the holder changes renewTime)."""
        if _spec(lease) != _spec(self._lease):
            self._observed_at = self._monotonic()
        self._lease = lease

    def _wrote(self, lease: Raw, started: float) -> None:
        # Count from before the request was sent: the renew deadline then errs early.
        self._lease = lease
        self._observed_at = started
        self._last_renew = started

    def _lease_valid(self, now: float) -> bool:
        duration = float(_spec(self._lease).get("leaseDurationSeconds") or 0)
        return self._observed_at + duration > now

    # The leadership term.

    async def _start_leading(self, on_started_leading: Callback) -> None:
        self.leading.set()
        try:
            result = on_started_leading()
        except Exception:
            log.exception("on_started_leading failed")
            return
        if inspect.isawaitable(result):
            term = asyncio.ensure_future(result)
            term.add_done_callback(_log_term_end)
            self._term = term

    async def _stop_leading(self, on_stopped_leading: Callback) -> None:
        self.leading.clear()
        term, self._term = self._term, None
        if term is not None and not term.done():
            term.cancel()
            await asyncio.wait([term])
        try:
            result = on_stopped_leading()
            if inspect.isawaitable(result):
                await result
        except Exception:
            log.exception("on_stopped_leading failed")


def _log_term_end(term: asyncio.Future[object]) -> None:
    if not term.cancelled() and (exc := term.exception()) is not None:
        log.error("on_started_leading failed", exc_info=exc)
