"""The realistic mode: HTTPS with the emulator's own CA, and objects as kube-apiserver
returns them (every default, managedFields per writer), in lists and watch events alike."""

from __future__ import annotations

import functools
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml

from tests.emulator.support import Api, WatchReader
from volsched.daemon.kube.client import KubeClient
from volsched.emulator import ApiServer, ControllerSettings
from volsched.emulator.certificates import ServingCertificates, make_serving_certificates

Raw = dict[str, Any]
POD = {
    "apiVersion": "v1",
    "kind": "Pod",
    "metadata": {"name": "web", "labels": {"app": "web"}},
    "spec": {"containers": [{"name": "main", "image": "nginx:1.27"}]},
}
NODE = {
    "apiVersion": "v1",
    "kind": "Node",
    "metadata": {"name": "node-a"},
    "status": {
        "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True"}],
    },
}


@functools.cache
def certificates() -> ServingCertificates:
    """One CA for the module: RSA keys take a while to make."""
    return make_serving_certificates()


@pytest.fixture
async def realistic() -> AsyncIterator[ApiServer]:
    server = ApiServer(ControllerSettings.none(), realistic=True)
    server.certificates = certificates()
    await server.start()
    yield server
    await server.stop()


@pytest.fixture
async def secure_api(realistic: ApiServer) -> AsyncIterator[Api]:
    authority = realistic.certificate_authority
    assert authority is not None
    context = ssl.create_default_context(cadata=authority.decode())
    connector = aiohttp.TCPConnector(ssl=context)
    async with aiohttp.ClientSession(realistic.url, connector=connector) as session:
        yield Api(session)


def managers(obj: Raw) -> dict[tuple[str, str], Raw]:
    return {
        (entry["manager"], entry.get("subresource", "")): entry
        for entry in obj["metadata"]["managedFields"]
    }


async def test_it_serves_https_that_only_a_client_trusting_its_ca_accepts(
    realistic: ApiServer, tmp_path: Path
) -> None:
    assert realistic.url.startswith("https://127.0.0.1:")
    async with aiohttp.ClientSession() as session:
        with pytest.raises(aiohttp.ClientConnectorCertificateError):
            await session.get(realistic.url + "/api/v1/nodes")
    kubeconfig = realistic.write_kubeconfig(tmp_path / "kubeconfig")
    cluster = yaml.safe_load(kubeconfig.read_text())["clusters"][0]["cluster"]
    assert cluster["server"] == realistic.url
    assert "certificate-authority-data" in cluster
    client = await KubeClient.connect(str(kubeconfig))
    try:
        items, version = await client.list("Namespace")
    finally:
        await client.close()
    assert "default" in {item["metadata"]["name"] for item in items} and version


async def test_a_created_pod_has_the_defaults_and_its_writer_in_managed_fields(
    secure_api: Api,
) -> None:
    status, pod = await secure_api.request(
        "POST", "/api/v1/namespaces/default/pods", POD, params={"fieldManager": "kubectl-create"}
    )
    assert status == 201
    spec = pod["spec"]
    assert spec["restartPolicy"] == "Always"
    assert spec["terminationGracePeriodSeconds"] == 30
    assert spec["dnsPolicy"] == "ClusterFirst"
    assert spec["securityContext"] == {}
    assert spec["schedulerName"] == "default-scheduler"
    assert spec["enableServiceLinks"] is True
    assert spec["preemptionPolicy"] == "PreemptLowerPriority" and spec["priority"] == 0
    assert {(t["key"], t["effect"], t["tolerationSeconds"]) for t in spec["tolerations"]} == {
        ("node.kubernetes.io/not-ready", "NoExecute", 300),
        ("node.kubernetes.io/unreachable", "NoExecute", 300),
    }
    container = spec["containers"][0]
    assert container["terminationMessagePath"] == "/dev/termination-log"
    assert container["terminationMessagePolicy"] == "File"
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["resources"] == {}
    assert pod["metadata"]["uid"] and pod["metadata"]["creationTimestamp"]
    assert pod["metadata"]["generation"] == 1
    assert pod["status"]["qosClass"] == "BestEffort"
    entry = managers(pod)[("kubectl-create", "")]
    assert entry["operation"] == "Update" and entry["fieldsType"] == "FieldsV1"
    assert entry["apiVersion"] == "v1" and entry["time"]
    fields = entry["fieldsV1"]
    assert fields["f:metadata"]["f:labels"] == {".": {}, "f:app": {}}
    assert '"f:image"' in repr(fields["f:spec"]["f:containers"]).replace("'", '"')
    assert 'k:{"name":"main"}' in fields["f:spec"]["f:containers"]


async def test_watch_events_carry_the_same_full_objects(
    realistic: ApiServer, secure_api: Api
) -> None:
    listed = await secure_api.ok("GET", "/api/v1/namespaces/default/pods")
    reader: WatchReader = await secure_api.watch(
        "/api/v1/namespaces/default/pods", resourceVersion=listed["metadata"]["resourceVersion"]
    )
    try:
        created = await secure_api.ok("POST", "/api/v1/namespaces/default/pods", POD)
        event = await reader.next_change()
    finally:
        reader.close()
    assert event["type"] == "ADDED"
    assert event["object"] == created
    assert event["object"]["metadata"]["managedFields"]


async def test_an_update_without_managed_fields_keeps_them_and_status_writers_are_separate(
    secure_api: Api,
) -> None:
    await secure_api.ok("POST", "/api/v1/namespaces/default/pods", POD)
    status, patched = await secure_api.request(
        "PATCH",
        "/api/v1/namespaces/default/pods/web/status",
        {"status": {"phase": "Running"}},
        "application/merge-patch+json",
        params={"fieldManager": "kubelet"},
    )
    assert status == 200
    status_entry = managers(patched)[("kubelet", "status")]
    assert status_entry["fieldsV1"] == {"f:status": {"f:phase": {}}}
    body = dict(patched)
    body["metadata"] = {k: v for k, v in patched["metadata"].items() if k != "managedFields"}
    body["metadata"]["labels"] = {"app": "web", "tier": "front"}
    status, updated = await secure_api.request(
        "PUT", "/api/v1/namespaces/default/pods/web", body, params={"fieldManager": "editor"}
    )
    assert status == 200
    entries = managers(updated)
    assert ("kubelet", "status") in entries
    assert entries[("editor", "")]["fieldsV1"] == {"f:metadata": {"f:labels": {"f:tier": {}}}}


async def test_a_loaded_node_is_as_the_kubelet_registers_it(realistic: ApiServer) -> None:
    (node,) = realistic.load([NODE])
    status = node["status"]
    assert {c["type"] for c in status["conditions"]} == {
        "Ready",
        "MemoryPressure",
        "DiskPressure",
        "PIDPressure",
    }
    ready = next(c for c in status["conditions"] if c["type"] == "Ready")
    assert ready["status"] == "True" and ready["reason"] == "KubeletReady"
    assert ready["lastHeartbeatTime"]
    assert {a["type"] for a in status["addresses"]} == {"InternalIP", "Hostname"}
    assert status["daemonEndpoints"] == {"kubeletEndpoint": {"Port": 10250}}
    assert status["nodeInfo"]["kubeletVersion"].startswith("v1.36")
    assert status["images"] and status["images"][0]["sizeBytes"] > 0
    assert status["capacity"]["cpu"] == "4" and "ephemeral-storage" in status["allocatable"]
    assert set(managers(node)) == {("kubelet", ""), ("kubelet", "status")}


async def test_the_zero_cost_mode_stores_what_it_was_sent(server: ApiServer, api: Api) -> None:
    assert server.url.startswith("http://")
    pod = await api.ok("POST", "/api/v1/namespaces/default/pods", POD)
    assert "managedFields" not in pod["metadata"]
    assert "restartPolicy" not in pod["spec"] and "tolerations" not in pod["spec"]
