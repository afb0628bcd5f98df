"""list and watch: resourceVersions, resume, bookmarks, 410 Expired, selectors."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable

import aiohttp

from tests.emulator.support import Api, WatchReader, node, pod
from volsched.emulator import ApiServer, ControllerSettings

PODS = "/api/v1/namespaces/default/pods"


async def test_list_has_kind_and_current_resource_version(api: Api, server: ApiServer) -> None:
    await api.ok("POST", "/api/v1/nodes", node("n1"))
    await api.ok("POST", "/api/v1/nodes", node("n2"))
    status, listing = await api.get("/api/v1/nodes")
    assert status == 200
    assert listing["kind"] == "NodeList" and listing["apiVersion"] == "v1"
    assert listing["metadata"]["resourceVersion"] == str(server.store.revision)
    assert [n["metadata"]["name"] for n in listing["items"]] == ["n1", "n2"]
    # Items of built-in kinds carry no kind/apiVersion, as upstream serves them.
    assert "kind" not in listing["items"][0]


async def test_list_across_namespaces_and_pagination(api: Api, server: ApiServer) -> None:
    server.ensure_namespace("team-a")
    for name, namespace in (("a", "default"), ("b", "team-a"), ("c", "default")):
        await api.ok("POST", f"/api/v1/namespaces/{namespace}/pods", pod(name, namespace))
    _, everything = await api.get("/api/v1/pods")
    assert [p["metadata"]["name"] for p in everything["items"]] == ["a", "c", "b"]
    _, page = await api.get("/api/v1/pods", limit="2")
    assert len(page["items"]) == 2 and page["metadata"]["remainingItemCount"] == 1
    _, rest = await api.get("/api/v1/pods", limit="2", **{"continue": page["metadata"]["continue"]})
    assert [p["metadata"]["name"] for p in rest["items"]] == ["b"]
    assert "continue" not in rest["metadata"]


async def test_label_selectors(api: Api) -> None:
    for name, labels in (
        ("p1", {"app": "db", "tier": "a"}),
        ("p2", {"app": "web", "tier": "b"}),
        ("p3", {"app": "web"}),
    ):
        await api.ok("POST", PODS, pod(name, labels=labels))

    async def names(selector: str) -> list[str]:
        status, listing = await api.get(PODS, labelSelector=selector)
        assert status == 200, listing
        return [p["metadata"]["name"] for p in listing["items"]]

    assert await names("app=web") == ["p2", "p3"]
    assert await names("app==db") == ["p1"]
    assert await names("app!=web") == ["p1"]
    assert await names("tier in (a, b)") == ["p1", "p2"]
    assert await names("tier notin (a)") == ["p2", "p3"]
    assert await names("tier") == ["p1", "p2"]
    assert await names("!tier") == ["p3"]
    assert await names("app=web,tier") == ["p2"]
    status, error = await api.get(PODS, labelSelector="app in (")
    assert status == 400 and error["reason"] == "BadRequest"


async def test_field_selectors(api: Api, server: ApiServer) -> None:
    server.load(
        [
            pod("bound", nodeName="n1", schedulerName="volsched"),
            pod("free", schedulerName="volsched"),
        ]
    )
    server.load([{**pod("done", schedulerName="volsched"), "status": {"phase": "Succeeded"}}])

    async def names(selector: str, path: str = "/api/v1/pods") -> list[str]:
        status, listing = await api.get(path, fieldSelector=selector)
        assert status == 200, listing
        return [p["metadata"]["name"] for p in listing["items"]]

    assert await names("spec.nodeName=") == ["done", "free"]
    assert await names("spec.nodeName!=") == ["bound"]
    assert await names("spec.schedulerName=volsched,status.phase!=Succeeded") == ["bound", "free"]
    assert await names("metadata.name=free") == ["free"]
    assert await names("metadata.namespace=default") == ["bound", "done", "free"]
    status, error = await api.get("/api/v1/persistentvolumes", fieldSelector="spec.nodeName=x")
    assert status == 400 and error["message"] == "field label not supported: spec.nodeName"


async def test_watch_from_zero_sends_current_objects_then_live_events(api: Api) -> None:
    await api.ok("POST", PODS, pod("p1"))
    watch = await api.watch(PODS, resourceVersion="0")
    try:
        first = await watch.next()
        assert first["type"] == "ADDED" and first["object"]["metadata"]["name"] == "p1"
        assert first["object"]["kind"] == "Pod"
        await api.ok("POST", PODS, pod("p2"))
        await api.patch(f"{PODS}/p1", {"metadata": {"labels": {"x": "y"}}})
        await api.delete(f"{PODS}/p2")
        events = [await watch.next() for _ in range(3)]
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
            ("ADDED", "p2"),
            ("MODIFIED", "p1"),
            ("DELETED", "p2"),
        ]
    finally:
        watch.close()


async def test_watch_resumes_from_a_resource_version(api: Api) -> None:
    created = await api.ok("POST", PODS, pod("p1"))
    since = created["metadata"]["resourceVersion"]
    await api.ok("POST", PODS, pod("p2"))
    await api.ok("POST", "/api/v1/nodes", node("n1"))  # another resource: not replayed
    await api.delete(f"{PODS}/p1")
    watch = await api.watch("/api/v1/pods", resourceVersion=since)
    try:
        events = [await watch.next() for _ in range(2)]
        assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [
            ("ADDED", "p2"),
            ("DELETED", "p1"),
        ]
        assert int(events[1]["object"]["metadata"]["resourceVersion"]) > int(
            events[0]["object"]["metadata"]["resourceVersion"]
        )
        assert await watch.silent_for(0.05)
    finally:
        watch.close()


async def test_list_then_watch_from_its_version_misses_nothing(api: Api) -> None:
    await api.ok("POST", PODS, pod("p1"))
    _, listing = await api.get(PODS)
    await api.ok("POST", PODS, pod("p2"))
    watch = await api.watch(PODS, resourceVersion=listing["metadata"]["resourceVersion"])
    try:
        event = await watch.next()
        assert (event["type"], event["object"]["metadata"]["name"]) == ("ADDED", "p2")
    finally:
        watch.close()


async def test_bookmarks_carry_only_the_resource_version(api: Api, server: ApiServer) -> None:
    watch = await api.watch(PODS, resourceVersion="0", allowWatchBookmarks="true")
    try:
        event = await watch.next(1.0)
        assert event == {
            "type": "BOOKMARK",
            "object": {
                "kind": "Pod",
                "apiVersion": "v1",
                "metadata": {"resourceVersion": str(server.store.revision)},
            },
        }
    finally:
        watch.close()
    plain = await api.watch(PODS, resourceVersion="0")
    try:
        assert await plain.silent_for(0.3)
    finally:
        plain.close()


async def test_timeout_seconds_ends_the_stream(api: Api) -> None:
    loop = asyncio.get_running_loop()
    started = loop.time()
    watch = await api.watch(PODS, timeoutSeconds="0.2")
    assert await watch.until_eof() == []
    assert 0.15 < loop.time() - started < 1.5


async def test_too_old_resource_version_is_a_410_error_event(api: Api, server: ApiServer) -> None:
    created = await api.ok("POST", PODS, pod("p1"))
    await api.ok("POST", PODS, pod("p2"))
    server.faults.compact()
    since = created["metadata"]["resourceVersion"]
    watch = await api.watch(PODS, resourceVersion=since)
    events = await watch.until_eof()
    assert len(events) == 1
    error = events[0]
    assert error["type"] == "ERROR"
    assert error["object"]["kind"] == "Status"
    assert error["object"]["code"] == 410 and error["object"]["reason"] == "Expired"
    assert (
        error["object"]["message"] == f"too old resource version: {since} ({server.store.revision})"
    )
    # From the current version (a fresh list) the watch works again.
    fresh = await api.watch(PODS, resourceVersion=str(server.store.revision))
    try:
        assert await fresh.silent_for(0.05)
    finally:
        fresh.close()


async def test_history_window_expires_old_versions() -> None:
    server = ApiServer(history_limit=3)
    server.load([pod(f"p{i}") for i in range(5)])
    changes, subscription = server.store.subscribe(("", "pods"), server.store.revision - 3)
    assert len(changes) == 3
    server.store.unsubscribe(subscription)
    try:
        server.store.subscribe(("", "pods"), server.store.revision - 4)
    except Exception as error:
        assert "too old resource version" in str(error)
    else:
        raise AssertionError("expected Expired")


async def test_selectors_on_watch_turn_transitions_into_added_and_deleted(api: Api) -> None:
    await api.ok("POST", PODS, pod("p1", labels={"app": "web"}))
    watch = await api.watch(PODS, resourceVersion="0", labelSelector="app=web")
    try:
        assert (await watch.next())["type"] == "ADDED"
        await api.ok("POST", PODS, pod("other", labels={"app": "db"}))
        await api.patch(f"{PODS}/p1", {"metadata": {"labels": {"app": "db"}}})
        gone = await watch.next()
        assert gone["type"] == "DELETED"
        # The previous content, stamped with the change's resourceVersion.
        assert gone["object"]["metadata"]["labels"] == {"app": "web"}
        await api.patch(f"{PODS}/other", {"metadata": {"labels": {"app": "web"}}})
        back = await watch.next()
        assert (back["type"], back["object"]["metadata"]["name"]) == ("ADDED", "other")
    finally:
        watch.close()


async def test_namespaced_watch_sees_only_its_namespace(api: Api, server: ApiServer) -> None:
    server.ensure_namespace("team-a")
    watch = await api.watch(PODS)
    try:
        await api.ok("POST", "/api/v1/namespaces/team-a/pods", pod("x", "team-a"))
        await api.ok("POST", PODS, pod("y"))
        event = await watch.next()
        assert event["object"]["metadata"]["name"] == "y"
    finally:
        watch.close()


async def test_watch_spellings(api: Api) -> None:
    for spelling in ("1", "True", "true"):
        async with api.session.get(
            PODS, params={"watch": spelling, "timeoutSeconds": "0"}
        ) as response:
            assert response.status == 200
            assert await response.read() == b""


async def test_discovery(api: Api) -> None:
    _, versions = await api.get("/api")
    assert versions["versions"] == ["v1"]
    _, groups = await api.get("/apis")
    names = {g["name"] for g in groups["groups"]}
    assert {
        "storage.k8s.io",
        "apps",
        "coordination.k8s.io",
        "events.k8s.io",
        "apiextensions.k8s.io",
    } <= names
    _, core = await api.get("/api/v1")
    resources = {r["name"] for r in core["resources"]}
    assert {"pods", "pods/binding", "pods/status", "nodes", "persistentvolumes"} <= resources
    _, version = await api.get("/version")
    assert version["major"] == "1"


async def test_legacy_watch_paths(api: Api) -> None:
    await api.ok("POST", PODS, pod("p1"))
    await api.ok("POST", PODS, pod("p2"))
    async with api.session.get(
        "/api/v1/watch/namespaces/default/pods/p2", params={"timeoutSeconds": "0.1"}
    ) as response:
        assert response.status == 200
        lines = (await response.read()).splitlines()
    assert len(lines) == 1 and b'"name":"p2"' in lines[0]


async def test_a_bookmark_comes_two_seconds_before_the_deadline_when_that_is_sooner() -> None:
    """kube-apiserver bookmarks a watcher once a minute, or two seconds before its
    timeoutSeconds when that is sooner: a 3 s watch has its bookmark after about 1 s, a
    1 s watch has none, and a long watch waits for the interval."""
    emulator = ApiServer(controllers=ControllerSettings.none(), bookmark_interval_seconds=60)
    await emulator.start()
    loop = asyncio.get_running_loop()
    try:
        async with aiohttp.ClientSession(emulator.url) as session:
            api = Api(session)

            def lasting(seconds: int) -> Awaitable[WatchReader]:
                return api.watch(
                    PODS,
                    resourceVersion="0",
                    allowWatchBookmarks="true",
                    timeoutSeconds=str(seconds),
                )

            started = loop.time()
            short = await lasting(3)
            try:
                event = await short.next(2.5)
                assert event["type"] == "BOOKMARK"
                assert 0.8 < loop.time() - started < 1.8
                assert await short.until_eof(3.0) == []
            finally:
                short.close()
            brief = await lasting(1)
            try:
                assert await brief.until_eof(2.0) == []
            finally:
                brief.close()
            long = await lasting(300)
            try:
                assert await long.silent_for(1.5)
            finally:
                long.close()
    finally:
        await emulator.stop()
