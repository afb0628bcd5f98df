"""Silence is not a failure; a broken watch is. Against the emulator with bookmarks
switched off (kube-apiserver without etcd's progress notifications, for a kind nobody
writes): a quiet watch is renewed when the server ends it, with no warning, and every
way a watch really breaks — a reset connection, a stream stalled with its connection
open, errors, a stream ended at once — is still logged at WARNING."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.emulator.support import eventually, storage_class
from volsched.cache.cluster import ClusterCache
from volsched.daemon.kube import client as client_module
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.kube.keepalive import keep_alive
from volsched.daemon.watch.ingest import Ingest
from volsched.daemon.watch.watching import KindWatcher, WatchSettings
from volsched.emulator import ApiServer, ControllerSettings

# Watches the server ends after 1 s; one still open half a second later has stalled.
SHORT = WatchSettings(
    timeout_seconds=1,
    max_timeout_seconds=1,
    overdue_seconds=0.5,
    backoff_initial_seconds=0.05,
    backoff_max_seconds=0.2,
)
WATCHES = r"/apis/storage\.k8s\.io/v1/storageclasses\?.*watch=true"


@pytest.fixture
async def server() -> AsyncIterator[ApiServer]:
    emulator = ApiServer(controllers=ControllerSettings.none(), bookmark_interval_seconds=0.2)
    await emulator.start()
    emulator.faults.suppress_bookmarks()
    yield emulator
    await emulator.stop()


@pytest.fixture
def warnings(caplog: pytest.LogCaptureFixture) -> Callable[[], list[str]]:
    caplog.set_level(logging.DEBUG, logger="volsched.watch")

    def logged() -> list[str]:
        return [
            r.getMessage()
            for r in caplog.records
            if r.name == "volsched.watch" and r.levelno >= logging.WARNING
        ]

    return logged


def watcher(
    client: KubeClient, settings: WatchSettings = SHORT
) -> tuple[KindWatcher, ClusterCache]:
    cluster = ClusterCache()
    ingest = Ingest(cluster, None, "volsched")
    return KindWatcher("StorageClass", client, ingest, None, settings), cluster


@contextlib.asynccontextmanager
async def running(watching: KindWatcher) -> AsyncIterator[None]:
    task = asyncio.create_task(watching.run())
    try:
        await asyncio.wait_for(watching.state.synced_event.wait(), 5)
        yield
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


def watches_opened(server: ApiServer) -> int:
    return len(server.faults.requests("GET", WATCHES))


async def test_a_quiet_kind_without_bookmarks_is_renewed_without_a_warning(
    server: ApiServer, client: KubeClient, warnings: Callable[[], list[str]]
) -> None:
    watching, cluster = watcher(client)
    async with running(watching):
        # Nobody writes StorageClasses and no bookmark comes: each 1 s watch is silent
        # from start to end, and ended by the server.
        await asyncio.sleep(3.6)
        assert watches_opened(server) >= 3
        assert warnings() == []
        assert watching.state.restarts == 0
        # The renewed watch is alive: a class created now arrives.
        server.load([storage_class("late")])
        await eventually(lambda: "late" in cluster.storage_classes, what="the class delivered")
    assert warnings() == []


async def test_each_watch_asks_for_a_timeout_between_the_shortest_and_the_longest(
    server: ApiServer, client: KubeClient
) -> None:
    """client-go's reflector asks for 5 to 10 minutes at random, so the watches of many
    kinds and clients do not all end together; so do the defaults here."""
    defaults = WatchSettings()
    assert (defaults.timeout_seconds, defaults.max_timeout_seconds) == (300, 600)
    watching, _ = watcher(client, defaults)
    watching.state.synced = True
    asked = {watching.next_timeout_seconds() for _ in range(200)}
    assert min(asked) >= 300 and max(asked) <= 600 and len(asked) > 50
    # Until a resumed kind has caught up, its watches stay short (see test_watch_catch_up).
    watching.state.synced = False
    assert watching.next_timeout_seconds() == 3


async def break_by_reset(server: ApiServer) -> None:
    server.faults.cut_watches(abrupt=True)


async def break_by_stall(server: ApiServer) -> None:
    server.faults.stall_watches(1.6, past_timeout=True)


async def break_by_errors(server: ApiServer) -> None:
    server.faults.fail_next("GET", WATCHES, 500, times=3)
    server.faults.cut_watches()


async def break_by_ending_at_once(server: ApiServer) -> None:
    # Bookmarks are off: a stream cut right after it opened had nothing in it.
    server.faults.cut_watches()


@pytest.mark.parametrize(
    ("breaking", "expected"),
    [
        pytest.param(
            break_by_reset, "StorageClass watch failed: 0: watch StorageClass:", id="reset"
        ),
        pytest.param(
            break_by_stall,
            "StorageClass watch failed: 0: watch StorageClass: still open 0.5s after its "
            "timeoutSeconds (1s); the stream had stalled",
            id="stalled with the connection open",
        ),
        pytest.param(
            break_by_errors,
            "StorageClass watch failed: 500: injected failure (500)",
            id="errors",
        ),
        pytest.param(
            break_by_ending_at_once,
            "StorageClass watch failed: 0: watch StorageClass: ended by the server after",
            id="ended at once",
        ),
    ],
)
async def test_a_broken_watch_still_warns_and_recovers(
    server: ApiServer,
    client: KubeClient,
    warnings: Callable[[], list[str]],
    breaking: Callable[[ApiServer], Any],
    expected: str,
) -> None:
    watching, cluster = watcher(client)
    async with running(watching):
        await eventually(lambda: server.store.subscriptions(), what="a watch open")
        await breaking(server)
        await eventually(
            lambda: any(line.startswith(expected) for line in warnings()),
            timeout=5,
            what=f"a warning starting {expected!r} (got {warnings()})",
        )
        assert watching.state.restarts >= 1
        server.load([storage_class("after")])
        await eventually(lambda: "after" in cluster.storage_classes, what="recovered", timeout=5)
    if breaking is break_by_errors:
        assert sum(line.startswith(expected) for line in warnings()) == 3


async def test_the_watch_connection_has_tcp_keepalive(
    server: ApiServer, client: KubeClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A peer that is gone (a host down, a network cut) answers nothing, not even the end
    of the stream: the kernel's keepalive probes notice it in about 45 s."""
    sockets: list[Any] = []

    def recording(sock: Any) -> bool:
        sockets.append(sock)
        return keep_alive(sock)

    monkeypatch.setattr(client_module, "keep_alive", recording)
    watching, _ = watcher(client)
    async with running(watching):
        await eventually(lambda: sockets, what="a watch opened")
        sock = sockets[0]
        assert sock.getpeername()[1] == server.port
        assert sock.getsockopt(socket.SOL_SOCKET, socket.SO_KEEPALIVE) == 1
        if hasattr(socket, "TCP_KEEPIDLE"):
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPIDLE) == 30
            assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_KEEPCNT) == 3


def test_keepalive_on_something_that_is_not_a_socket_is_refused_quietly() -> None:
    assert keep_alive(None) is False
