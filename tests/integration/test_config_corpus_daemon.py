"""Two of the real-shaped configurations (``tests/cli/configs/``) loaded as ``volsched
run --config`` loads them, driving a daemon against the emulator."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import node, pod
from volsched.daemon.config.loading import load_settings
from volsched.daemon.config.settings import default_identity

CONFIGS = Path(__file__).resolve().parents[1] / "cli" / "configs"


def running(name: str, on: str, cpu: str) -> dict[str, object]:
    body = pod(name, cpu=cpu)
    body["spec"]["nodeName"] = on  # type: ignore[index]
    body["status"] = {"phase": "Running"}
    return body


async def test_jupyterhub_weights_pack_user_pods(cluster: Cluster) -> None:
    loaded = load_settings(str(CONFIGS / "jupyterhub-weights.yaml"), environ={})
    server = cluster.server
    server.load([node("busy"), node("idle"), running("filler", "busy", "3")])
    await cluster.start_daemon(
        cluster.settings(profiles=loaded.profiles, scheduler_name=loaded.scheduler_name)
    )
    user = pod("jupyter-user", cpu="500m")
    user["spec"]["schedulerName"] = "user-scheduler"  # type: ignore[index]
    server.load([user])
    await eventually(lambda: cluster.node_of("jupyter-user"), what="the user pod placed")
    assert cluster.node_of("jupyter-user") == "busy"


async def test_empty_leader_election_values_lead_on_kube_schedulers_lease(
    cluster: Cluster,
) -> None:
    loaded = load_settings(str(CONFIGS / "kwok-empty-defaults.yaml"), environ={})
    election = replace(loaded.leader_election, identity=default_identity())
    cluster.server.load([node("n1")])
    await cluster.start_daemon(
        cluster.settings(
            profiles=loaded.profiles,
            scheduler_name=loaded.scheduler_name,
            leader_election=election,
        )
    )
    lease = cluster.server.get("Lease", "kube-scheduler", "kube-system")
    assert lease is not None
    assert lease["spec"]["holderIdentity"] == election.identity
    assert lease["spec"]["leaseDurationSeconds"] == 15
    cluster.server.load([pod("placed", cpu="100m")])
    await eventually(lambda: cluster.node_of("placed"), what="a pod placed")


async def test_the_default_profile_prefers_the_node_holding_the_image(cluster: Cluster) -> None:
    """status.images survives the watch decode into the node view: ImageLocality (weight
    1 in the default profile) outweighs the cpu the node holding the image already gives
    away, which alone would send the pod to the other node."""
    cached = node("cached")
    cached["status"]["images"] = [  # type: ignore[index]
        {"names": ["registry.local/notebook:2026.1"], "sizeBytes": 900 * 1024 * 1024}
    ]
    cluster.server.load([node("cold"), cached, running("filler", "cached", "1")])
    await cluster.start_daemon()
    notebook = pod("notebook")
    notebook["spec"]["containers"][0]["image"] = "registry.local/notebook:2026.1"  # type: ignore[index]
    cluster.server.load([notebook])
    await eventually(lambda: cluster.node_of("notebook"), what="the notebook placed")
    assert cluster.node_of("notebook") == "cached"
