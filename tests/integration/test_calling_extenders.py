"""volsched calling the HTTP extenders of a KubeSchedulerConfiguration, as kube-scheduler
does: the daemon against the embedded cluster, the extenders served by the test itself
(aiohttp on 127.0.0.1, a random port), over HTTP and over HTTPS with a CA made here."""

from __future__ import annotations

import asyncio
import base64
import ssl
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest
import yaml
from aiohttp import web

from tests.integration.certificates import serving_pair
from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import node, pod
from volsched.scheduling.extender_config import parse_extenders

Raw = dict[str, Any]
GPU = "example.com/gpu"
REASON = "node(s) had no free example.com/widgets"


class FakeExtender:
    """An extender with a few prefixes, each its own behaviour, recording what it was
    sent (prefix/verb → bodies)."""

    def __init__(self, api_url: str) -> None:
        self.api_url = api_url
        self.calls: dict[str, list[Raw]] = {}
        self.app = web.Application()
        self.app.router.add_post("/{prefix}/{verb}", self.handle)
        self.runner = web.AppRunner(self.app)
        self.port = 0

    async def start(self, context: ssl.SSLContext | None = None) -> None:
        await self.runner.setup()
        site = web.TCPSite(self.runner, "127.0.0.1", 0, ssl_context=context)
        await site.start()
        self.port = self.runner.addresses[0][1]

    def url(self, prefix: str, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}/{prefix}"

    def sent(self, prefix: str, verb: str) -> list[Raw]:
        return self.calls.get(f"{prefix}/{verb}", [])

    async def handle(self, request: web.Request) -> web.Response:
        prefix, verb = request.match_info["prefix"], request.match_info["verb"]
        body = await request.json()
        self.calls.setdefault(f"{prefix}/{verb}", []).append(body)
        if prefix.startswith("slow"):
            await asyncio.sleep(0.6)
            return web.json_response({"Error": "too late"})
        if prefix.startswith("broken"):
            return web.json_response({"Error": "widgets exploded"}, status=500)
        if verb == "filter":
            return web.json_response(self.filter(prefix, body))
        if verb == "prioritize":
            names = body["NodeNames"] or [n["metadata"]["name"] for n in body["Nodes"]["items"]]
            return web.json_response([{"Host": n, "Score": int(n == "node-3")} for n in names])
        if verb == "bind":
            return web.json_response(await self.bind(body))
        if verb == "preempt":
            # Keep every candidate but node-1.
            kept = {n: v for n, v in body["NodeNameToVictims"].items() if n != "node-1"}
            meta = {
                n: {
                    "Pods": [{"UID": p["metadata"]["uid"]} for p in v["Pods"]],
                    "NumPDBViolations": v["NumPDBViolations"],
                }
                for n, v in kept.items()
            }
            return web.json_response({"NodeNameToMetaVictims": meta})
        return web.json_response({"Error": f"no verb {verb}"}, status=404)

    @staticmethod
    def filter(prefix: str, body: Raw) -> Raw:
        if body["NodeNames"] is not None:
            names = body["NodeNames"]
        else:
            names = [item["metadata"]["name"] for item in body["Nodes"]["items"]]
        if prefix == "tls":
            # Node-2 has no widgets left.
            kept = [name for name in names if name != "node-2"]
            failed = {"node-2": REASON} if "node-2" in names else {}
            return {"NodeNames": kept, "FailedNodes": failed, "FailedAndUnresolvableNodes": {}}
        return {"NodeNames": names, "FailedNodes": {}, "FailedAndUnresolvableNodes": {}}

    async def bind(self, body: Raw) -> Raw:
        """Bind as an extender does: through the API server's pods/binding."""
        namespace, name = body["PodNamespace"], body["PodName"]
        binding = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": body["PodUID"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": body["Node"]},
        }
        url = f"{self.api_url}/api/v1/namespaces/{namespace}/pods/{name}/binding"
        async with aiohttp.ClientSession() as session, session.post(url, json=binding) as reply:
            if reply.status != 201:
                return {"Error": f"binding answered {reply.status}"}
        return {"Error": ""}

    async def close(self) -> None:
        await self.runner.cleanup()


@pytest.fixture
async def extender(cluster: Cluster) -> AsyncIterator[FakeExtender]:
    fake = FakeExtender(cluster.server.url)
    yield fake
    await fake.close()


def extenders(text: str) -> Any:
    return parse_extenders(yaml.safe_load(text), "test.yaml")


def gpu_pod(name: str, resource: str = GPU) -> Raw:
    raw = pod(name, cpu="100m")
    raw["spec"]["containers"][0]["resources"]["limits"] = {resource: "1"}
    return raw


def failures(cluster: Cluster, name: str) -> list[str]:
    return [e["note"] for e in cluster.events_for(name) if e["reason"] == "FailedScheduling"]


async def test_filter_prioritize_and_bind_over_https(
    cluster: Cluster, extender: FakeExtender, tmp_path: Path
) -> None:
    """One HTTPS extender filters (whole nodes), another scores (node names) with a
    weight, a third binds, a fourth only sees the pods using the resource it manages."""
    pair = serving_pair(["extender.test"])
    (tmp_path / "tls.crt").write_bytes(pair["tls.crt"])
    (tmp_path / "tls.key").write_bytes(pair["tls.key"])
    serving = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    serving.load_cert_chain(tmp_path / "tls.crt", tmp_path / "tls.key")
    await extender.start(serving)
    ca = base64.b64encode(pair["ca.crt"]).decode()
    tls = f"{{serverName: extender.test, caData: {ca}}}"
    settings = cluster.settings(
        extenders=extenders(
            f"""
- urlPrefix: {extender.url("tls", "https")}
  filterVerb: filter
  enableHTTPS: true
  tlsConfig: {tls}
- urlPrefix: {extender.url("scores", "https")}
  prioritizeVerb: prioritize
  weight: 5
  nodeCacheCapable: true
  tlsConfig: {tls}
- urlPrefix: {extender.url("binder", "https")}
  bindVerb: bind
  tlsConfig: {tls}
- urlPrefix: {extender.url("gpus", "https")}
  filterVerb: filter
  nodeCacheCapable: true
  managedResources: [{{name: {GPU}, ignoredByScheduler: true}}]
  tlsConfig: {tls}
"""
        )
    )
    # In-tree scores prefer node-1 (most free cpu) over node-3; node-2 is the largest.
    cluster.server.load([node("node-1", cpu="4"), node("node-2", cpu="8"), node("node-3", cpu="2")])
    await cluster.start_daemon(settings)
    cluster.server.load([pod("web", cpu="500m"), pod("big", cpu="6"), gpu_pod("trainer")])

    # Filtered off node-2, scored onto node-3 (1 x weight 5 x 10 beats node-1's lead),
    # and bound by the extender's bind verb.
    await eventually(lambda: cluster.node_of("web") == "node-3", what="web bound to node-3")
    assert [b["PodName"] for b in extender.sent("binder", "bind")].count("web") == 1
    assert extender.sent("binder", "bind")[0]["Node"] == "node-3"
    # Whole nodes to the extender that is not node-cache-capable, names to the other.
    first = extender.sent("tls", "filter")[0]
    assert first["NodeNames"] is None
    assert {n["metadata"]["name"] for n in first["Nodes"]["items"]} == {
        "node-1",
        "node-2",
        "node-3",
    }
    scored = extender.sent("scores", "prioritize")[0]
    assert scored["Nodes"] is None and sorted(scored["NodeNames"]) == ["node-1", "node-3"]

    # Only node-2 holds the big pod, and the extender refuses it there: its reason.
    await eventually(lambda: failures(cluster, "big"), what="big reported unschedulable")
    assert failures(cluster, "big")[0].startswith(
        f"0/3 nodes are available: 1 {REASON}, 2 Insufficient cpu. no new claims to deallocate, preemption: "
    )
    assert cluster.node_of("big") is None

    # No node advertises example.com/gpu, yet NodeResourcesFit leaves it to the
    # extender that manages it, and only that pod is sent to it.
    await eventually(lambda: cluster.node_of("trainer"), what="trainer bound")
    assert {b["Pod"]["metadata"]["name"] for b in extender.sent("gpus", "filter")} == {"trainer"}


async def test_timeouts_and_errors_skipped_or_failing_the_cycle(
    cluster: Cluster, extender: FakeExtender
) -> None:
    """An extender that times out and one that answers 500: ignorable, the pod is
    scheduled anyway; not ignorable, its cycle fails with the extender's error."""
    await extender.start()
    entries = []
    for prefix, ignorable in (
        ("slow-skip", True),
        ("broken-skip", True),
        ("slow-stop", False),
        ("broken-stop", False),
    ):
        entries.append(
            {
                "urlPrefix": extender.url(prefix),
                "filterVerb": "filter",
                "httpTimeout": "200ms",
                "ignorable": ignorable,
                "managedResources": [{"name": f"example.com/{prefix}", "ignoredByScheduler": True}],
            }
        )
    settings = cluster.settings(extenders=extenders(yaml.safe_dump(entries)))
    cluster.server.load([node("node-1")])
    daemon = await cluster.start_daemon(settings)
    cluster.server.load([gpu_pod(p, f"example.com/{p}") for p in ("slow-skip", "broken-skip")])
    cluster.server.load([gpu_pod(p, f"example.com/{p}") for p in ("slow-stop", "broken-stop")])

    await eventually(lambda: cluster.node_of("slow-skip") == "node-1", what="slow-skip bound")
    await eventually(lambda: cluster.node_of("broken-skip") == "node-1", what="broken-skip bound")
    await eventually(lambda: failures(cluster, "slow-stop"), what="slow-stop failed")
    await eventually(lambda: failures(cluster, "broken-stop"), what="broken-stop failed")
    slow_url = extender.url("slow-stop")
    assert failures(cluster, "slow-stop")[0] == (
        f'Post "{slow_url}/filter": context deadline exceeded '
        "(Client.Timeout exceeded while awaiting headers)"
    )
    broken_url = extender.url("broken-stop")
    assert failures(cluster, "broken-stop")[0] == (
        f"failed filter with extender at URL {broken_url}/filter, code 500"
    )
    condition = {c["type"]: c for c in cluster.pod("broken-stop")["status"].get("conditions", [])}[
        "PodScheduled"
    ]
    assert (condition["reason"], condition["status"]) == ("SchedulerError", "False")
    assert cluster.node_of("slow-stop") is None and cluster.node_of("broken-stop") is None

    text = daemon.metrics.render().decode()
    assert (
        f'volsched_extender_requests_total{{extender="{slow_url}",result="timeout",verb="filter"}}'
        in text
    )
    assert (
        f'volsched_extender_requests_total{{extender="{broken_url}",result="error",verb="filter"}}'
        in text
    )


async def test_the_preempt_verb_trims_the_candidates(
    cluster: Cluster, extender: FakeExtender
) -> None:
    """Two full nodes; the victim on node-1 is the cheaper one, so volsched alone would
    preempt there. The extender's preempt verb keeps node-2 only."""
    await extender.start()
    settings = cluster.settings(
        extenders=extenders(f"[{{urlPrefix: '{extender.url('victims')}', preemptVerb: preempt}}]")
    )
    low = pod("low", cpu="4")
    low["spec"].update(nodeName="node-1", priority=1)
    medium = pod("medium", cpu="4")
    medium["spec"].update(nodeName="node-2", priority=5)
    for victim in (low, medium):
        victim["metadata"]["finalizers"] = ["example.com/drain"]
    cluster.server.load([node("node-1"), node("node-2"), low, medium])
    daemon = await cluster.start_daemon(settings)
    await eventually(lambda: "default/medium" in daemon.cluster.pods, what="victims cached")
    urgent = pod("urgent", cpu="4")
    urgent["spec"]["priority"] = 1000
    cluster.server.load([urgent])

    await eventually(
        lambda: cluster.pod("urgent").get("status", {}).get("nominatedNodeName") == "node-2",
        what="urgent nominated to node-2",
    )
    assert cluster.pod("medium")["metadata"].get("deletionTimestamp")
    assert not cluster.pod("low")["metadata"].get("deletionTimestamp")
    sent = extender.sent("victims", "preempt")[0]
    assert sorted(sent["NodeNameToVictims"]) == ["node-1", "node-2"]
    assert sent["Pod"]["metadata"]["name"] == "urgent"
