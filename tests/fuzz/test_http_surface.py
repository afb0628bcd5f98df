"""Hostile requests against the daemon's real HTTP server (the aiohttp app behind a real
socket, the emulator behind it): every answer is below 500 and nothing is logged with a
traceback.  Requests come from hypothesis: any method and path, Go-field bodies with
mutated values, deep nesting, long numbers, invalid UTF-8, malformed HTTP on the wire.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import logging
import socket
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.fuzz.sizes import EXAMPLES
from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import claim, local_pv, node, pod, storage_class

VERBS = ("filter", "prioritize", "bind", "preempt")
PATHS = [f"/scheduler/{v}" for v in VERBS] + ["/metrics", "/healthz", "/livez", "/readyz"]


@dataclass
class Tally:
    inputs: int = 0
    server_errors: list[str] = field(default_factory=list)


json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(),
        st.floats(allow_nan=False),
        st.text(max_size=30),
        st.sampled_from(["default", "web", "node-1", "default-scheduler", "-100", "1e999"]),
    ),
    lambda children: st.one_of(
        st.lists(children, max_size=4), st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=25,
)
GO_FIELDS = [
    "Pod",
    "pod",
    "Nodes",
    "NodeNames",
    "PodName",
    "PodNamespace",
    "PodUID",
    "Node",
    "NodeNameToVictims",
    "NodeNameToMetaVictims",
]


def kube_bodies(web: dict[str, Any]) -> st.SearchStrategy[bytes]:
    """Bodies shaped like kube-scheduler's, with fields replaced by anything."""
    good = {
        "Pod": web,
        "NodeNames": ["node-1", "ghost"],
        "PodName": "web",
        "PodNamespace": "default",
        "Node": "node-1",
        "NodeNameToMetaVictims": {"node-1": {"Pods": [{"UID": "a"}]}},
    }
    mutated = st.dictionaries(st.sampled_from(GO_FIELDS), json_values, max_size=4).map(
        lambda changes: {**good, **changes}
    )
    pod_mutated = st.dictionaries(
        st.sampled_from(["metadata", "spec", "status", "kind"]), json_values, max_size=2
    ).map(lambda changes: {**good, "Pod": {**web, **changes}})
    depth = st.integers(1, 200_000)
    return st.one_of(
        mutated.map(lambda b: json.dumps(b).encode()),
        pod_mutated.map(lambda b: json.dumps(b).encode()),
        json_values.map(lambda b: json.dumps(b).encode()),
        depth.map(lambda n: b'{"Pod": ' + b"[" * n + b"]" * n + b"}"),
        depth.map(lambda n: b'{"Pod": ' + b"[" * n + b"}"),
        st.integers(4000, 100_000).map(lambda n: b'{"NodeNames": [1' + b"0" * n + b"]}"),
        st.binary(max_size=200),
    )


def send(port: int, method: str, path: str, body: bytes, headers: dict[str, str]) -> int:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers)
        return connection.getresponse().status
    finally:
        connection.close()


def send_raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=30) as sock:
        sock.sendall(data)
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
        return b"".join(chunks)


header_values = st.text(
    st.characters(min_codepoint=32, max_codepoint=126, exclude_characters="\r\n"), max_size=40
)


def fuzz(port: int, web: dict[str, Any], tally: Tally) -> None:
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
        derandomize=False,
    )
    @given(
        method=st.sampled_from(["POST", "GET", "PUT", "DELETE", "PATCH", "OPTIONS"]),
        path=st.one_of(st.sampled_from(PATHS), st.text(max_size=40).map(lambda t: "/" + t)),
        body=kube_bodies(web),
        content_type=st.one_of(st.just("application/json"), header_values),
        authorization=st.one_of(st.just(""), header_values.map(lambda t: "Bearer " + t)),
    )
    def one(method: str, path: str, body: bytes, content_type: str, authorization: str) -> None:
        quoted = "".join(c if 33 <= ord(c) < 127 else f"%{ord(c) & 0xFF:02X}" for c in path)
        headers = {"Content-Type": content_type}
        if authorization:
            headers["Authorization"] = authorization
        status = send(port, method, quoted, body, headers)
        tally.inputs += 1
        if status >= 500:
            tally.server_errors.append(f"{method} {quoted} -> {status}")

    one()

    @settings(max_examples=max(EXAMPLES // 5, 20), deadline=None)
    @given(st.binary(max_size=300), st.sampled_from([b"", b"POST /scheduler/filter HTTP/1.1\r\n"]))
    def malformed(junk: bytes, prefix: bytes) -> None:
        answer = send_raw(port, prefix + junk + b"\r\n\r\n")
        tally.inputs += 1
        if answer.startswith(b"HTTP/1.1 5"):
            tally.server_errors.append(f"raw {junk[:40]!r} -> {answer[:12]!r}")

    malformed()


async def test_hostile_requests_get_4xx_and_no_traceback(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    cluster.server.load(
        [node("node-1"), storage_class("local"), local_pv("pv-1", "node-1"), claim("c1")]
    )
    workload = pod("web", ("c1",))
    workload["spec"]["schedulerName"] = "default-scheduler"
    cluster.server.load([workload])
    daemon = await cluster.start_daemon()
    await eventually(lambda: "default/web" in daemon.cluster.pods, what="pod in cache")
    caplog.set_level(logging.DEBUG, logger="volsched")
    tally = Tally()
    await asyncio.to_thread(fuzz, daemon.http_port, cluster.pod("web"), tally)
    tracebacks = [
        r
        for r in caplog.records
        if r.name.startswith(("volsched", "aiohttp")) and (r.exc_info or r.stack_info)
    ]
    print(
        f"\nHTTP fuzz: {tally.inputs} inputs, {len(tally.server_errors)} 5xx, "
        f"{len(tracebacks)} tracebacks"
    )
    assert tally.inputs >= EXAMPLES
    assert tally.server_errors == []
    assert tracebacks == []
