"""Leader election on a Lease, against the emulator over real HTTP.

Durations are small and real (lease 1 s, renew deadline 0.6 s, retry 0.2 s), so every
takeover happens in about a second of wall time.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import logging
import re
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any, NoReturn

import pytest

from volsched.cache.errors import ConfigError, NotFound
from volsched.daemon.config.settings import LeaderElectionSettings
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.runtime.leader import LeaderElector
from volsched.daemon.runtime.lease_record import micro_time
from volsched.emulator import ApiServer, ControllerSettings, write_kubeconfig

Raw = dict[str, Any]

LEASE_SECONDS = 1.0
RENEW_DEADLINE_SECONDS = 0.6
RETRY_SECONDS = 0.2
# Scheduling slack for a loaded test machine: HTTP round trips, loop latency.
SLACK_SECONDS = 0.25
MICRO_TIME = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")


def fast(identity: str, **overrides: Any) -> LeaderElectionSettings:
    values: dict[str, Any] = {
        "lease_duration_seconds": LEASE_SECONDS,
        "renew_deadline_seconds": RENEW_DEADLINE_SECONDS,
        "retry_period_seconds": RETRY_SECONDS,
        "retry_jitter_factor": 0.0,
        "identity": identity,
    }
    values.update(overrides)
    return LeaderElectionSettings(**values)


def parse_micro_time(value: str) -> float:
    moment = datetime.datetime.strptime(value, "%Y-%m-%dT%H:%M:%S.%fZ")
    return moment.replace(tzinfo=datetime.UTC).timestamp()


class Candidate:
    """One replica: an elector running as a task, and what its callbacks saw."""

    def __init__(self, client: KubeClient, settings: LeaderElectionSettings) -> None:
        self.elector = LeaderElector(client, settings)
        self.started: list[float] = []
        self.stopped: list[float] = []
        self.stopped_event = asyncio.Event()
        self.task: asyncio.Task[NoReturn] | None = None

    @property
    def identity(self) -> str:
        return self.elector.identity

    @property
    def is_leader(self) -> bool:
        return self.elector.is_leader

    def start(self) -> None:
        self.task = asyncio.create_task(
            self.elector.run(self._on_started, self._on_stopped), name=self.identity
        )

    def _on_started(self) -> None:
        self.started.append(time.monotonic())

    async def _on_stopped(self) -> None:
        self.stopped.append(time.monotonic())
        self.stopped_event.set()

    async def crash(self) -> None:
        """Cancel the elector without releasing the Lease, as a killed process would."""
        if self.task is not None and not self.task.done():
            self.task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self.task

    async def shutdown(self) -> bool:
        """Graceful: stop campaigning, then release the Lease."""
        await self.crash()
        return await self.elector.release()

    async def wait_leading(self, timeout: float) -> float:
        """Seconds until this candidate leads."""
        started = time.monotonic()
        await asyncio.wait_for(self.elector.leading.wait(), timeout)
        return time.monotonic() - started


@pytest.fixture(autouse=True)
async def no_leaked_tasks() -> AsyncIterator[None]:
    yield
    await asyncio.sleep(0)
    current = asyncio.current_task()
    leaked = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
    assert not leaked, f"tasks left running: {leaked}"


@pytest.fixture
async def server() -> AsyncIterator[ApiServer]:
    emulator = ApiServer(ControllerSettings.none())
    await emulator.start()
    yield emulator
    await emulator.stop()


@pytest.fixture
async def connect(
    server: ApiServer, tmp_path: Path
) -> AsyncIterator[Callable[[], Awaitable[KubeClient]]]:
    """A new KubeClient per replica, all closed at teardown."""
    path = write_kubeconfig(tmp_path / "kc", server.url)
    clients: list[KubeClient] = []

    async def make() -> KubeClient:
        client = await KubeClient.connect(str(path))
        clients.append(client)
        return client

    yield make
    for client in clients:
        await client.close()


@pytest.fixture
async def candidate(
    connect: Callable[[], Awaitable[KubeClient]],
) -> AsyncIterator[Callable[..., Awaitable[Candidate]]]:
    """Build a started candidate; any still running are crashed at teardown."""
    made: list[Candidate] = []

    async def make(identity: str, start: bool = True, **overrides: Any) -> Candidate:
        replica = Candidate(await connect(), fast(identity, **overrides))
        made.append(replica)
        if start:
            replica.start()
        return replica

    yield make
    for replica in made:
        await replica.crash()


def stored_lease(server: ApiServer) -> Raw:
    lease = server.get("Lease", "volsched", "kube-system")
    assert lease is not None
    return lease


def rival_lease(holder: str, renewed: float, transitions: int = 0, duration: int = 1) -> Raw:
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": {"name": "volsched", "namespace": "kube-system"},
        "spec": {
            "holderIdentity": holder,
            "leaseDurationSeconds": duration,
            "acquireTime": micro_time(renewed),
            "renewTime": micro_time(renewed),
            "leaseTransitions": transitions,
        },
    }


# Settings and formats.


def test_defaults_are_kube_schedulers() -> None:
    settings = LeaderElectionSettings()
    assert settings.enabled
    assert (settings.lease_namespace, settings.lease_name) == ("kube-system", "volsched")
    assert settings.lease_duration_seconds == 15
    assert settings.renew_deadline_seconds == 10
    assert settings.retry_period_seconds == 2
    host, _, suffix = settings.identity.rpartition("_")
    assert host and suffix
    assert LeaderElectionSettings().identity != settings.identity


@pytest.mark.parametrize(
    ("lease", "renew", "retry"),
    [(10, 10, 2), (10, 12, 2), (15, 2, 2), (15, 10, 0)],
)
def test_inconsistent_durations_are_refused(lease: float, renew: float, retry: float) -> None:
    with pytest.raises(ConfigError):
        LeaderElectionSettings(
            lease_duration_seconds=lease, renew_deadline_seconds=renew, retry_period_seconds=retry
        )


def test_micro_time_is_rfc3339_with_microseconds() -> None:
    assert micro_time(1767225600.0) == "2026-01-01T00:00:00.000000Z"
    assert micro_time(1767225600.25) == "2026-01-01T00:00:00.250000Z"


# One replica.


async def test_creates_the_lease_and_leads(
    server: ApiServer, candidate: Callable[..., Awaitable[Candidate]]
) -> None:
    before = time.time()
    a = await candidate("replica-a")
    await a.wait_leading(timeout=2)
    assert len(a.started) == 1

    lease = stored_lease(server)
    spec = lease["spec"]
    assert spec["holderIdentity"] == "replica-a"
    assert spec["leaseDurationSeconds"] == 1
    assert spec["leaseTransitions"] == 0
    assert MICRO_TIME.match(spec["acquireTime"]), spec
    assert MICRO_TIME.match(spec["renewTime"]), spec
    assert before - 0.01 <= parse_micro_time(spec["acquireTime"]) <= time.time()
    assert [r.status for r in server.faults.requests("POST", r"/leases$")] == [201]

    await asyncio.sleep(3 * RETRY_SECONDS)
    renewed = stored_lease(server)
    assert renewed["spec"]["acquireTime"] == spec["acquireTime"]
    assert parse_micro_time(renewed["spec"]["renewTime"]) > parse_micro_time(spec["renewTime"])
    assert renewed["metadata"]["resourceVersion"] != lease["metadata"]["resourceVersion"]
    assert renewed["spec"]["leaseTransitions"] == 0
    assert a.is_leader and not a.stopped
    # Renewals are optimistic PUTs against the Lease last written: no GET per renewal.
    assert not server.faults.requests("GET", r"/leases/volsched$")[1:]


async def test_disabled_election_leads_at_once_without_a_lease(
    server: ApiServer, candidate: Callable[..., Awaitable[Candidate]]
) -> None:
    a = await candidate("replica-a", enabled=False)
    await a.wait_leading(timeout=1)
    await a.crash()
    assert len(a.stopped) == 1
    assert not server.faults.requests(path_regex="/leases")
    assert await a.elector.release() is False


# Several replicas.


async def test_two_replicas_never_lead_together(
    server: ApiServer, candidate: Callable[..., Awaitable[Candidate]]
) -> None:
    # Default jitter here: candidates poll at random intervals, as in production.
    a = await candidate("replica-a", retry_jitter_factor=1.2)
    b = await candidate("replica-b", retry_jitter_factor=1.2)
    loop = asyncio.get_running_loop()
    end = loop.time() + 2.0
    leaders_seen: set[str] = set()
    while loop.time() < end:
        leading = [c.identity for c in (a, b) if c.is_leader]
        assert len(leading) <= 1, leading
        leaders_seen.update(leading)
        await asyncio.sleep(0.01)
    assert len(leaders_seen) == 1
    (leader,) = leaders_seen
    assert stored_lease(server)["spec"]["holderIdentity"] == leader
    assert stored_lease(server)["spec"]["leaseTransitions"] == 0
    standby = b if leader == a.identity else a
    assert not standby.started


async def test_crashed_leader_is_replaced_once_its_lease_expires(
    server: ApiServer, candidate: Callable[..., Awaitable[Candidate]]
) -> None:
    a = await candidate("replica-a")
    await a.wait_leading(timeout=2)
    b = await candidate("replica-b")
    await asyncio.sleep(3 * RETRY_SECONDS)
    assert not b.is_leader

    last_renew = parse_micro_time(stored_lease(server)["spec"]["renewTime"])
    await a.crash()
    crashed = time.time()
    took = await b.wait_leading(timeout=LEASE_SECONDS + 3 * RETRY_SECONDS + 1)

    since_renewal = crashed + took - last_renew
    # Not before the lease expired: the standby counts the lease from when it saw the
    # last renewal, which was at or after that renewal.
    assert since_renewal >= LEASE_SECONDS, since_renewal
    # At most: it saw that renewal within a retry period, and polls every retry period.
    assert took <= LEASE_SECONDS + 2 * RETRY_SECONDS + SLACK_SECONDS, took
    spec = stored_lease(server)["spec"]
    assert spec["holderIdentity"] == "replica-b"
    assert spec["leaseTransitions"] == 1
    assert parse_micro_time(spec["acquireTime"]) >= crashed


async def test_graceful_release_hands_over_within_a_retry_period(
    server: ApiServer, candidate: Callable[..., Awaitable[Candidate]]
) -> None:
    a = await candidate("replica-a")
    await a.wait_leading(timeout=2)
    b = await candidate("replica-b")
    await asyncio.sleep(2 * RETRY_SECONDS)

    assert await a.shutdown() is True
    released = time.monotonic()
    assert a.elector.holder == ""
    assert a.elector.lease is not None
    assert a.elector.lease["spec"]["leaseDurationSeconds"] == 1
    assert a.elector.lease["spec"]["leaseTransitions"] == 0
    assert len(a.stopped) == 1 and not a.is_leader

    await b.wait_leading(timeout=2)
    took = time.monotonic() - released
    assert took <= RETRY_SECONDS + SLACK_SECONDS, took
    spec = stored_lease(server)["spec"]
    assert spec["holderIdentity"] == "replica-b"
    assert spec["leaseDurationSeconds"] == 1
    assert spec["leaseTransitions"] == 1
    # Releasing again, or a Lease held by someone else, is a no-op.
    assert await a.elector.release() is False


async def test_release_while_running_is_refused(
    candidate: Callable[..., Awaitable[Candidate]],
) -> None:
    a = await candidate("replica-a")
    await a.wait_leading(timeout=2)
    with pytest.raises(RuntimeError):
        await a.elector.release()


async def test_leader_that_cannot_renew_steps_down_within_the_renew_deadline(
    server: ApiServer, candidate: Callable[..., Awaitable[Candidate]]
) -> None:
    a = await candidate("replica-a")
    await a.wait_leading(timeout=2)
    await asyncio.sleep(RETRY_SECONDS)

    server.faults.fail_next("PUT", r"/leases/volsched", 500, times=100)
    broken = time.monotonic()
    await asyncio.wait_for(a.stopped_event.wait(), RENEW_DEADLINE_SECONDS + 1)
    took = a.stopped[0] - broken
    stopped_wall = time.time()

    assert not a.is_leader
    assert len(a.stopped) == 1
    assert took <= RENEW_DEADLINE_SECONDS + SLACK_SECONDS, took
    # Stepped down before anyone else could have taken the Lease over.
    spec = stored_lease(server)["spec"]
    assert spec["holderIdentity"] == "replica-a"
    assert stopped_wall - parse_micro_time(spec["renewTime"]) < LEASE_SECONDS

    # Back to candidate: once the API server answers again, it leads again.
    server.faults.reset()
    await a.wait_leading(timeout=2)
    assert len(a.started) == 2
    assert stored_lease(server)["spec"]["leaseTransitions"] == 0


async def test_conflict_on_create_means_another_candidate_won(
    server: ApiServer, candidate: Callable[..., Awaitable[Candidate]]
) -> None:
    a = await candidate("replica-a", start=False)
    elector = a.elector
    real_get = elector.client.get

    async def get_then_lose_the_race(kind: str, name: str, namespace: str | None = None) -> Raw:
        try:
            return await real_get(kind, name, namespace)
        except NotFound:
            # Between our GET (404) and our POST, a rival creates the Lease.
            server.load([rival_lease("rival", time.time())])
            raise

    elector.client.get = get_then_lose_the_race  # type: ignore[method-assign]
    assert await elector.try_acquire_or_renew() is False
    elector.client.get = real_get  # type: ignore[method-assign]
    assert [r.status for r in server.faults.requests("POST", r"/leases$")] == [409]
    assert not elector.is_leader

    # The rival never renews: once its lease expires, the loop takes it over.
    a.start()
    took = await a.wait_leading(timeout=LEASE_SECONDS + 3 * RETRY_SECONDS + 1)
    assert took >= LEASE_SECONDS - RETRY_SECONDS
    spec = stored_lease(server)["spec"]
    assert spec["holderIdentity"] == "replica-a"
    assert spec["leaseTransitions"] == 1


async def test_conflict_on_takeover_means_another_candidate_won(
    server: ApiServer, candidate: Callable[..., Awaitable[Candidate]]
) -> None:
    server.load([rival_lease("", time.time(), transitions=4)])
    a = await candidate("replica-a", start=False)
    server.faults.fail_next("PUT", r"/leases/volsched$", 409)
    assert await a.elector.try_acquire_or_renew() is False
    assert await a.elector.try_acquire_or_renew() is True
    assert stored_lease(server)["spec"]["leaseTransitions"] == 5


async def test_simultaneous_candidates_one_wins(
    server: ApiServer, candidate: Callable[..., Awaitable[Candidate]]
) -> None:
    server.load([rival_lease("", time.time())])
    a = await candidate("replica-a", start=False)
    b = await candidate("replica-b", start=False)
    won = await asyncio.gather(a.elector.try_acquire_or_renew(), b.elector.try_acquire_or_renew())
    assert sorted(won) == [False, True]
    winner = "replica-a" if won[0] else "replica-b"
    spec = stored_lease(server)["spec"]
    assert spec["holderIdentity"] == winner
    assert spec["leaseTransitions"] == 1


# Callbacks.


async def test_callback_failures_are_logged_not_fatal(
    server: ApiServer,
    connect: Callable[[], Awaitable[KubeClient]],
    caplog: pytest.LogCaptureFixture,
) -> None:
    elector = LeaderElector(await connect(), fast("replica-a"))

    def on_started() -> None:
        raise RuntimeError("started boom")

    async def on_stopped() -> None:
        raise RuntimeError("stopped boom")

    with caplog.at_level(logging.ERROR, logger="volsched.leader"):
        task = asyncio.create_task(elector.run(on_started, on_stopped))
        await asyncio.wait_for(elector.leading.wait(), 2)
        await asyncio.sleep(2 * RETRY_SECONDS)
        assert elector.is_leader and not task.done()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
    messages = [r.getMessage() for r in caplog.records]
    assert "on_started_leading failed" in messages
    assert "on_stopped_leading failed" in messages


async def test_async_on_started_runs_for_the_term_and_is_cancelled_at_its_end(
    server: ApiServer,
    connect: Callable[[], Awaitable[KubeClient]],
) -> None:
    elector = LeaderElector(await connect(), fast("replica-a"))
    term_started = asyncio.Event()
    term_cancelled = asyncio.Event()
    order: list[str] = []

    async def lead() -> None:
        term_started.set()
        try:
            await asyncio.Future()
        except asyncio.CancelledError:
            order.append("term cancelled")
            term_cancelled.set()
            raise

    def on_stopped() -> None:
        order.append("on_stopped_leading")

    task = asyncio.create_task(elector.run(lead, on_stopped))
    await asyncio.wait_for(term_started.wait(), 2)
    # Renewals go on while the term runs.
    await asyncio.sleep(2 * RETRY_SECONDS)
    assert elector.is_leader
    task.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert term_cancelled.is_set()
    assert order == ["term cancelled", "on_stopped_leading"]
    assert not elector.is_leader
