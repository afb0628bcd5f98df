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
import inspect
import logging
import random
import time
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, NoReturn, Protocol

from volsched.cache.errors import ApiError, Conflict, NotFound
from volsched.daemon.config.settings import LeaderElectionSettings
from volsched.daemon.runtime.lease_record import (
    lease_holder,
    lease_record,
    lease_spec,
    released_lease,
    renewed_lease,
    taken_over_lease,
)

log = logging.getLogger("volsched.leader")

Raw = dict[str, Any]

# What OnStartedLeading / OnStoppedLeading may be: a plain function, or one returning an
# awaitable (an ``async def``).
Callback = Callable[[], Awaitable[object] | None]


class LeaseClient(Protocol):
    """The part of ``KubeClient`` the elector uses."""

    async def get(self, kind: str, name: str, namespace: str | None = None) -> Raw: ...

    async def create(
        self, kind: str, obj: Mapping[str, Any], namespace: str | None = None
    ) -> Raw: ...

    async def replace(self, kind: str, obj: Mapping[str, Any]) -> Raw: ...


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
        return lease_holder(self._lease)

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
                    while await self.renew_before_deadline(pause=True):
                        pass
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

    async def renew_before_deadline(self, pause: bool = False) -> bool:
        """Retry renewing until it succeeds (True) or the renew deadline since the last
        successful renewal passes, or another holder shows up (False). With ``pause``, wait
        one retry period first (the leader's rhythm).

        Each attempt is cut at the deadline, so a hung request cannot keep a leader that
        the others are about to replace.
        """
        settings = self.settings
        if pause:
            await self._sleep(settings.retry_period_seconds)
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
                renewed = await self.client.replace(
                    "Lease", renewed_lease(self._lease, self.identity, self.settings, now)
                )
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

        holder = lease_holder(lease)
        if holder and holder != self.identity and self._lease_valid(self._monotonic()):
            return False
        if holder == self.identity:
            body = renewed_lease(lease, self.identity, self.settings, now)
        else:
            body = taken_over_lease(lease, self.identity, self.settings, now)
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
            "spec": lease_record(self.identity, self.settings, now, acquired=now, transitions=0),
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
                if lease_holder(lease) != self.identity:
                    return False
                released = await self.client.replace("Lease", released_lease(lease, self._clock()))
        except (ApiError, TimeoutError) as exc:
            log.warning("could not release lease %s: %s", settings.lease_name, exc)
            return False
        self._observe(released)
        log.info("%s released lease %s", self.identity, settings.lease_name)
        return True

    def _observe(self, lease: Raw) -> None:
        """Remember a Lease read from the server; its lease clock restarts only when its
        spec changed (a renewal by the holder changes renewTime)."""
        if lease_spec(lease) != lease_spec(self._lease):
            self._observed_at = self._monotonic()
        self._lease = lease

    def _wrote(self, lease: Raw, started: float) -> None:
        # Count from before the request was sent: the renew deadline then errs early.
        self._lease = lease
        self._observed_at = started
        self._last_renew = started

    def _lease_valid(self, now: float) -> bool:
        duration = float(lease_spec(self._lease).get("leaseDurationSeconds") or 0)
        return self._observed_at + duration > now

    # The leadership term.

    async def _start_leading(self, on_started_leading: Callback) -> None:
        self.leading.set()
        self._term = start_term(on_started_leading)

    async def _stop_leading(self, on_stopped_leading: Callback) -> None:
        self.leading.clear()
        term, self._term = self._term, None
        await end_term(term, on_stopped_leading)


def start_term(on_started_leading: Callback) -> asyncio.Future[object] | None:
    """Call ``on_started_leading``; an awaitable it returns runs for the term."""
    try:
        result = on_started_leading()
    except Exception:
        log.exception("on_started_leading failed")
        return None
    if not inspect.isawaitable(result):
        return None
    term = asyncio.ensure_future(result)
    term.add_done_callback(_log_term_end)
    return term


async def end_term(term: asyncio.Future[object] | None, on_stopped_leading: Callback) -> None:
    """Cancel the term's task, then call (and await) ``on_stopped_leading``."""
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
