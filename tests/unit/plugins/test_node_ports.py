"""PodFitsHostPorts, with upstream's conflict table (node_ports_test.go)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import cluster, node, parse, pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.status import Code
from volsched.scheduling.plugins.node_ports import REASON, NodePorts

Raw = dict[str, Any]


def with_ports(*ports: str, sidecar: bool = False) -> Raw:
    """A pod spec whose container opens ``PROTOCOL/hostIP/hostPort`` host ports."""
    items = []
    for spec in ports:
        protocol, ip, port = spec.split("/")
        item: Raw = {"containerPort": int(port), "hostPort": int(port), "protocol": protocol}
        if ip:
            item["hostIP"] = ip
        items.append(item)
    container = {"name": "c", "ports": items}
    if sidecar:
        return {
            "containers": [{"name": "main"}],
            "initContainers": [{**container, "restartPolicy": "Always"}],
        }
    return {"containers": [container]}


@pytest.mark.parametrize(
    ("used", "wanted", "fits"),
    [
        pytest.param([], ["UDP/127.0.0.1/8080"], True, id="nothing running"),
        pytest.param(["UDP/127.0.0.1/9090"], ["UDP/127.0.0.1/8080"], True, id="other port"),
        pytest.param(["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], False, id="same udp port"),
        pytest.param(["TCP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], False, id="same tcp port"),
        pytest.param(["TCP/127.0.0.2/8080"], ["TCP/127.0.0.1/8080"], True, id="different host ip"),
        pytest.param(["TCP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], True, id="different protocol"),
        pytest.param(
            ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"],
            ["TCP/127.0.0.1/8000", "UDP/127.0.0.1/8080"],
            False,
            id="second port conflicts",
        ),
        pytest.param(
            ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"],
            ["TCP/127.0.0.1/8000", "UDP/127.0.0.1/8080"],
            True,
            id="no port conflicts",
        ),
        pytest.param(
            ["TCP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], False, id="any address vs one address"
        ),
        pytest.param(
            ["TCP/0.0.0.0/8001"], ["TCP/127.0.0.1/8001"], False, id="one address vs any address"
        ),
        pytest.param(["TCP//8001"], ["TCP/10.0.0.1/8001"], False, id="no hostIP means any"),
        pytest.param(
            ["UDP/0.0.0.0/8001"], ["TCP/127.0.0.1/8001"], True, id="any address, other protocol"
        ),
    ],
)
def test_host_ports(used: list[str], wanted: list[str], fits: bool) -> None:
    objects = [node("n1")]
    if used:
        objects.append(pod("e0", node_name="n1", spec=with_ports(*used)))
    cache = cluster(*objects)
    plugin = NodePorts(cache)
    incoming = parse(pod("p", spec=with_ports(*wanted)))
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming)
    assert status.code is Code.SUCCESS
    result = plugin.filter(state, incoming, cache.nodes["n1"])
    if fits:
        assert result is None
    else:
        assert result is not None
        assert result.code is Code.UNSCHEDULABLE
        assert result.reasons == (REASON,)
        assert REASON == "node(s) didn't have free ports for the requested pod ports"
    # Without pre-filter the filter reads the pod itself.
    assert (plugin.filter(CycleState(), incoming, cache.nodes["n1"]) is None) is fits


def test_sidecar_host_ports_count_on_both_sides() -> None:
    cache = cluster(
        node("n1"), pod("e0", node_name="n1", spec=with_ports("TCP//9000", sidecar=True))
    )
    plugin = NodePorts(cache)
    incoming = parse(pod("p", spec=with_ports("TCP/10.0.0.1/9000", sidecar=True)))
    state = CycleState()
    plugin.pre_filter(state, incoming)
    assert plugin.filter(state, incoming, cache.nodes["n1"]) is not None


def test_pod_without_host_ports_skips_the_filter() -> None:
    cache = cluster(node("n1"))
    no_host_port = {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]}
    result, status = NodePorts(cache).pre_filter(CycleState(), parse(pod("p", spec=no_host_port)))
    assert result is None
    assert status.code is Code.SKIP


def test_a_host_network_pods_container_port_is_a_host_port() -> None:
    """The API server defaults a hostNetwork pod's hostPort to its containerPort, so a
    snapshot pod that never went through it conflicts as it would in the cluster."""
    cache = cluster(node("n1"), pod("e0", node_name="n1", spec=with_ports("TCP//80")))
    host_network = {
        "hostNetwork": True,
        "containers": [{"name": "c", "ports": [{"containerPort": 80}]}],
    }
    incoming = parse(pod("p", spec=host_network))
    plugin = NodePorts(cache)
    state = CycleState()
    _, status = plugin.pre_filter(state, incoming)
    assert status.code is Code.SUCCESS
    result = plugin.filter(state, incoming, cache.nodes["n1"])
    assert result is not None and result.reasons == (REASON,)
