"""Shadow mode against the embedded cluster: the real daemon with ``shadow.enabled``
beside a binder written here (standing in for kube-scheduler), every write over HTTP
refused by the emulator, and the comparison read three ways — the JSON report, the
metrics and ``volsched shadow-report`` — against counts this test works out itself."""

from __future__ import annotations

import asyncio
import contextlib
import io
import time
from collections import Counter
from typing import Any

import aiohttp
from prometheus_client.parser import text_string_to_metric_families

from tests.integration.conftest import Cluster, eventually
from volsched.daemon.cli.main import main
from volsched.daemon.config.settings import AuthSettings, HttpSettings, ShadowSettings
from volsched.daemon.runtime.shadowing import ShadowDaemon
from volsched.emulator import ApiServer, User
from volsched.emulator.binding import bind
from volsched.emulator.faults import WRITE_METHODS

Raw = dict[str, Any]
PODS = 200
TAINT = "node(s) had untolerated taint(s)"
SELECTOR = "node(s) didn't match Pod's node affinity/selector"


def node(name: str, cpu: str, memory: str, taints: list[Raw] | None = None) -> Raw:
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name}},
        "spec": {"taints": taints or []},
        "status": {
            "allocatable": {"cpu": cpu, "memory": memory, "pods": "110"},
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


# A roomy node volsched prefers, a small one it accepts with a lower score (its default
# requests of 100m and 200Mi fill a tenth of it per pod), and a tainted one it rejects.
NODES = [
    node("roomy", "1000", "4000Gi"),
    node("small", "1", "2Gi"),
    node(
        "infra", "1000", "4000Gi", [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]
    ),
]
# What each kind of pod is, where the other scheduler binds it, and what volsched makes
# of that: the table the test's expectations come from.
PLAN = {
    # kind: (node selector, their node, expected outcome, expected reason)
    "same": (None, "roomy", "agreed", None),
    "lower": (None, "small", "lower_score", None),
    "tainted": (None, "infra", "rejected", TAINT),
    "nowhere": ({"disk": "nvme"}, "roomy", "unschedulable", SELECTOR),
}


def pod(name: str, selector: dict[str, str] | None) -> Raw:
    spec: Raw = {"containers": [{"name": "main", "image": "app"}]}
    if selector:
        spec["nodeSelector"] = selector
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "default"},
        "spec": spec,
    }


def plan() -> list[tuple[str, str]]:
    """(pod name, kind) for every pod, the kinds interleaved."""
    kinds = list(PLAN)
    return [(f"p{index:03d}", kinds[index % len(kinds)]) for index in range(PODS)]


async def get_text(url: str) -> str:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        assert response.status == 200, url
        return await response.text()


def comparison_counts(metrics: str) -> dict[str, float]:
    counts = {}
    for family in text_string_to_metric_families(metrics):
        if family.name == "volsched_shadow_comparisons":
            for sample in family.samples:
                if sample.name.endswith("_total"):
                    assert sample.labels["scheduler"] == "default-scheduler"
                    counts[sample.labels["outcome"]] = sample.value
    return counts


async def test_the_shadow_counts_agreement_and_writes_nothing(cluster: Cluster) -> None:
    started = time.monotonic()
    server = cluster.server
    server.load(NODES)
    # Every write that reaches the API server over HTTP is refused (and logged): the
    # shadow must not even try. The binder below writes in-process, not over HTTP.
    for method in WRITE_METHODS:
        server.faults.fail_next(method, ".", 403, times=10**6, message="shadow test: no writes")
    settings = cluster.settings(shadow=ShadowSettings(enabled=True))
    daemon = await cluster.start_daemon(settings, lead=False)
    assert isinstance(daemon, ShadowDaemon)
    base = f"http://127.0.0.1:{daemon.http_port}"

    pods = plan()
    server.load([pod(name, PLAN[kind][0]) for name, kind in [*pods, ("gone", "same")]])
    # Every pending pod decided before the other scheduler binds any; one deleted while
    # pending leaves the verdicts.
    await eventually(lambda: len(daemon.tally.pending) == PODS + 1, what="pending pods decided")
    delete_pod(server, "gone")
    await eventually(lambda: len(daemon.tally.pending) == PODS, what="deleted pod forgotten")
    pending = daemon.tally.report()["pending"]
    assert (pending["placeable"], pending["unschedulable"]) == (PODS * 3 // 4, PODS // 4)
    assert len(pending["pods"]) == min(PODS, 100)

    expected_outcomes: Counter[str] = Counter()
    expected_reasons: Counter[str] = Counter()
    for name, kind in pods:
        _, their_node, outcome, reason = PLAN[kind]
        binding = {"metadata": {"name": name}, "target": {"kind": "Node", "name": their_node}}
        bind(server.registry, "default", name, binding)
        expected_outcomes[outcome] += 1
        if reason:
            expected_reasons[reason] += 1
        if sum(expected_outcomes.values()) % 8 == 0:
            await asyncio.sleep(0)
    assert sum(expected_outcomes.values()) == PODS

    await eventually(lambda: daemon.tally.compared == PODS, what="every binding compared")
    report = await get_json(base + "/shadow/report")
    outcomes = {k: v for k, v in report["outcomes"].items() if v}
    assert outcomes == dict(expected_outcomes)
    assert report["compared"] == PODS
    assert report["agreementRatio"] == expected_outcomes["agreed"] / PODS
    assert report["rejectionReasons"] == dict(expected_reasons)
    assert report["pending"] == {"placeable": 0, "unschedulable": 0, "pods": []}
    lower = [d for d in report["differences"] if d["outcome"] == "lower_score"]
    assert lower and all(d["scoreGap"] > 0 and d["ourNode"] == "roomy" for d in lower)
    assert report["scoreGap"]["median"] > 0

    assert "[+]scheduling ok" in await get_text(base + "/readyz?verbose")
    metrics = await get_text(base + "/metrics")
    assert {k: v for k, v in comparison_counts(metrics).items() if v} == {
        k: float(v) for k, v in expected_outcomes.items()
    }

    # The command prints the same counts from the running shadow.
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        status = await asyncio.to_thread(main, ["shadow-report", "--url", base + "/shadow/report"])
    assert status == 0
    table = out.getvalue()
    for outcome, count in expected_outcomes.items():
        assert any(line.split()[:2] == [outcome, str(count)] for line in table.splitlines())

    # Zero writes: not one POST, PUT, PATCH or DELETE from the shadow reached the server.
    writes = [r for r in server.faults.request_log if r.method in WRITE_METHODS]
    assert writes == []
    assert all(p["spec"]["nodeName"] for p in server.list("Pod", "default"))
    assert server.list("Event", "default") == []
    assert server.list("Event", "default", api_version="events.k8s.io/v1") == []
    assert server.list("Lease", "kube-system") == []
    assert time.monotonic() - started < 20


async def get_json(url: str) -> Any:
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        assert response.status == 200, url
        return await response.json()


async def test_the_report_is_behind_the_same_authentication_as_metrics(cluster: Cluster) -> None:
    access = cluster.server.access
    access.tokens["scraper"] = User("system:serviceaccount:monitoring:prometheus")
    access.tokens["nobody"] = User("nobody")
    access.allow("system:serviceaccount:monitoring:prometheus", "/metrics", "get")
    access.allow("system:serviceaccount:monitoring:prometheus", "/shadow/report", "get")
    cluster.server.load(NODES)
    settings = cluster.settings(
        shadow=ShadowSettings(enabled=True), http=HttpSettings("127.0.0.1:0", AuthSettings())
    )
    daemon = await cluster.start_daemon(settings, lead=False)
    base = f"https://127.0.0.1:{daemon.http_port}"

    async def status(path: str, token: str | None, method: str = "GET") -> int:
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        async with (
            aiohttp.ClientSession() as session,
            session.request(method, base + path, headers=headers, ssl=False, json={}) as answer,
        ):
            return answer.status

    assert await status("/shadow/report", None) == 401
    assert await status("/shadow/report", "nobody") == 403
    assert await status("/shadow/report", "scraper") == 200
    assert await status("/metrics", "scraper") == 200
    # The shadow's only requests that are not reads: the reviews of its callers, which
    # the API server answers and never stores.
    writes = {
        (r.method, r.path) for r in cluster.server.faults.request_log if r.method in WRITE_METHODS
    }
    assert writes == {
        ("POST", "/apis/authentication.k8s.io/v1/tokenreviews"),
        ("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews"),
    }


def delete_pod(server: ApiServer, name: str) -> None:
    pods = server.registry.core("pods")
    server.registry.delete(pods, "default", name)
