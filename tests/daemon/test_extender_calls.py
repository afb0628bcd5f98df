"""The extender client at each point of a cycle, against a real aiohttp extender on
127.0.0.1: the rules the daemon test does not reach (an extender answering with a node
it was not given, victims by UID, a kept node without victims, the binder's fallback,
mutual TLS from inline certificate data)."""

from __future__ import annotations

import base64
import random
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from aiohttp import web

from tests.integration.certificates import client_pair, serving_pair
from tests.integration.objects import node, pod
from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import ConfigError
from volsched.daemon.extenders.calling import ExtenderCalls, rendered_pod
from volsched.daemon.extenders.client import ExtenderError, Extenders
from volsched.daemon.telemetry.metrics import Metrics
from volsched.daemon.watch.ingest import Ingest
from volsched.scheduling.extender_config import parse_extenders
from volsched.scheduling.framework.runner import Scheduler
from volsched.scheduling.policy import default_policy
from volsched.scheduling.preemption.victims import Candidate
from volsched.scheduling.profile_builder import PluginFactory, build_profile

Raw = dict[str, Any]
Handler = Callable[[Raw], Awaitable[tuple[int, Any]]]


class Served:
    """One extender: ``answer`` decides what each verb returns; ``sent`` records it."""

    def __init__(self) -> None:
        self.answers: dict[str, Handler] = {}
        self.sent: dict[str, list[Raw]] = {}
        self.runner: web.AppRunner | None = None
        self.port = 0

    async def handle(self, request: web.Request) -> web.Response:
        verb = request.match_info["verb"]
        body = await request.json()
        self.sent.setdefault(verb, []).append(body)
        status, answer = await self.answers[verb](body)
        return web.json_response(answer, status=status)

    async def start(self, context: ssl.SSLContext | None = None) -> None:
        app = web.Application()
        app.router.add_post("/ext/{verb}", self.handle)
        self.runner = web.AppRunner(app)
        await self.runner.setup()
        await web.TCPSite(self.runner, "127.0.0.1", 0, ssl_context=context).start()
        self.port = self.runner.addresses[0][1]

    def url(self, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}/ext"


@pytest.fixture
async def served() -> AsyncIterator[Served]:
    server = Served()
    yield server
    if server.runner is not None:
        await server.runner.cleanup()


def answer(status: int, body: Any) -> Handler:
    async def reply(_: Raw) -> tuple[int, Any]:
        return status, body

    return reply


def setup(*objects: Raw) -> tuple[ClusterCache, Ingest]:
    cluster = ClusterCache()
    ingest = Ingest(cluster, None, "volsched")
    ingest.keep_raw("Pod", "Node")
    for raw in objects:
        ingest.upsert(raw["kind"], raw)
    return cluster, ingest


def calls_for(text: str, cluster: ClusterCache, ingest: Ingest) -> ExtenderCalls:
    return ExtenderCalls(
        Extenders(parse_extenders(yaml.safe_load(text), "t"), Metrics()), cluster, ingest
    )


async def test_a_node_cache_capable_extender_cannot_keep_a_node_it_was_not_given(
    served: Served,
) -> None:
    served.answers["filter"] = answer(200, {"NodeNames": ["n1", "elsewhere"]})
    await served.start()
    cluster, ingest = setup(node("n1"), node("n2"), pod("p"))
    calls = calls_for(
        f"[{{urlPrefix: '{served.url()}', filterVerb: filter, nodeCacheCapable: true}}]",
        cluster,
        ingest,
    )
    profile = build_profile(default_policy(with_storage=False), PluginFactory(cluster, ()), 0)
    decision = Scheduler(cluster, profile, random.Random(1)).find_feasible(
        cluster.pods["default/p"]
    )
    try:
        await calls.filter(decision)
    finally:
        await calls.extenders.close()
    assert decision.error == (
        f"extender '{served.url()}' claims a filtered node 'elsewhere' which is not found "
        "in the input node list"
    )
    assert sorted(served.sent["filter"][0]["NodeNames"]) == ["n1", "n2"]
    # The pod went as the API server gave it, not rebuilt.
    assert served.sent["filter"][0]["Pod"]["spec"]["containers"][0]["image"] == "busybox"


def victims_on(cluster: ClusterCache, node_name: str) -> Candidate:
    pods = tuple(cluster.nodes[node_name].pods.values())
    return Candidate(node_name, pods, 0)


def placed(name: str, node_name: str) -> Raw:
    raw = pod(name)
    raw["metadata"]["uid"] = f"uid-{name}"
    raw["spec"]["nodeName"] = node_name
    return raw


@pytest.mark.parametrize("ignorable", [False, True])
async def test_preempt_sends_victims_by_uid_and_needs_one_per_kept_node(
    served: Served, ignorable: bool
) -> None:
    async def keep(body: Raw) -> tuple[int, Any]:
        meta = body["NodeNameToMetaVictims"]
        return 200, {"NodeNameToMetaVictims": {"n1": meta["n1"], "n2": {"Pods": []}}}

    served.answers["preempt"] = keep
    await served.start()
    cluster, ingest = setup(node("n1"), node("n2"), placed("a", "n1"), placed("b", "n2"), pod("p"))
    calls = calls_for(
        f"[{{urlPrefix: '{served.url()}', preemptVerb: preempt, nodeCacheCapable: true,"
        f" ignorable: {str(ignorable).lower()}}}]",
        cluster,
        ingest,
    )
    candidates = {name: victims_on(cluster, name) for name in ("n1", "n2")}
    try:
        if ignorable:
            kept = await calls.preempt(cluster.pods["default/p"], candidates)
            assert {name: [v.meta.name for v in c.pods] for name, c in kept.items()} == {
                "n1": ["a"]
            }
        else:
            with pytest.raises(
                ExtenderError, match='expected at least one victim pod on node "n2"'
            ):
                await calls.preempt(cluster.pods["default/p"], candidates)
    finally:
        await calls.extenders.close()
    assert served.sent["preempt"][0]["NodeNameToMetaVictims"] == {
        "n1": {"Pods": [{"UID": "uid-a"}], "NumPDBViolations": 0},
        "n2": {"Pods": [{"UID": "uid-b"}], "NumPDBViolations": 0},
    }


@pytest.mark.parametrize(
    ("ignorable", "managed", "outcome"),
    [
        (False, "", "error"),
        (True, "", False),  # skipped: volsched's binder binds
        (False, "example.com/gpu", False),  # not interested: never asked
    ],
)
async def test_bind_goes_to_the_interested_binder(
    served: Served, ignorable: bool, managed: str, outcome: Any
) -> None:
    served.answers["bind"] = answer(200, {"Error": "no room on n1"})
    await served.start()
    cluster, ingest = setup(node("n1"), pod("p"))
    resources = f", managedResources: [{{name: {managed}}}]" if managed else ""
    calls = calls_for(
        f"[{{urlPrefix: '{served.url()}', bindVerb: bind,"
        f" ignorable: {str(ignorable).lower()}{resources}}}]",
        cluster,
        ingest,
    )
    try:
        if outcome == "error":
            with pytest.raises(ExtenderError, match=r"^no room on n1$"):
                await calls.bind("default/p", "uid-p", "n1")
        else:
            assert await calls.bind("default/p", "uid-p", "n1") is outcome
    finally:
        await calls.extenders.close()
    asked = served.sent.get("bind", [])
    assert len(asked) == (0 if managed else 1)
    if asked:
        assert asked[0] == {
            "PodName": "p",
            "PodNamespace": "default",
            "PodUID": "uid-p",
            "Node": "n1",
        }


async def test_mutual_tls_from_inline_certificate_data(served: Served, tmp_path: Path) -> None:
    pair = serving_pair(["extender.test"])
    (tmp_path / "s.crt").write_bytes(pair["tls.crt"])
    (tmp_path / "s.key").write_bytes(pair["tls.key"])
    ca_path, cert_path, key_path = client_pair(tmp_path, "volsched")
    serving = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    serving.load_cert_chain(tmp_path / "s.crt", tmp_path / "s.key")
    serving.load_verify_locations(ca_path)
    serving.verify_mode = ssl.CERT_REQUIRED
    served.answers["prioritize"] = answer(200, [{"Host": "n1", "Score": 7}])
    await served.start(serving)
    cluster, ingest = setup(node("n1"), node("n2"), pod("p"))

    def b64(data: bytes) -> str:
        return base64.b64encode(data).decode()

    tls = (
        f"{{serverName: extender.test, caData: {b64(pair['ca.crt'])},"
        f" certData: {b64(cert_path.read_bytes())}, keyData: {b64(key_path.read_bytes())}}}"
    )
    calls = calls_for(
        f"[{{urlPrefix: '{served.url('https')}', prioritizeVerb: prioritize, weight: 2,"
        f" tlsConfig: {tls}}}]",
        cluster,
        ingest,
    )
    profile = build_profile(default_policy(with_storage=False), PluginFactory(cluster, ()), 0)
    decision = Scheduler(cluster, profile, random.Random(1)).find_feasible(
        cluster.pods["default/p"]
    )
    try:
        assert await calls.prioritize(decision) == {"n1": 7 * 2 * 10}
    finally:
        await calls.extenders.close()
    assert len(served.sent["prioritize"]) == 1


def test_a_pod_known_only_from_its_view_is_rendered_with_its_requests() -> None:
    cluster, _ = setup(pod("p", cpu="250m"))
    rendered = rendered_pod(cluster.pods["default/p"])
    assert rendered["metadata"]["name"] == "p"
    assert rendered["spec"]["containers"][0]["resources"]["requests"]["cpu"] == "250m"


def test_tls_material_that_cannot_be_read_is_one_error_naming_the_entry(tmp_path: Path) -> None:
    specs = parse_extenders(
        yaml.safe_load(
            f"[{{urlPrefix: 'http://plain:1'}}, {{urlPrefix: 'https://x:1',"
            f" tlsConfig: {{caFile: {tmp_path / 'missing.crt'}}}}}]"
        ),
        "cfg.yaml",
    )
    with pytest.raises(ConfigError) as error:
        Extenders(specs, source="cfg.yaml")
    message = str(error.value)
    assert message.startswith("cfg.yaml: extenders[1].tlsConfig: ")
    assert "No such file" in message and "\n" not in message


@pytest.mark.parametrize("ignorable", [False, True])
async def test_preempt_victims_that_do_not_exist_are_skipped_when_ignorable(
    served: Served, ignorable: bool
) -> None:
    """Upstream's ProcessPreemption fails on a victim the node does not hold, and an
    ignorable extender's failure is skipped: the candidates stay as they were."""
    served.answers["preempt"] = answer(
        200, {"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": "uid-ghost"}]}}}
    )
    await served.start()
    cluster, ingest = setup(node("n1"), placed("a", "n1"), pod("p"))
    calls = calls_for(
        f"[{{urlPrefix: '{served.url()}', preemptVerb: preempt, nodeCacheCapable: true,"
        f" ignorable: {str(ignorable).lower()}}}]",
        cluster,
        ingest,
    )
    candidates = {"n1": victims_on(cluster, "n1")}
    try:
        if ignorable:
            assert await calls.preempt(cluster.pods["default/p"], candidates) == candidates
        else:
            with pytest.raises(ExtenderError, match=r"claims to preempt pod \(UID: uid-ghost\)"):
                await calls.preempt(cluster.pods["default/p"], candidates)
    finally:
        await calls.extenders.close()
