"""get / create / update / patch / delete, with the status codes and Status bodies of a
real API server."""

from __future__ import annotations

import yaml

from tests.emulator.support import Api, node, pod, pv, pvc
from volsched.emulator import ApiServer

PVS = "/api/v1/persistentvolumes"
PODS = "/api/v1/namespaces/default/pods"


async def test_create_assigns_identity_and_get_returns_it(api: Api) -> None:
    status, created = await api.post(PVS, pv("pv-1"))
    assert status == 201
    meta = created["metadata"]
    assert meta["uid"] and meta["creationTimestamp"].endswith("Z")
    assert int(meta["resourceVersion"]) > 0
    # A client's new PV is Pending until the PV controller makes it Available.
    assert created["status"] == {"phase": "Pending"}
    assert created["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    status, got = await api.get(f"{PVS}/pv-1")
    assert status == 200 and got == created


async def test_duplicate_create_is_409_already_exists(api: Api) -> None:
    await api.ok("POST", PVS, pv("pv-1"))
    status, error = await api.post(PVS, pv("pv-1"))
    assert status == 409
    assert error["kind"] == "Status" and error["reason"] == "AlreadyExists"
    assert error["message"] == 'persistentvolumes "pv-1" already exists'


async def test_missing_object_is_404_status(api: Api) -> None:
    status, error = await api.get(f"{PVS}/nope")
    assert status == 404
    assert error == {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Failure",
        "message": 'persistentvolumes "nope" not found',
        "reason": "NotFound",
        "details": {"name": "nope", "kind": "persistentvolumes"},
        "code": 404,
    }
    status, error = await api.get("/apis/storage.k8s.io/v1/storageclasses/nope")
    assert error["message"] == 'storageclasses.storage.k8s.io "nope" not found'


async def test_create_in_a_missing_namespace_is_404(api: Api, server: ApiServer) -> None:
    status, error = await api.post("/api/v1/namespaces/team-a/pods", pod("p", "team-a"))
    assert status == 404 and error["message"] == 'namespaces "team-a" not found'
    server.ensure_namespace("team-a")
    status, _ = await api.post("/api/v1/namespaces/team-a/pods", pod("p", "team-a"))
    assert status == 201


async def test_stale_put_is_409_conflict_and_unconditional_put_wins(api: Api) -> None:
    created = await api.ok("POST", PVS, pv("pv-1"))
    first = await api.ok(
        "PUT", f"{PVS}/pv-1", {**created, "metadata": {**created["metadata"], "labels": {"a": "1"}}}
    )
    assert int(first["metadata"]["resourceVersion"]) > int(created["metadata"]["resourceVersion"])
    status, error = await api.put(
        f"{PVS}/pv-1", {**created, "metadata": {**created["metadata"], "labels": {"a": "2"}}}
    )
    assert status == 409
    assert error["reason"] == "Conflict"
    assert error["message"] == (
        'Operation cannot be fulfilled on persistentvolumes "pv-1": the object has been modified; '
        "please apply your changes to the latest version and try again"
    )
    unconditional = {**created, "metadata": {"name": "pv-1", "labels": {"a": "3"}}}
    updated = await api.ok("PUT", f"{PVS}/pv-1", unconditional)
    assert updated["metadata"]["labels"] == {"a": "3"}
    assert updated["metadata"]["uid"] == created["metadata"]["uid"]


async def test_noop_update_keeps_the_resource_version(api: Api) -> None:
    created = await api.ok("POST", PVS, pv("pv-1"))
    again = await api.ok("PUT", f"{PVS}/pv-1", created)
    assert again["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


async def test_put_to_the_main_resource_ignores_status(api: Api) -> None:
    created = await api.ok("POST", PVS, pv("pv-1"))
    updated = await api.ok("PUT", f"{PVS}/pv-1", {**created, "status": {"phase": "Bound"}})
    assert updated["status"] == {"phase": "Pending"}


async def test_status_subresource_changes_only_status(api: Api) -> None:
    created = await api.ok("POST", PVS, pv("pv-1"))
    body = {
        **created,
        "spec": {**created["spec"], "storageClassName": "other"},
        "status": {"phase": "Available"},
    }
    updated = await api.ok("PUT", f"{PVS}/pv-1/status", body)
    assert updated["status"] == {"phase": "Available"}
    assert updated["spec"]["storageClassName"] == "local"
    status, answer = await api.patch(
        f"{PVS}/pv-1/status", {"status": {"phase": "Released"}, "spec": {"storageClassName": "x"}}
    )
    assert status == 200
    assert answer["status"]["phase"] == "Released" and answer["spec"]["storageClassName"] == "local"
    status, stale = await api.put(f"{PVS}/pv-1/status", created)
    assert status == 409 and stale["reason"] == "Conflict"


async def test_merge_patch_merges_maps_and_null_deletes(api: Api) -> None:
    body = pv("pv-1", labels={"keep": "1", "drop": "2"})
    await api.ok("POST", PVS, body)
    status, patched = await api.patch(
        f"{PVS}/pv-1",
        {
            "metadata": {"labels": {"drop": None, "new": "3"}},
            "spec": {"capacity": {"storage": "20Gi"}},
        },
    )
    assert status == 200
    assert patched["metadata"]["labels"] == {"keep": "1", "new": "3"}
    assert patched["spec"]["capacity"] == {"storage": "20Gi"}
    assert patched["spec"]["local"] == {"path": "/mnt/pv-1"}
    # Strategic merge patch is accepted too (applied as a merge patch).
    status, _ = await api.patch(
        f"{PVS}/pv-1",
        {"metadata": {"annotations": {"a": "b"}}},
        "application/strategic-merge-patch+json",
    )
    assert status == 200


async def test_merge_patch_with_stale_resource_version_is_409(api: Api) -> None:
    created = await api.ok("POST", PVS, pv("pv-1"))
    await api.patch(f"{PVS}/pv-1", {"metadata": {"labels": {"a": "1"}}})
    status, error = await api.patch(
        f"{PVS}/pv-1",
        {
            "metadata": {
                "resourceVersion": created["metadata"]["resourceVersion"],
                "labels": {"a": "2"},
            }
        },
    )
    assert status == 409 and error["reason"] == "Conflict"


async def test_json_patch_and_unknown_patch_types(api: Api) -> None:
    await api.ok("POST", PVS, pv("pv-1"))
    ops = [
        {"op": "add", "path": "/metadata/labels/x", "value": "y"},
        {"op": "replace", "path": "/spec/storageClassName", "value": "fast"},
    ]
    status, patched = await api.patch(f"{PVS}/pv-1", ops, "application/json-patch+json")
    assert status == 200
    assert (
        patched["metadata"]["labels"] == {"x": "y"}
        and patched["spec"]["storageClassName"] == "fast"
    )
    status, error = await api.patch(f"{PVS}/pv-1", {"a": 1}, "application/apply-patch+yaml")
    assert status == 415 and error["reason"] == "UnsupportedMediaType"


async def test_invalid_json_is_400_status(api: Api) -> None:
    async with api.session.post(
        PVS, data=b"{not json", headers={"Content-Type": "application/json"}
    ) as response:
        assert response.status == 400
        error = await response.json()
    assert error["kind"] == "Status" and error["reason"] == "BadRequest"


async def test_delete_returns_the_object_and_finalizers_delay_it(api: Api) -> None:
    await api.ok("POST", PVS, pv("pv-1"))
    status, deleted = await api.delete(f"{PVS}/pv-1")
    assert status == 200 and deleted["metadata"]["name"] == "pv-1"
    assert (await api.get(f"{PVS}/pv-1"))[0] == 404
    assert (await api.delete(f"{PVS}/pv-1"))[0] == 404

    held = pv("pv-2")
    held["metadata"]["finalizers"] = ["kubernetes.io/pv-protection"]
    await api.ok("POST", PVS, held)
    status, marked = await api.delete(f"{PVS}/pv-2")
    assert status == 202 and marked["metadata"]["deletionTimestamp"]
    status, _ = await api.patch(f"{PVS}/pv-2", {"metadata": {"finalizers": None}})
    assert status == 200
    assert (await api.get(f"{PVS}/pv-2"))[0] == 404


async def test_delete_precondition_mismatch_is_409(api: Api) -> None:
    await api.ok("POST", PVS, pv("pv-1"))
    status, error = await api.delete(f"{PVS}/pv-1", {"preconditions": {"uid": "other"}})
    assert status == 409 and "Precondition failed: UID in precondition: other" in error["message"]


async def test_generate_name_works_for_any_kind(api: Api) -> None:
    created = await api.ok("POST", PODS, {**pod(""), "metadata": {"generateName": "worker-"}})
    name = created["metadata"]["name"]
    assert name.startswith("worker-") and len(name) == len("worker-") + 5
    status, error = await api.post(PVS, {"spec": {}})
    assert status == 422 and error["reason"] == "Invalid"
    assert "name or generateName is required" in error["message"]


async def test_names_are_validated(api: Api) -> None:
    status, error = await api.post("/api/v1/nodes", node("Bad_Name"))
    assert status == 422
    assert error["message"].startswith(
        'Node "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name"'
    )


async def test_pod_spec_is_immutable_except_through_binding(api: Api) -> None:
    created = await api.ok("POST", PODS, pod("p1"))
    status, error = await api.patch(f"{PODS}/p1", {"spec": {"nodeName": "n1"}})
    assert status == 422 and "pod updates may not change fields" in error["message"]
    # Images and labels may change.
    body = {**created, "metadata": {**created["metadata"], "labels": {"a": "b"}}}
    body["spec"] = {**created["spec"], "containers": [{"name": "main", "image": "busybox:2"}]}
    assert (await api.put(f"{PODS}/p1", body))[0] == 200


async def test_pods_get_defaults_and_priority(api: Api) -> None:
    await api.ok(
        "POST",
        "/apis/scheduling.k8s.io/v1/priorityclasses",
        {"metadata": {"name": "high"}, "value": 1000},
    )
    created = await api.ok("POST", PODS, pod("p1", priorityClassName="high"))
    assert created["spec"]["schedulerName"] == "default-scheduler"
    assert created["spec"]["priority"] == 1000
    status, error = await api.post(PODS, pod("p2", priorityClassName="missing"))
    assert status == 403 and "no PriorityClass with name missing was found" in error["message"]


async def test_claims_get_the_default_storage_class(api: Api) -> None:
    await api.ok(
        "POST",
        "/apis/storage.k8s.io/v1/storageclasses",
        {
            "metadata": {
                "name": "standard",
                "annotations": {"storageclass.kubernetes.io/is-default-class": "true"},
            },
            "provisioner": "x",
        },
    )
    created = await api.ok(
        "POST", "/api/v1/namespaces/default/persistentvolumeclaims", pvc("c1", storage_class=None)
    )
    assert created["spec"]["storageClassName"] == "standard"
    assert created["status"] == {"phase": "Pending"}
    empty = await api.ok(
        "POST", "/api/v1/namespaces/default/persistentvolumeclaims", pvc("c2", storage_class="")
    )
    assert empty["spec"]["storageClassName"] == ""


async def test_namespace_deletion_removes_its_objects(api: Api, server: ApiServer) -> None:
    server.ensure_namespace("team-a")
    await api.ok("POST", "/api/v1/namespaces/team-a/pods", pod("p", "team-a"))
    assert (await api.delete("/api/v1/namespaces/team-a"))[0] == 200
    assert server.get("Pod", "p", "team-a") is None


async def test_unknown_paths_and_methods(api: Api) -> None:
    assert (await api.get("/api/v1/widgets"))[0] == 404
    assert (await api.get("/apis/example.com/v1/widgets"))[0] == 404
    assert (await api.get("/api/v1/pods/p1"))[0] == 404
    assert (await api.post("/api/v1/pods", pod("p1")))[0] == 405
    assert (await api.get("/api/v1/persistentvolumes/x/binding"))[0] == 404


async def test_load_keeps_status_and_helpers_read_back(server: ApiServer) -> None:
    loaded = server.load([{**pv("pv-1"), "status": {"phase": "Available"}}, {**pod("p", "ns-x")}])
    assert loaded[0]["status"] == {"phase": "Available"}
    assert server.get("Namespace", "ns-x") is not None
    stored = server.get("PersistentVolume", "pv-1")
    assert stored is not None and stored["status"]["phase"] == "Available"
    assert [p["metadata"]["name"] for p in server.list("Pod")] == ["p"]


async def test_load_accepts_yaml_timestamps(server: ApiServer) -> None:
    [loaded] = server.load(
        yaml.safe_load_all(
            "kind: Node\napiVersion: v1\nmetadata: {name: n1, creationTimestamp: 2026-01-02T03:04:05Z}\n"
        )
    )
    assert loaded["metadata"]["creationTimestamp"] == "2026-01-02T03:04:05Z"


async def test_dry_run_is_refused_rather_than_persisted(api: Api, server: ApiServer) -> None:
    status, error = await api.request("POST", PVS, pv("pv-1"), params={"dryRun": "All"})
    assert status == 400 and "dryRun" in error["message"]
    assert server.get("PersistentVolume", "pv-1") is None
