"""Fault injection: cut and stalled watches, bookmarks frozen or suppressed, compaction,
injected failures and delays, the request log."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from tests.emulator.support import Api, eventually, pod, pv
from volsched.emulator import ApiServer, RequestRecord

PODS = "/api/v1/namespaces/default/pods"
PVS = "/api/v1/persistentvolumes"


async def test_cut_watches_ends_every_stream(api: Api, server: ApiServer) -> None:
    first = await api.watch(PODS)
    second = await api.watch("/api/v1/nodes", allowWatchBookmarks="true")
    await eventually(lambda: len(server.store.subscriptions()) == 2)
    assert server.faults.cut_watches() == 2
    assert await first.until_eof() == []
    assert all(e["type"] == "BOOKMARK" for e in await second.until_eof())
    await eventually(lambda: not server.store.subscriptions())


async def test_abrupt_cut_breaks_the_connection(api: Api, server: ApiServer) -> None:
    watch = await api.watch(PODS)
    await eventually(lambda: server.store.subscriptions())
    server.faults.cut_watches(abrupt=True)
    with pytest.raises(aiohttp.ClientPayloadError):
        await watch.until_eof()
    watch.close()


async def test_stalled_watches_send_nothing_then_catch_up(api: Api, server: ApiServer) -> None:
    watch = await api.watch(PODS, allowWatchBookmarks="true")
    try:
        await watch.next(1.0)  # a bookmark: the stream is live
        server.faults.stall_watches(0.4)
        await api.ok("POST", PODS, pod("p1"))
        assert await watch.silent_for(0.3)
        event = await watch.next_change(1.0)
        assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "p1")
    finally:
        watch.close()


async def test_a_stall_ends_with_the_timeout_unless_it_outlasts_it(
    api: Api, server: ApiServer
) -> None:
    """A stall is a busy server: a stream whose timeoutSeconds passes still ends then. A
    stall past the timeout is a server that stopped serving its streams but keeps their
    connections open: nothing, not even the end, until it is over."""
    server.faults.stall_watches(5)
    ends = await api.watch(PODS, timeoutSeconds="0.3")
    try:
        assert await ends.until_eof(1.0) == []
    finally:
        ends.close()
    server.faults.stall_watches(1.0, past_timeout=True)
    hangs = await api.watch(PODS, timeoutSeconds="0.3")
    try:
        assert await hangs.silent_for(0.6)
        assert await hangs.until_eof(1.0) == []
    finally:
        hangs.close()


async def test_suppressed_bookmarks_are_never_sent(api: Api, server: ApiServer) -> None:
    """A resource nobody writes, on a server whose etcd reports no progress: no bookmark,
    neither the regular ones nor the one before the timeout; events still flow."""
    server.faults.suppress_bookmarks()
    watch = await api.watch(PODS, allowWatchBookmarks="true", timeoutSeconds="2.5")
    try:
        assert await watch.silent_for(0.7)
        await api.ok("POST", PODS, pod("p1"))
        assert (await watch.next(1.0))["type"] == "ADDED"
        assert await watch.until_eof(3.0) == []
    finally:
        watch.close()
    server.faults.reset()
    again = await api.watch(
        PODS, allowWatchBookmarks="true", resourceVersion=str(server.store.revision)
    )
    try:
        assert (await again.next(1.0))["type"] == "BOOKMARK"
    finally:
        again.close()


async def test_delay_next_holds_matching_requests(api: Api, server: ApiServer) -> None:
    await api.ok("POST", PVS, pv("pv-1"))
    server.faults.delay_next("GET", r"/persistentvolumes/pv-1$", 0.5, times=1)
    loop = asyncio.get_running_loop()
    started = loop.time()
    assert (await api.get(f"{PVS}/pv-1"))[0] == 200
    assert loop.time() - started >= 0.5
    started = loop.time()
    assert (await api.get(f"{PVS}/pv-1"))[0] == 200
    assert loop.time() - started < 0.4


async def test_frozen_bookmarks_carry_the_revision_of_the_freeze(
    api: Api, server: ApiServer
) -> None:
    """A watch cache nobody has asked to catch up: its bookmarks stay where it was, and a
    watcher that started at or after that point hears none."""
    before = await api.ok("POST", PODS, pod("p1"))
    await api.ok("POST", PODS, pod("p2"))
    server.faults.freeze_bookmarks()
    frozen = str(server.store.revision)
    await api.ok("POST", PVS, pv("pv-1"))
    assert int(frozen) < server.store.revision
    behind = await api.watch(
        "/api/v1/nodes",
        resourceVersion=before["metadata"]["resourceVersion"],
        allowWatchBookmarks="true",
    )
    level = await api.watch("/api/v1/nodes", resourceVersion=frozen, allowWatchBookmarks="true")
    try:
        event = await behind.next(1.0)
        assert (event["type"], event["object"]["metadata"]["resourceVersion"]) == (
            "BOOKMARK",
            frozen,
        )
        assert await level.silent_for(0.4)
        server.faults.reset()
        event = await level.next(1.0)
        assert event["object"]["metadata"]["resourceVersion"] == str(server.store.revision)
    finally:
        behind.close()
        level.close()


async def test_compact_makes_the_next_resume_expire(api: Api, server: ApiServer) -> None:
    created = await api.ok("POST", PODS, pod("p1"))
    await api.ok("POST", PODS, pod("p2"))
    server.faults.compact()
    watch = await api.watch(PODS, resourceVersion=created["metadata"]["resourceVersion"])
    [event] = await watch.until_eof()
    assert event["type"] == "ERROR" and event["object"]["code"] == 410


async def test_fail_next_answers_matching_requests_with_a_status(
    api: Api, server: ApiServer
) -> None:
    created = await api.ok("POST", PVS, pv("pv-1"))
    server.faults.fail_next("PUT", r"/persistentvolumes/pv-1$", 409, times=2)
    for _ in range(2):
        status, error = await api.put(f"{PVS}/pv-1", created)
        assert status == 409
        assert error["reason"] == "Conflict"
        assert error["message"].startswith(
            'Operation cannot be fulfilled on persistentvolumes "pv-1"'
        )
    assert (await api.put(f"{PVS}/pv-1", created))[0] == 200
    # Other methods and paths are untouched; a message can be given.
    server.faults.fail_next("get", r"/nodes", 503, message="etcd is sad")
    assert (await api.get(f"{PVS}/pv-1"))[0] == 200
    status, error = await api.get("/api/v1/nodes")
    assert (status, error["reason"], error["message"]) == (503, "ServiceUnavailable", "etcd is sad")
    assert server.faults.pending_failures() == 0


async def test_request_log_records_what_the_client_did(api: Api, server: ApiServer) -> None:
    server.faults.reset()
    await api.post(PVS, pv("pv-1"))
    await api.get(f"{PVS}/missing")
    watch = await api.watch(PODS, resourceVersion="0")
    try:
        # A watch is logged as soon as its stream opens.
        await eventually(lambda: server.faults.requests("GET", "watch=true"))
        assert server.faults.request_log[:2] == [
            RequestRecord("POST", PVS, 201),
            RequestRecord("GET", f"{PVS}/missing", 404),
        ]
        [logged] = server.faults.requests("GET", "watch=true")
        assert logged.path == PODS and logged.status == 200 and "resourceVersion=0" in logged.query
    finally:
        watch.close()


async def test_stop_closes_open_watches() -> None:
    server = ApiServer()
    await server.start()
    async with aiohttp.ClientSession(server.url) as session:
        watch = await Api(session).watch(PODS)
        await eventually(lambda: server.store.subscriptions())
        await server.stop()
        assert await watch.until_eof() == []
    await asyncio.sleep(0)


async def test_garble_serves_a_placeholder_as_other_bytes(api: Api, server: ApiServer) -> None:
    """What a strict encoder cannot write (here a number of 400 digits) is served in
    lists and watch events in place of a placeholder value."""
    watch = await api.watch(PODS)
    await eventually(lambda: server.store.subscriptions())
    server.faults.garble("garbled", b"1" + b"0" * 400)
    created = pod("p")
    created["metadata"]["labels"] = {"hostile": "garbled"}
    await api.ok("POST", PODS, created)
    line = await watch.response.content.readline()
    assert b'"hostile":1' + b"0" * 400 + b"}" in line
    async with api.session.get(PODS) as listed:
        assert b'"hostile":1' + b"0" * 400 + b"}" in await listed.read()
    server.faults.reset()
    async with api.session.get(PODS) as listed:
        assert b'"hostile":"garbled"' in await listed.read()
    watch.close()
