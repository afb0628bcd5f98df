"""What a bare control plane refuses and what kube-controller-manager fixes: a pod needs
its namespace's ServiceAccount (the ServiceAccount controller makes ``default``), and a
new node is tainted not-ready until the node lifecycle controller sees it Ready."""

from __future__ import annotations

import aiohttp

from tests.emulator.support import Api, eventually, node, pod
from volsched.emulator import ApiServer, ControllerSettings

NAMESPACES = "/api/v1/namespaces"
NOT_READY = {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}


def namespace(name: str) -> dict[str, object]:
    return {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}


async def test_a_pod_needs_its_service_account(api: Api, server: ApiServer) -> None:
    # The emulator's own settings here are a bare control plane: no controllers.
    await api.ok("POST", NAMESPACES, namespace("team-b"))
    status, error = await api.post(f"{NAMESPACES}/team-b/pods", pod("p", "team-b"))
    assert status == 403
    assert error["reason"] == "Forbidden"
    assert error["message"] == (
        'pods "p" is forbidden: error looking up service account team-b/default: '
        'serviceaccount "default" not found'
    )
    account = {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "default"}}
    await api.ok("POST", f"{NAMESPACES}/team-b/serviceaccounts", account)
    created = await api.ok("POST", f"{NAMESPACES}/team-b/pods", pod("p", "team-b"))
    assert created["spec"]["serviceAccountName"] == "default"
    # A pod naming another account needs that one.
    status, error = await api.post(
        f"{NAMESPACES}/team-b/pods", pod("q", "team-b", serviceAccountName="builder")
    )
    assert status == 403 and 'serviceaccount "builder" not found' in error["message"]


async def test_namespaces_made_by_the_emulator_have_their_default_account(
    api: Api, server: ApiServer
) -> None:
    server.ensure_namespace("team-a")
    for name in ("default", "kube-system", "team-a"):
        assert server.get("ServiceAccount", "default", name) is not None, name
    await api.ok("POST", f"{NAMESPACES}/team-a/pods", pod("p", "team-a"))


async def test_a_new_node_is_tainted_not_ready(api: Api, server: ApiServer) -> None:
    created = await api.ok("POST", "/api/v1/nodes", node("n1"))
    assert created["spec"]["taints"] == [NOT_READY]
    # Given already, it is not added twice; other taints stay.
    dedicated = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    body = node("n2")
    body["spec"] = {"taints": [dedicated, dict(NOT_READY)]}
    created = await api.ok("POST", "/api/v1/nodes", body)
    assert created["spec"]["taints"] == [dedicated, NOT_READY]
    # Nothing lifts it on a bare control plane.
    assert server.get("Node", "n1")["spec"]["taints"] == [NOT_READY]  # type: ignore[index]


async def test_the_controller_manager_fixes_both() -> None:
    settings = ControllerSettings(
        pv_controller=False, provisioner=False, storage_agent=False, kubelet=False
    )
    async with (
        ApiServer(controllers=settings) as server,
        aiohttp.ClientSession(server.url) as session,
    ):
        api = Api(session)
        await api.ok("POST", NAMESPACES, namespace("team-c"))
        await eventually(lambda: server.get("ServiceAccount", "default", "team-c"), what="account")
        await api.ok("POST", f"{NAMESPACES}/team-c/pods", pod("p", "team-c"))

        await api.ok("POST", "/api/v1/nodes", node("ready"))
        await api.ok("POST", "/api/v1/nodes", node("booting", ready=False))

        def taints(name: str) -> object:
            found = server.get("Node", name)
            assert found is not None
            return found["spec"].get("taints")

        await eventually(lambda: taints("ready") == [], what="taint lifted")
        assert taints("booting") == [NOT_READY]
