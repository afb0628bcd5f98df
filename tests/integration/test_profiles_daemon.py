"""Two profiles in one daemon: each serves its schedulerName with its own plugins, over
one cache; events and metrics carry the profile's name."""

from __future__ import annotations

import aiohttp
import yaml

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import node, pod
from volsched.scheduling.scheduler_config import parse_scheduler_configuration

CONFIG = """
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
  - schedulerName: volsched
  - schedulerName: volsched-packing
    plugins:
      score:
        disabled: [{name: '*'}]
        enabled: [{name: NodeResourcesFit}]
    pluginConfig:
      - name: NodeResourcesFit
        args: {scoringStrategy: {type: MostAllocated}}
"""


def running(name: str, on: str, cpu: str) -> dict[str, object]:
    body = pod(name, cpu=cpu)
    body["spec"]["nodeName"] = on  # type: ignore[index]
    body["status"] = {"phase": "Running"}
    return body


def named(name: str, scheduler: str) -> dict[str, object]:
    body = pod(name, cpu="500m")
    body["spec"]["schedulerName"] = scheduler  # type: ignore[index]
    return body


async def test_two_profiles_each_decide_their_own_pods(cluster: Cluster) -> None:
    server = cluster.server
    server.load([node("busy"), node("idle"), running("filler", "busy", "3")])
    profiles = parse_scheduler_configuration(yaml.safe_load(CONFIG), "config.yaml").profiles
    daemon = await cluster.start_daemon(cluster.settings(profiles=profiles))
    server.load([named("spread-me", "volsched"), named("pack-me", "volsched-packing")])
    await eventually(
        lambda: cluster.node_of("spread-me") and cluster.node_of("pack-me"), what="both placed"
    )
    assert cluster.node_of("spread-me") == "idle"
    assert cluster.node_of("pack-me") == "busy"
    sources = {
        e["regarding"]["name"]: e.get("reportingController")
        for e in server.list("Event", "default", api_version="events.k8s.io/v1")
        if e.get("reason") == "Scheduled"
    }
    assert sources == {"spread-me": "volsched", "pack-me": "volsched-packing"}
    # A pod naming neither profile is not ours.
    server.load([named("other", "default-scheduler")])
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{daemon.http_port}/metrics") as response,
    ):
        text = await response.text()
    assert (
        'scheduler_schedule_attempts_total{profile="volsched-packing",result="scheduled"} 1.0'
        in text
    )
    assert cluster.node_of("other") is None
