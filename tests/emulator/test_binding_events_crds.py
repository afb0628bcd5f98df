"""pods/binding, event validation, and CustomResourceDefinitions serving their resources."""

from __future__ import annotations

from tests.emulator.support import Api, crd, pod
from volsched.emulator import ApiServer

PODS = "/api/v1/namespaces/default/pods"


def binding(name: str, node: str) -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Binding",
        "metadata": {"name": name},
        "target": {"kind": "Node", "name": node},
    }


async def test_binding_answers_201_status_and_sets_node_name(api: Api) -> None:
    await api.ok("POST", PODS, pod("p1"))
    status, answer = await api.post(f"{PODS}/p1/binding", binding("p1", "n1"))
    assert status == 201
    assert answer == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success",
        "code": 201,
    }
    _, bound = await api.get(f"{PODS}/p1")
    assert bound["spec"]["nodeName"] == "n1"
    scheduled = [c for c in bound["status"]["conditions"] if c["type"] == "PodScheduled"]
    assert scheduled[0]["status"] == "True"


async def test_rebinding_is_409_and_missing_pod_is_404(api: Api) -> None:
    await api.ok("POST", PODS, pod("p1"))
    await api.ok("POST", f"{PODS}/p1/binding", binding("p1", "n1"))
    status, error = await api.post(f"{PODS}/p1/binding", binding("p1", "n2"))
    assert status == 409 and error["reason"] == "Conflict"
    assert 'pod p1 is already assigned to node "n1"' in error["message"]
    status, error = await api.post(f"{PODS}/ghost/binding", binding("ghost", "n1"))
    assert status == 404 and error["message"] == 'pods "ghost" not found'


async def test_binding_through_the_bindings_collection(api: Api) -> None:
    await api.ok("POST", PODS, pod("p1"))
    status, answer = await api.post("/api/v1/namespaces/default/bindings", binding("p1", "n1"))
    assert status == 201 and answer["status"] == "Success"
    status, error = await api.post(f"{PODS}/p1/binding", binding("other", "n1"))
    assert status == 400 and error["message"] == "name in URL does not match name in Binding object"


CORE_EVENTS = "/api/v1/namespaces/default/events"
NEW_EVENTS = "/apis/events.k8s.io/v1/namespaces/default/events"


def new_event(**overrides: object) -> dict[str, object]:
    body: dict[str, object] = {
        "metadata": {"generateName": "p1-"},
        "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "volsched",
        "reportingInstance": "volsched-0",
        "action": "Scheduling",
        "reason": "Scheduled",
        "type": "Normal",
        "note": "Successfully assigned default/p1 to n1",
        "regarding": {"kind": "Pod", "namespace": "default", "name": "p1"},
    }
    body.update(overrides)
    return body


async def test_core_events_accept_a_minimal_body(api: Api) -> None:
    status, created = await api.post(
        CORE_EVENTS, {"metadata": {"name": "p1.17a"}, "reason": "Scheduled", "message": "ok"}
    )
    assert status == 201 and created["kind"] == "Event"
    status, _ = await api.post(CORE_EVENTS, {"metadata": {"generateName": "p1."}, "message": "ok"})
    assert status == 201


async def test_events_k8s_io_requires_its_fields(api: Api) -> None:
    status, created = await api.post(NEW_EVENTS, new_event())
    assert status == 201 and created["metadata"]["name"].startswith("p1-")
    for field in ("eventTime", "reportingController", "reportingInstance", "action"):
        body = new_event()
        del body[field]
        status, error = await api.post(NEW_EVENTS, body)
        assert status == 422, field
        assert error["reason"] == "Invalid"
        assert f"{field}: Required value" in error["message"]
        assert error["message"].startswith('Event.events.k8s.io "')


async def test_events_k8s_io_rejects_a_generate_name_ending_in_a_dot(api: Api) -> None:
    status, error = await api.post(NEW_EVENTS, new_event(metadata={"generateName": "p1."}))
    assert status == 422
    assert 'metadata.generateName: Invalid value: "p1."' in error["message"]


async def test_events_k8s_io_event_time_needs_microseconds(api: Api) -> None:
    status, error = await api.post(NEW_EVENTS, new_event(eventTime="2026-01-01T00:00:00Z"))
    assert status == 400 and error["reason"] == "BadRequest"
    status, _ = await api.post(NEW_EVENTS, new_event(eventTime="2026-01-01T00:00:00.123456+00:00"))
    assert status == 201


async def test_events_k8s_io_update_may_change_only_the_series(api: Api) -> None:
    """As upstream's ValidateEventUpdate: a recorder patches the series of an event it
    saw again; what happened, to what, said by whom, stays as first recorded."""
    status, created = await api.post(NEW_EVENTS, new_event())
    assert status == 201
    path = f"{NEW_EVENTS}/{created['metadata']['name']}"
    series = {"series": {"count": 2, "lastObservedTime": "2026-01-01T00:01:00.000000Z"}}
    status, patched = await api.patch(path, series, "application/strategic-merge-patch+json")
    assert status == 200 and patched["series"] == series["series"]
    for change in ({"note": "another"}, {"reason": "Other"}, {"regarding": {"name": "p2"}}):
        status, error = await api.patch(path, change, "application/merge-patch+json")
        assert status == 422, change
        assert f"{next(iter(change))}: Invalid value" in error["message"]
        assert "field is immutable" in error["message"]
    # A series counts repeats: at least two, and when the last one was seen.
    status, error = await api.post(NEW_EVENTS, new_event(series={"count": 1}))
    assert status == 422
    assert "series.count: Invalid value" in error["message"]
    assert "series.lastObservedTime: Required value" in error["message"]


async def test_events_k8s_io_events_are_listed_and_watched_with_their_series(
    api: Api,
) -> None:
    watch = await api.watch(NEW_EVENTS, resourceVersion="0")
    try:
        created = await api.ok("POST", NEW_EVENTS, new_event())
        path = f"{NEW_EVENTS}/{created['metadata']['name']}"
        series = {"count": 2, "lastObservedTime": "2026-01-01T00:01:00.000000Z"}
        await api.patch(path, {"series": series}, "application/strategic-merge-patch+json")
        seen = [await watch.next() for _ in range(2)]
        assert [e["type"] for e in seen] == ["ADDED", "MODIFIED"]
        assert seen[0]["object"]["apiVersion"] == "events.k8s.io/v1"
        assert "series" not in seen[0]["object"] and seen[1]["object"]["series"] == series
    finally:
        watch.close()
    _, listed = await api.get(NEW_EVENTS, fieldSelector="regarding.name=p1,reason=Scheduled")
    assert [e["series"] for e in listed["items"]] == [series]


async def test_crd_serves_its_resource_until_deleted(api: Api) -> None:
    path = "/apis/volsched.io/v1alpha1/storagenodes"
    assert (await api.get(path))[0] == 404
    status, created = await api.post(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions",
        crd("StorageNode", "storagenodes"),
    )
    assert status == 201
    conditions = {c["type"]: c["status"] for c in created["status"]["conditions"]}
    assert conditions["Established"] == "True"
    status, node = await api.post(
        path,
        {
            "apiVersion": "volsched.io/v1alpha1",
            "kind": "StorageNode",
            "metadata": {"name": "n1"},
            "spec": {"disks": {}},
            "status": {"ready": True},
        },
    )
    assert status == 201
    assert "status" not in node  # a status subresource: status is not taken on create
    _, listing = await api.get(path)
    assert listing["kind"] == "StorageNodeList"
    assert listing["items"][0]["kind"] == "StorageNode"  # custom resources keep kind in lists
    updated = await api.ok("PUT", f"{path}/n1/status", {**node, "status": {"ready": True}})
    assert updated["status"] == {"ready": True}
    _, groups = await api.get("/apis")
    assert "volsched.io" in {g["name"] for g in groups["groups"]}

    watch = await api.watch(path)
    await api.delete(
        "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/storagenodes.volsched.io"
    )
    events = await watch.until_eof()
    assert [e["type"] for e in events] == ["ADDED", "DELETED"]
    assert (await api.get(path))[0] == 404
    assert (await api.get(f"{path}/n1"))[0] == 404


async def test_namespaced_crd(api: Api, server: ApiServer) -> None:
    server.load(
        [
            crd(
                "Widget",
                "widgets",
                group="example.com",
                version="v1",
                scope="Namespaced",
                status_subresource=False,
            )
        ]
    )
    path = "/apis/example.com/v1/namespaces/default/widgets"
    created = await api.ok(
        "POST", path, {"metadata": {"name": "w1"}, "spec": {"size": 1}, "status": {"ok": True}}
    )
    assert created["apiVersion"] == "example.com/v1" and created["status"] == {"ok": True}
    _, everywhere = await api.get("/apis/example.com/v1/widgets")
    assert [w["metadata"]["name"] for w in everywhere["items"]] == ["w1"]
    assert (await api.get("/apis/example.com/v1/widgets/w1"))[0] == 404


async def test_invalid_crd_is_422(api: Api) -> None:
    body = crd("Thing", "things")
    body["metadata"] = {"name": "wrong.name"}
    status, error = await api.post("/apis/apiextensions.k8s.io/v1/customresourcedefinitions", body)
    assert status == 422 and 'must be spec.names.plural+"."+spec.group' in error["message"]


async def test_a_gated_pod_cannot_be_bound_and_is_marked_at_creation(api: Api) -> None:
    gated = pod("p1")
    gated["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    created = await api.ok("POST", PODS, gated)
    (condition,) = created["status"]["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "PodScheduled",
        "False",
        "SchedulingGated",
    )
    assert condition["message"] == "Scheduling is blocked due to non-empty scheduling gates"
    status, error = await api.post(f"{PODS}/p1/binding", binding("p1", "n1"))
    assert status == 409 and error["reason"] == "Conflict"
    assert error["message"] == (
        'Operation cannot be fulfilled on pods/binding "p1": '
        "pod p1 has non-empty .spec.schedulingGates"
    )
    # Gates may only be removed; then the pod binds.
    _, current = await api.get(f"{PODS}/p1")
    current["spec"]["schedulingGates"].append({"name": "example.com/another"})
    status, error = await api.request("PUT", f"{PODS}/p1", current)
    assert status == 422 and "only deletion is allowed" in error["message"]
    current["spec"]["schedulingGates"] = []
    await api.ok("PUT", f"{PODS}/p1", current)
    await api.ok("POST", f"{PODS}/p1/binding", binding("p1", "n1"))


async def test_a_gated_pod_cannot_be_created_on_a_node(api: Api) -> None:
    placed = pod("p1")
    placed["spec"]["schedulingGates"] = [{"name": "example.com/wait"}]
    placed["spec"]["nodeName"] = "n1"
    status, error = await api.post(PODS, placed)
    assert status == 422
    assert (
        "spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"
        in (error["message"])
    )
