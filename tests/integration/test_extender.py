"""volsched as a kube-scheduler extender: request bodies shaped exactly as
kube-scheduler sends them (Nodes and NodeNames forms, Go field names)."""

from __future__ import annotations

import asyncio
import gzip
import io
import json
import zlib
from typing import Any

import aiohttp
import pytest

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import claim, local_pv, node, pod, storage_class
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.runtime.app import Daemon
from volsched.emulator import ControllerSettings

Raw = dict[str, Any]


def kube_pod(cluster: Cluster, name: str) -> Raw:
    """The pod as kube-scheduler holds it (from the API server)."""
    return cluster.pod(name)


async def setup(cluster: Cluster) -> Daemon:
    big = node("node-3", "zone-c", cpu="1")
    cluster.server.load(
        [
            node("node-1", "zone-a"),
            node("node-2", "zone-b"),
            big,
            storage_class("local"),
            local_pv("pv-1", "node-1"),
            claim("c1"),
        ]
    )
    workload = pod("web", ("c1",), cpu="2")
    workload["spec"]["schedulerName"] = "default-scheduler"  # kube-scheduler's pod
    cluster.server.load([workload])
    daemon = await cluster.start_daemon()
    await eventually(lambda: "default/web" in daemon.cluster.pods, what="pod in cache")
    return daemon


def bind_body(cluster: Cluster, name: str = "web", node: str = "node-1") -> Raw:
    """kube-scheduler's ExtenderBindingArgs for a pod as the API server holds it."""
    pod = kube_pod(cluster, name)
    return {
        "PodName": name,
        "PodNamespace": "default",
        "PodUID": pod["metadata"]["uid"],
        "Node": node,
    }


async def post(
    daemon: Daemon,
    verb: str,
    body: Any,
    raw: bytes | None = None,
    headers: dict[str, str] | None = None,
) -> tuple[int, Any]:
    url = f"http://127.0.0.1:{daemon.http_port}/scheduler/{verb}"
    async with aiohttp.ClientSession() as session:
        kwargs: dict[str, Any] = {"data": io.BytesIO(raw)} if raw is not None else {"json": body}
        async with session.post(url, headers=headers, **kwargs) as response:
            return response.status, await response.json()


async def test_filter_with_node_names(cluster: Cluster) -> None:
    daemon = await setup(cluster)
    status, result = await post(
        daemon,
        "filter",
        {"Pod": kube_pod(cluster, "web"), "NodeNames": ["node-1", "node-2", "node-3", "ghost"]},
    )
    assert status == 200
    assert result["NodeNames"] == ["node-1"]
    assert result["Nodes"] is None
    assert result["FailedAndUnresolvableNodes"] == {
        "node-2": "node(s) didn't find available persistent volumes to bind"
    }
    assert result["FailedNodes"] == {
        "node-3": "Insufficient cpu",
        "ghost": "node(s) not found in volsched's cache",
    }
    assert result["Error"] == ""


async def test_filter_with_a_node_list_and_lower_case_keys(cluster: Cluster) -> None:
    daemon = await setup(cluster)
    nodes = [cluster.server.get("Node", n) for n in ("node-1", "node-2")]
    status, result = await post(
        daemon, "filter", {"pod": kube_pod(cluster, "web"), "nodes": {"items": nodes}}
    )
    assert status == 200
    assert [n["metadata"]["name"] for n in result["Nodes"]["items"]] == ["node-1"]
    assert result["NodeNames"] is None


async def test_prioritize_scales_to_max_extender_priority(cluster: Cluster) -> None:
    daemon = await setup(cluster)
    status, result = await post(
        daemon, "prioritize", {"Pod": kube_pod(cluster, "web"), "NodeNames": ["node-1", "node-2"]}
    )
    assert status == 200
    assert [entry["Host"] for entry in result] == ["node-1", "node-2"]
    assert all(0 <= entry["Score"] <= 10 for entry in result)
    assert result[1]["Score"] == 0  # infeasible for the volume
    assert result[0]["Score"] > 0


async def test_bind_runs_the_full_binding_cycle(cluster: Cluster) -> None:
    daemon = await setup(cluster)
    status, result = await post(daemon, "bind", bind_body(cluster))
    assert status == 200 and result == {"Error": ""}
    assert cluster.node_of("web") == "node-1"
    volume = cluster.server.get("PersistentVolume", "pv-1")
    assert volume is not None and volume["spec"]["claimRef"]["name"] == "c1"
    status, result = await post(
        daemon,
        "bind",
        {"PodName": "web", "PodNamespace": "default", "PodUID": "", "Node": "node-2"},
    )
    assert status == 200 and "already assigned to node node-1" in result["Error"]


async def test_concurrent_binds_of_one_pod_run_one_binding_cycle(cluster: Cluster) -> None:
    daemon = await setup(cluster)
    body = bind_body(cluster)
    cluster.server.faults.reset()
    answers = await asyncio.gather(*(post(daemon, "bind", body) for _ in range(6)))
    assert answers == [(200, {"Error": ""})] * 6
    assert len(cluster.server.faults.requests("POST", r"/binding$")) == 1
    assert cluster.node_of("web") == "node-1"
    claim_writes = cluster.server.faults.requests("PUT", r"/persistentvolumes/pv-1$")
    assert len(claim_writes) == 1


@pytest.mark.parametrize("controllers", [ControllerSettings(pv_bind_delay_seconds=1.0)])
async def test_a_bind_to_another_node_while_one_runs_is_refused(
    cluster: Cluster, controllers: ControllerSettings
) -> None:
    daemon = await setup(cluster)
    first = {"PodName": "web", "PodNamespace": "default", "Node": "node-1"}
    running = asyncio.ensure_future(post(daemon, "bind", first))
    await eventually(lambda: "default/web" in daemon.cluster.assumed_pods, what="cycle running")
    assert await post(daemon, "bind", {**first, "Node": "node-2"}) == (
        200,
        {"Error": "pod default/web is already being bound to node node-1"},
    )
    assert await running == (200, {"Error": ""})
    assert len(cluster.server.faults.requests("POST", r"/binding$")) == 1
    assert cluster.node_of("web") == "node-1"


async def test_bind_leaves_the_scheduled_event_to_kube_scheduler(cluster: Cluster) -> None:
    """kube-scheduler records `Scheduled` itself once an extender has bound the pod, so
    volsched's `/bind` records none: the pod shows one `Scheduled` event, not two."""
    daemon = await setup(cluster)
    status, result = await post(daemon, "bind", bind_body(cluster))
    # The call returns once the whole binding cycle, reporting included, is done.
    assert status == 200 and result == {"Error": ""}
    assert cluster.node_of("web") == "node-1"
    assert [e for e in cluster.events_for("web") if e.get("reason") == "Scheduled"] == []


async def test_preempt_drops_nodes_ruled_out_by_volumes(cluster: Cluster) -> None:
    daemon = await setup(cluster)
    body = {
        "Pod": kube_pod(cluster, "web"),
        "NodeNameToMetaVictims": {
            "node-1": {"Pods": [{"UID": "a"}], "NumPDBViolations": 0},
            "node-2": {"Pods": [{"UID": "b"}], "NumPDBViolations": 1},
            "node-3": {"Pods": [{"UID": "c"}], "NumPDBViolations": 0},
        },
    }
    status, result = await post(daemon, "preempt", body)
    assert status == 200
    assert result == {
        "NodeNameToMetaVictims": {
            "node-1": {"Pods": [{"UID": "a"}], "NumPDBViolations": 0},
            "node-3": {"Pods": [{"UID": "c"}], "NumPDBViolations": 0},
        }
    }


@pytest.mark.parametrize(
    ("victims", "error"),
    [
        ({"NodeNameToVictims": {"n1": {"Pods": 5}}}, "NodeNameToVictims['n1'].Pods must be a list"),
        ({"NodeNameToVictims": {"n1": [1, 2]}}, "NodeNameToVictims['n1'] must be an object"),
        ({"NodeNameToVictims": {"n1": "x"}}, "NodeNameToVictims['n1'] must be an object"),
        ({"NodeNameToVictims": {"n1": {"Pods": [1]}}}, "NodeNameToVictims['n1'].Pods[0] must be"),
        (
            {"NodeNameToVictims": {"n1": {"Pods": [{"metadata": []}]}}},
            "NodeNameToVictims['n1'].Pods[0].metadata must be an object",
        ),
        (
            {"NodeNameToVictims": {"n1": {"Pods": [{"metadata": {"uid": 7}}]}}},
            "the pod's UID must be a string",
        ),
        (
            {"NodeNameToVictims": {"n1": {"Pods": [], "NumPDBViolations": "2"}}},
            "NodeNameToVictims['n1'].NumPDBViolations must be an integer",
        ),
        ({"NodeNameToVictims": [1]}, "NodeNameToVictims must be an object"),
        ({"NodeNameToMetaVictims": {"n1": {"Pods": 5}}}, "NodeNameToMetaVictims['n1'].Pods"),
        ({"NodeNameToMetaVictims": {"n1": None}}, "NodeNameToMetaVictims['n1'] must be"),
        ({"NodeNameToMetaVictims": {"n1": {"Pods": [{"UID": []}]}}}, "UID must be a string"),
        (
            {"NodeNameToMetaVictims": {"n1": {"NumPDBViolations": 1.5}}},
            "NumPDBViolations must be an integer",
        ),
        (
            {"NodeNameToMetaVictims": {"n1": {"NumPDBViolations": 2**64}}},
            "NumPDBViolations is out of range",
        ),
        ({"NodeNameToMetaVictims": "all"}, "NodeNameToMetaVictims must be an object"),
    ],
)
async def test_preempt_arguments_of_the_wrong_shape_get_400(
    cluster: Cluster, victims: Raw, error: str
) -> None:
    daemon = await setup(cluster)
    status, result = await post(daemon, "preempt", {"Pod": kube_pod(cluster, "web"), **victims})
    assert status == 400
    assert error in result["Error"] and "\n" not in result["Error"]


async def test_preempt_reads_whole_victim_pods(cluster: Cluster) -> None:
    daemon = await setup(cluster)
    body = {
        "Pod": kube_pod(cluster, "web"),
        "NodeNameToVictims": {
            "node-1": {"Pods": [{"metadata": {"uid": "a"}}, {"metadata": {}}]},
            "node-2": {"Pods": [{"metadata": {"uid": "b"}}], "NumPDBViolations": 1},
        },
    }
    status, result = await post(daemon, "preempt", body)
    assert status == 200
    assert result == {
        "NodeNameToMetaVictims": {
            "node-1": {"Pods": [{"UID": "a"}, {"UID": ""}], "NumPDBViolations": 0}
        }
    }


@pytest.mark.parametrize("controllers", [ControllerSettings(pv_bind_delay_seconds=5.0)])
async def test_bind_outlasting_the_call_deadline_still_completes(
    cluster: Cluster, controllers: ControllerSettings
) -> None:
    daemon = await setup(cluster)
    body = bind_body(cluster)
    status, result = await post(daemon, "bind", body)
    assert status == 200 and result == {"Error": ""}
    assert cluster.node_of("web") == "node-1"
    await eventually(lambda: daemon.store.stats.journal_depth == 0, what="journal entries closed")
    status, result = await post(daemon, "bind", body)
    assert result == {"Error": ""}  # already where it was asked to go


@pytest.mark.parametrize(
    ("body", "raw", "error"),
    [
        (None, b"{not json", "request body is not JSON"),
        ([], None, "request body must be a JSON object"),
        ({"NodeNames": ["node-1"]}, None, "Pod is required"),
        (
            {"Pod": {"metadata": {"name": "x"}, "spec": {"containers": "no"}}, "NodeNames": []},
            None,
            "field spec.containers",
        ),
        ({"Pod": {"metadata": {"name": "x"}}}, None, "Nodes or NodeNames is required"),
        (None, b"{" + b" " * (17 * 1024 * 1024) + b"}", "too large"),
        (None, b'{"Pod": ' + b"[" * 100_000 + b"]" * 100_000 + b"}", "nested deeper than"),
        (None, b'{"Pod": {}, "NodeNames": [], "x": 1' + b"0" * 5000 + b"}", "a number longer"),
        (None, b'{"Pod": "\xff\xfe"}', "not UTF-8 text"),
        (None, b"0\x000\x80", "not UTF-8 text"),
        (None, b"[" + b"{}," * 5_000_000 + b"{}]", "MiB to decode, more than the 64 MiB"),
        (None, b'["' + b"\xf0\x9f\x98\x80" * 4_000_000 + b'"]', "MiB to decode"),
    ],
)
async def test_bad_requests_get_400_with_one_line(
    cluster: Cluster, body: Any, raw: bytes | None, error: str
) -> None:
    daemon = await setup(cluster)
    status, result = await post(daemon, "filter", body, raw)
    assert status == 400
    assert error in result["Error"]
    assert "\n" not in result["Error"]


GZIPPED_SPACES = gzip.compress(b"{" + b" " * (20 * 1024 * 1024) + b"}")


@pytest.mark.parametrize(
    ("encoding", "raw", "error"),
    [
        ("gzip", b'{"Pod": {}}', "request body is not valid gzip data"),
        (
            "gzip",
            gzip.compress(b'{"Pod": {}}', mtime=0)[:-9],
            "request body is not valid gzip data",
        ),
        ("deflate", b"\x78\x9c not deflate", "request body is not valid deflate data"),
        ("gzip", GZIPPED_SPACES, "too large: more than 16,777,216 bytes once gzip is undone"),
        ("gzip", gzip.compress(b"{}", mtime=0) + b"junk", "bytes after the end of the gzip data"),
        ("br", b"\x0b\x01\x80{}\x03", "Content-Encoding 'br' is not accepted"),
        ("gzip, gzip", b"", "Content-Encoding 'gzip, gzip' is not accepted"),
    ],
)
async def test_a_body_not_encoded_as_it_says_gets_400(
    cluster: Cluster, encoding: str, raw: bytes, error: str
) -> None:
    daemon = await setup(cluster)
    for verb in ("filter", "prioritize", "bind", "preempt"):
        status, result = await post(daemon, verb, None, raw, {"Content-Encoding": encoding})
        assert (status, verb) == (400, verb)
        assert error in result["Error"] and "\n" not in result["Error"]


async def test_a_gzipped_body_is_read(cluster: Cluster) -> None:
    daemon = await setup(cluster)
    body = {"Pod": kube_pod(cluster, "web"), "NodeNames": ["node-1", "node-2"]}
    for encoding, raw in (
        ("gzip", gzip.compress(json.dumps(body).encode())),
        ("deflate", zlib.compress(json.dumps(body).encode())),
    ):
        status, result = await post(daemon, "filter", None, raw, {"Content-Encoding": encoding})
        assert status == 200 and result["NodeNames"] == ["node-1"]


async def test_pods_of_schedulers_not_served_are_refused(cluster: Cluster) -> None:
    daemon = await setup(cluster)
    other = pod("theirs", ("c1",))
    other["spec"]["schedulerName"] = "someone-else"
    cluster.server.load([other])
    await eventually(lambda: "default/theirs" in daemon.cluster.pods, what="pod in cache")
    theirs = kube_pod(cluster, "theirs")
    for verb, body in (
        ("filter", {"Pod": theirs, "NodeNames": ["node-1"]}),
        ("prioritize", {"Pod": theirs, "NodeNames": ["node-1"]}),
        ("preempt", {"Pod": theirs, "NodeNameToMetaVictims": {}}),
        ("bind", {"PodName": "theirs", "PodNamespace": "default", "Node": "node-1"}),
    ):
        status, result = await post(daemon, verb, body)
        assert status == 403, verb
        assert "schedulerName 'someone-else'" in result["Error"]
    assert cluster.node_of("theirs") is None
    volume = cluster.server.get("PersistentVolume", "pv-1")
    assert volume is not None and not volume["spec"].get("claimRef")


async def test_claims_prebound_by_kube_scheduler_are_not_bound_again(cluster: Cluster) -> None:
    """With kube-scheduler's VolumeBinding left on, its PreBind binds the claims before
    the extender's bind is called: volsched binds the pod and leaves the volumes be."""
    daemon = await setup(cluster)
    cluster.server.load([local_pv("pv-2", "node-1", size="50Gi")])
    await eventually(lambda: daemon.cluster.pvs.get("pv-2") is not None, what="pv-2 in cache")
    claim_uid = cluster.server.get("PersistentVolumeClaim", "c1", "default")["metadata"]["uid"]
    client = await KubeClient.connect(str(cluster.kubeconfig))
    try:
        ref = {"kind": "PersistentVolumeClaim", "namespace": "default", "name": "c1"}
        await client.patch(
            "PersistentVolume", "pv-2", {"spec": {"claimRef": {**ref, "uid": claim_uid}}}
        )
    finally:
        await client.close()

    def bound_by_kube_scheduler() -> bool:
        found = cluster.server.get("PersistentVolumeClaim", "c1", "default")
        return found is not None and found["spec"].get("volumeName") == "pv-2"

    await eventually(bound_by_kube_scheduler, what="c1 bound to pv-2")
    body = bind_body(cluster)
    status, result = await post(daemon, "bind", body)
    assert status == 200 and result == {"Error": ""}
    assert cluster.node_of("web") == "node-1"
    first = cluster.server.get("PersistentVolume", "pv-1")
    assert first is not None and not first["spec"].get("claimRef")
    assert bound_by_kube_scheduler()


async def test_preempt_drops_a_full_node_whose_volumes_rule_it_out_too(cluster: Cluster) -> None:
    # node-2 is full, so its first rejection is "Insufficient cpu"; with the victim gone
    # the pod's claim still has no PV there: evicting the victim would help nothing.
    filler = pod("filler", cpu="4")
    filler["spec"]["nodeName"] = "node-2"
    cluster.server.load([filler])
    daemon = await setup(cluster)
    await eventually(lambda: "default/filler" in daemon.cluster.pods, what="filler in cache")
    filler_uid = cluster.pod("filler")["metadata"]["uid"]
    full = await post(daemon, "filter", {"Pod": kube_pod(cluster, "web"), "NodeNames": ["node-2"]})
    assert full[1]["FailedNodes"] == {"node-2": "Insufficient cpu"}
    body = {
        "Pod": kube_pod(cluster, "web"),
        "NodeNameToMetaVictims": {
            "node-1": {"Pods": [], "NumPDBViolations": 0},
            "node-2": {"Pods": [{"UID": filler_uid}], "NumPDBViolations": 0},
        },
    }
    status, result = await post(daemon, "preempt", body)
    assert status == 200
    assert result == {"NodeNameToMetaVictims": {"node-1": {"Pods": [], "NumPDBViolations": 0}}}
