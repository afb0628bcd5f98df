"""The PV controller, the provisioner, the storage agent and the kubelet."""

from __future__ import annotations

import asyncio

import aiohttp
import pytest

from tests.emulator.support import (
    VOLSCHED_CRDS,
    Api,
    Raw,
    eventually,
    node,
    pod,
    pv,
    pvc,
    storage_class,
)
from volsched.emulator import ApiServer, ControllerSettings

CLAIMS = "/api/v1/namespaces/default/persistentvolumeclaims"
PVS = "/api/v1/persistentvolumes"
FAST = ControllerSettings(
    pv_bind_delay_seconds=0.05, provision_delay_seconds=0.05, replica_sync_delay_seconds=0.05
)


@pytest.fixture
def settings() -> ControllerSettings:
    return FAST


def claim_of(server: ApiServer, name: str) -> Raw:
    found = server.get("PersistentVolumeClaim", name, "default")
    assert found is not None
    return found


def volume_of(server: ApiServer, name: str) -> Raw | None:
    return server.get("PersistentVolume", name)


def pv_phase(server: ApiServer, name: str) -> str | None:
    found = server.get("PersistentVolume", name)
    return None if found is None else found.get("status", {}).get("phase")


async def test_new_pv_becomes_available(api: Api, server: ApiServer) -> None:
    await api.ok("POST", PVS, pv("pv-1"))
    await eventually(lambda: pv_phase(server, "pv-1") == "Available")


async def test_prebound_pv_completes_the_binding_and_fills_the_uid(
    api: Api, server: ApiServer
) -> None:
    server.load([storage_class("local")])
    claim = await api.ok("POST", CLAIMS, pvc("c1", "5Gi"))
    await api.ok("POST", PVS, pv("pv-1", "10Gi"))
    await eventually(lambda: pv_phase(server, "pv-1") == "Available")
    # What a scheduler's prebind writes: a claimRef without uid.
    status, _ = await api.patch(
        f"{PVS}/pv-1", {"spec": {"claimRef": {"namespace": "default", "name": "c1"}}}
    )
    assert status == 200
    assert claim_of(server, "c1")["status"]["phase"] == "Pending"  # not before the delay

    bound = await eventually(
        lambda: claim_of(server, "c1")["status"].get("phase") == "Bound" and claim_of(server, "c1")
    )
    assert bound["spec"]["volumeName"] == "pv-1"
    assert bound["metadata"]["annotations"]["pv.kubernetes.io/bind-completed"] == "yes"
    assert bound["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    assert bound["status"]["capacity"] == {"storage": "10Gi"}
    volume = volume_of(server, "pv-1")
    assert volume is not None
    assert volume["status"]["phase"] == "Bound" and volume["status"]["lastPhaseTransitionTime"]
    assert volume["spec"]["claimRef"]["uid"] == claim["metadata"]["uid"]


async def test_immediate_claims_bind_to_the_smallest_matching_pv(
    api: Api, server: ApiServer
) -> None:
    server.load([storage_class("fast", mode="Immediate")])
    for name, size, klass in (
        ("big", "20Gi", "fast"),
        ("small", "5Gi", "fast"),
        ("tiny", "1Gi", "fast"),
        ("other", "4Gi", "slow"),
    ):
        await api.ok("POST", PVS, pv(name, size, klass))
    await api.ok("POST", CLAIMS, pvc("c1", "4Gi", "fast"))
    bound = await eventually(
        lambda: claim_of(server, "c1")["status"].get("phase") == "Bound" and claim_of(server, "c1")
    )
    assert bound["spec"]["volumeName"] == "small"
    small = volume_of(server, "small")
    assert (
        small is not None
        and small["metadata"]["annotations"]["pv.kubernetes.io/bound-by-controller"] == "yes"
    )
    # A claim with no class binds to a PV with no class, and a WaitForFirstConsumer
    # claim is left for the scheduler.
    await api.ok("POST", PVS, pv("classless", "1Gi", ""))
    await api.ok("POST", CLAIMS, pvc("c2", "1Gi", ""))
    await eventually(lambda: claim_of(server, "c2")["spec"].get("volumeName") == "classless")
    server.load([storage_class("wait")])
    await api.ok("POST", PVS, pv("waiting", "1Gi", "wait"))
    await api.ok("POST", CLAIMS, pvc("c3", "1Gi", "wait"))
    await eventually(lambda: pv_phase(server, "waiting") == "Available")
    assert (
        await api.ok("GET", f"{CLAIMS}/c3")
        and claim_of(server, "c3")["spec"].get("volumeName") is None
    )


async def test_deleting_a_bound_claim_releases_its_pv(api: Api, server: ApiServer) -> None:
    server.load([storage_class("fast", mode="Immediate")])
    await api.ok("POST", PVS, pv("pv-1", "1Gi", "fast"))
    await api.ok("POST", CLAIMS, pvc("c1", "1Gi", "fast"))
    await eventually(lambda: pv_phase(server, "pv-1") == "Bound")
    await api.delete(f"{CLAIMS}/c1")
    await eventually(lambda: pv_phase(server, "pv-1") == "Released")


async def test_provisioner_creates_a_local_pv_on_the_selected_node(
    api: Api, server: ApiServer
) -> None:
    server.load([storage_class("dynamic", provisioner="local.example.com")])
    claim = await api.ok("POST", CLAIMS, pvc("c1", "3Gi", "dynamic"))
    uid = claim["metadata"]["uid"]
    await api.patch(
        f"{CLAIMS}/c1", {"metadata": {"annotations": {"volume.kubernetes.io/selected-node": "n1"}}}
    )
    volume = await eventually(lambda: volume_of(server, f"pvc-{uid}"))
    spec = volume["spec"]
    assert spec["capacity"] == {"storage": "3Gi"}
    assert spec["storageClassName"] == "dynamic"
    assert spec["persistentVolumeReclaimPolicy"] == "Delete"
    assert spec["claimRef"]["uid"] == uid and spec["claimRef"]["name"] == "c1"
    assert spec["local"]["path"].endswith(f"pvc-{uid}")
    term = spec["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]
    assert term == {"key": "kubernetes.io/hostname", "operator": "In", "values": ["n1"]}
    bound = await eventually(
        lambda: claim_of(server, "c1")["status"].get("phase") == "Bound" and claim_of(server, "c1")
    )
    assert bound["spec"]["volumeName"] == f"pvc-{uid}"


async def test_provisioner_does_nothing_when_the_selected_node_is_withdrawn(
    api: Api, server: ApiServer
) -> None:
    server.load([storage_class("dynamic", provisioner="local.example.com")])
    claim = await api.ok(
        "POST",
        CLAIMS,
        pvc("c1", "1Gi", "dynamic", annotations={"volume.kubernetes.io/selected-node": "n1"}),
    )
    await api.patch(
        f"{CLAIMS}/c1", {"metadata": {"annotations": {"volume.kubernetes.io/selected-node": None}}}
    )
    await asyncio.sleep(0.2)
    assert volume_of(server, f"pvc-{claim['metadata']['uid']}") is None


async def test_no_provisioner_class_is_not_provisioned(api: Api, server: ApiServer) -> None:
    server.load([storage_class("local")])
    await api.ok(
        "POST",
        CLAIMS,
        pvc("c1", "1Gi", "local", annotations={"volume.kubernetes.io/selected-node": "n1"}),
    )
    await asyncio.sleep(0.2)
    assert server.list("PersistentVolume") == []


async def test_replicated_provisioning_creates_a_csi_pv_and_a_volume(
    api: Api, server: ApiServer
) -> None:
    server.load(
        [
            *VOLSCHED_CRDS,
            storage_class(
                "replicated",
                provisioner="replicated.volsched.io",
                parameters={
                    "numberOfReplicas": "2",
                    "dataLocality": "best-effort",
                    "diskSelector": "fast,ssd",
                    "nodeSelector": "storage",
                },
            ),
        ]
    )
    claim = await api.ok(
        "POST",
        CLAIMS,
        pvc("c1", "2Gi", "replicated", annotations={"volume.kubernetes.io/selected-node": "n2"}),
    )
    name = f"pvc-{claim['metadata']['uid']}"
    volume_pv = await eventually(lambda: volume_of(server, name))
    assert volume_pv["spec"]["csi"]["driver"] == "replicated.volsched.io"
    assert volume_pv["spec"]["csi"]["volumeHandle"] == name
    assert "nodeAffinity" not in volume_pv["spec"]
    volume = server.get("Volume", name)
    assert volume is not None
    assert volume["apiVersion"] == "volsched.io/v1alpha1"
    assert volume["spec"] == {
        "size": str(2 * 2**30),
        "numberOfReplicas": 2,
        "dataLocality": "best-effort",
        "nodeSelector": ["storage"],
        "diskSelector": ["fast", "ssd"],
        "nodeID": "n2",
    }
    assert volume["status"]["robustness"] == "healthy"
    await eventually(lambda: claim_of(server, "c1")["status"].get("phase") == "Bound")


async def test_storage_agent_accounts_scheduled_storage(api: Api, server: ApiServer) -> None:
    group = "/apis/volsched.io/v1alpha1"
    server.load(VOLSCHED_CRDS)
    await api.ok(
        "POST",
        f"{group}/storagenodes",
        {
            "metadata": {"name": "n1"},
            "spec": {"disks": {"d1": {"path": "/d1"}, "d2": {"path": "/d2"}}},
        },
    )
    await api.ok(
        "POST", f"{group}/volumes", {"metadata": {"name": "v1"}, "spec": {"size": "1073741824"}}
    )
    await api.ok("POST", f"{group}/volumes", {"metadata": {"name": "v2"}, "spec": {"size": "2Gi"}})
    for name, disk, volume in (("r1", "d1", "v1"), ("r2", "d1", "v2"), ("r3", "d2", "v1")):
        await api.ok(
            "POST",
            f"{group}/replicas",
            {
                "metadata": {"name": name},
                "spec": {"volumeName": volume, "nodeID": "n1", "diskID": disk},
            },
        )

    def disks() -> Raw:
        found = server.get("StorageNode", "n1")
        assert found is not None
        status = found.get("status") or {}
        return status.get("disks", {}) if status.get("ready") else {}

    await eventually(lambda: disks().get("d1", {}).get("storageScheduled") == 3 * 2**30)
    assert disks()["d2"]["storageScheduled"] == 2**30
    await eventually(
        lambda: (
            all(r["status"].get("synced") is True for r in server.list("Replica") if "status" in r)
            and len([r for r in server.list("Replica") if "status" in r]) == 3
        )
    )
    await api.delete(f"{group}/replicas/r2")
    await eventually(lambda: disks()["d1"]["storageScheduled"] == 2**30)


async def test_storage_agent_waits_for_its_crd(api: Api, server: ApiServer) -> None:
    server.load([*VOLSCHED_CRDS[1:]])
    await api.ok(
        "POST",
        "/apis/volsched.io/v1alpha1/replicas",
        {"metadata": {"name": "r1"}, "spec": {"volumeName": "v"}},
    )
    await asyncio.sleep(0.15)
    replica = server.get("Replica", "r1")
    assert replica is not None and "status" not in replica


async def test_kubelet_readies_nodes_and_starts_bound_pods() -> None:
    settings = ControllerSettings(
        pv_controller=False,
        provisioner=False,
        storage_agent=False,
        kubelet=True,
        node_ready_delay_seconds=0.1,
        pod_start_delay_seconds=0.05,
    )
    async with (
        ApiServer(controllers=settings) as server,
        aiohttp.ClientSession(server.url) as session,
    ):

        def current(kind: str, name: str, namespace: str = "") -> Raw:
            found = server.get(kind, name, namespace)
            assert found is not None
            return found

        def node_ready() -> bool:
            conditions = current("Node", "n1")["status"].get("conditions", [])
            return any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)

        api = Api(session)
        await api.ok("POST", "/api/v1/nodes", node("n1", ready=False))
        tainted = await eventually(lambda: current("Node", "n1").get("spec", {}).get("taints"))
        assert tainted == [{"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]
        await eventually(node_ready)
        await eventually(lambda: current("Node", "n1")["spec"]["taints"] == [])
        assert current("Node", "n1")["status"]["conditions"][-1]["reason"] == "KubeletReady"
        await api.ok("POST", "/api/v1/namespaces/default/pods", pod("p1", nodeName="n1"))
        await eventually(lambda: current("Pod", "p1", "default")["status"]["phase"] == "Running")


async def test_a_claim_prebound_by_its_author_gets_its_volume(api: Api, server: ApiServer) -> None:
    server.load([storage_class("local")])
    await api.ok("POST", PVS, pv("pv-1", "1Gi"))
    claim = pvc("c1", "1Gi")
    claim["spec"]["volumeName"] = "pv-1"
    await api.ok("POST", CLAIMS, claim)
    bound = await eventually(
        lambda: claim_of(server, "c1")["status"].get("phase") == "Bound" and claim_of(server, "c1")
    )
    # The controller did not choose the volume, so it does not claim to have bound it.
    assert "pv.kubernetes.io/bound-by-controller" not in bound["metadata"]["annotations"]
    volume = volume_of(server, "pv-1")
    assert volume is not None and volume["spec"]["claimRef"]["name"] == "c1"


async def test_a_pv_that_lost_its_claim_to_another_volume_is_freed(
    api: Api, server: ApiServer
) -> None:
    server.load([storage_class("local")])
    await api.ok("POST", PVS, pv("winner", "1Gi", claim=("default", "c1")))
    await api.ok("POST", CLAIMS, pvc("c1", "1Gi"))
    await eventually(lambda: claim_of(server, "c1")["spec"].get("volumeName") == "winner")
    loser = pv("loser", "1Gi", claim=("default", "c1"))
    loser["metadata"]["annotations"] = {"pv.kubernetes.io/bound-by-controller": "yes"}
    await api.ok("POST", PVS, loser)
    await eventually(lambda: pv_phase(server, "loser") == "Available")
    freed = volume_of(server, "loser")
    assert freed is not None and "claimRef" not in freed["spec"]


async def test_a_bound_claim_whose_pv_is_deleted_is_lost(api: Api, server: ApiServer) -> None:
    server.load([storage_class("fast", mode="Immediate")])
    await api.ok("POST", PVS, pv("pv-1", "1Gi", "fast"))
    await api.ok("POST", CLAIMS, pvc("c1", "1Gi", "fast"))
    await eventually(lambda: claim_of(server, "c1")["status"].get("phase") == "Bound")
    await api.delete(f"{PVS}/pv-1")
    await eventually(lambda: claim_of(server, "c1")["status"].get("phase") == "Lost")
