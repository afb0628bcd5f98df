"""Hostile requests against both HTTP servers, each behind a real socket with the
emulator behind it: the daemon's (health, metrics and the four extender verbs) and the
admission webhook's (``/mutate-pods``, ``/healthz``, ``/readyz``). Every answer is below
500, nothing is logged with a traceback, and every POST to ``/mutate-pods`` is an
AdmissionReview the API server accepts. Requests come from hypothesis: any method and
path, Go-field bodies with mutated values, preemption victims and pods of every wrong
shape, deep nesting, long numbers, invalid UTF-8, bodies that say gzip and are not (or
are), malformed HTTP on the wire.
"""

from __future__ import annotations

import asyncio
import copy
import gzip
import http.client
import json
import logging
import socket
import zlib
from dataclasses import dataclass, field
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.fuzz.sizes import EXAMPLES
from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import claim, local_pv, node, pod, storage_class
from volsched.daemon.http.webhook import RoutingWebhook
from volsched.daemon.kube.client import KubeClient
from volsched.scheduling.routing import RoutingRules

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


# Victim entries as kube-scheduler sends them, and in every shape it does not.
victim_pods = st.one_of(
    json_values,
    st.lists(
        st.one_of(
            json_values,
            st.fixed_dictionaries({"UID": json_values}),
            st.fixed_dictionaries({"metadata": st.one_of(json_values, st.just({"uid": "a"}))}),
        ),
        max_size=3,
    ),
)
victim_entries = st.one_of(
    json_values,
    st.fixed_dictionaries(
        {},
        optional={
            "Pods": victim_pods,
            "pods": victim_pods,
            "NumPDBViolations": st.one_of(json_values, st.integers()),
        },
    ),
)
victims = st.one_of(
    json_values,
    st.dictionaries(st.sampled_from(["node-1", "ghost", ""]), victim_entries, max_size=3),
)
# The bodies the issue found answered with 500.
PREEMPT_500S = [
    {"NodeNameToVictims": {"n1": {"Pods": 5}}},
    {"NodeNameToVictims": {"n1": [1, 2]}},
    {"NodeNameToVictims": {"n1": "x"}},
    {"NodeNameToVictims": {"n1": {"Pods": [1]}}},
    {"NodeNameToMetaVictims": {"n1": {"Pods": 5}}},
    {"NodeNameToMetaVictims": {"n1": [1, 2]}},
]


def preempt_bodies(web: dict[str, Any]) -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.sampled_from(PREEMPT_500S).map(lambda victims: {"Pod": web, **victims}),
        st.fixed_dictionaries(
            {"Pod": st.just(web)},
            optional={"NodeNameToVictims": victims, "NodeNameToMetaVictims": victims},
        ),
    )


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
        preempt_bodies(web).map(lambda b: json.dumps(b).encode()),
        json_values.map(lambda b: json.dumps(b).encode()),
        depth.map(lambda n: b'{"Pod": ' + b"[" * n + b"]" * n + b"}"),
        depth.map(lambda n: b'{"Pod": ' + b"[" * n + b"}"),
        st.integers(4000, 100_000).map(lambda n: b'{"NodeNames": [1' + b"0" * n + b"]}"),
        st.binary(max_size=200),
    )


# How a body is sent: as it is, compressed as its header says, or not compressed at all
# under a header that says it is.
ENCODINGS = ["", "gzip", "deflate", "gzip, not really", "deflate, not really", "br", "x-junk"]


def encoded(body: bytes, encoding: str) -> tuple[bytes, dict[str, str]]:
    name, _, lie = encoding.partition(", ")
    if not name:
        return body, {}
    if lie or name not in ("gzip", "deflate"):
        return body, {"Content-Encoding": name}
    packed = gzip.compress(body) if name == "gzip" else zlib.compress(body)
    return packed, {"Content-Encoding": name}


def send(port: int, method: str, path: str, body: bytes, headers: dict[str, str]) -> int:
    return exchange(port, method, path, body, headers)[0]


def exchange(
    port: int, method: str, path: str, body: bytes, headers: dict[str, str]
) -> tuple[int, bytes]:
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()
        return response.status, response.read()
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


def malformed_bytes(port: int, request_line: bytes, tally: Tally) -> None:
    """Raw bytes, alone or after a request line: never a 5xx."""

    @settings(max_examples=max(EXAMPLES // 5, 20), deadline=None)
    @given(st.binary(max_size=300), st.sampled_from([b"", request_line]))
    def malformed(junk: bytes, prefix: bytes) -> None:
        answer = send_raw(port, prefix + junk + b"\r\n\r\n")
        tally.inputs += 1
        if answer.startswith(b"HTTP/1.1 5"):
            tally.server_errors.append(f"raw {junk[:40]!r} -> {answer[:12]!r}")

    malformed()


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
        encoding=st.sampled_from(ENCODINGS),
    )
    def one(
        method: str, path: str, body: bytes, content_type: str, authorization: str, encoding: str
    ) -> None:
        quoted = "".join(c if 33 <= ord(c) < 127 else f"%{ord(c) & 0xFF:02X}" for c in path)
        body, headers = encoded(body, encoding)
        headers["Content-Type"] = content_type
        if authorization:
            headers["Authorization"] = authorization
        status = send(port, method, quoted, body, headers)
        tally.inputs += 1
        if status >= 500:
            tally.server_errors.append(f"{method} {quoted} -> {status}")

    one()

    # Each verb, posted: the body it expects with fields of every wrong shape.
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        request=st.one_of(
            st.tuples(st.just("preempt"), preempt_bodies(web)),
            st.tuples(st.sampled_from(VERBS), kube_bodies(web)),
        ),
        encoding=st.sampled_from(ENCODINGS),
    )
    def verb(request: tuple[str, dict[str, Any] | bytes], encoding: str) -> None:
        name, body = request
        raw = body if isinstance(body, bytes) else json.dumps(body).encode()
        raw, headers = encoded(raw, encoding)
        status = send(port, "POST", f"/scheduler/{name}", raw, headers)
        tally.inputs += 1
        if status >= 500:
            tally.server_errors.append(f"POST /scheduler/{name} {raw[:60]!r} -> {status}")

    # The requests the issue found answered with 500.
    for victims in PREEMPT_500S:
        verb = example(request=("preempt", {"Pod": web, **victims}), encoding="")(verb)
    for name in VERBS:
        verb = example(request=(name, b'{"Pod": {}}'), encoding="gzip, not really")(verb)
    verb()

    malformed_bytes(port, b"POST /scheduler/filter HTTP/1.1\r\n", tally)


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


# -- the admission webhook ------------------------------------------------------------

WEBHOOK_PATHS = ["/mutate-pods", "/healthz", "/readyz"]
# Fields of the admitted pod (dotted paths under request.object) a hostile caller
# replaces; a real API server has decoded the pod before it calls, so it never does.
POD_FIELDS = [
    "metadata",
    "metadata.labels",
    "metadata.namespace",
    "metadata.name",
    "metadata.generateName",
    "spec",
    "spec.schedulerName",
    "spec.volumes",
    "spec.volumes.0",
    "spec.volumes.0.name",
    "spec.volumes.0.ephemeral",
    "spec.volumes.0.ephemeral.volumeClaimTemplate",
    "spec.volumes.0.ephemeral.volumeClaimTemplate.spec",
    "spec.volumes.0.ephemeral.volumeClaimTemplate.spec.storageClassName",
    "spec.volumes.1",
    "spec.volumes.1.persistentVolumeClaim",
    "spec.volumes.1.persistentVolumeClaim.claimName",
]
REQUEST_FIELDS = ["uid", "kind", "kind.kind", "object", "namespace", "operation"]
wrong_shapes = st.one_of(
    st.sampled_from([[], ["a"], "x", 5, None, {}, True]).map(copy.deepcopy), json_values
)


def admission_review() -> dict[str, Any]:
    template = {"spec": {"storageClassName": "replicated", "accessModes": ["ReadWriteOnce"]}}
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": "7f6c1a2e",
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "namespace": "default",
            "operation": "CREATE",
            "object": {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"generateName": "web-", "namespace": "default", "labels": {}},
                "spec": {
                    "containers": [{"name": "main", "image": "busybox"}],
                    "volumes": [
                        {"name": "scratch", "ephemeral": {"volumeClaimTemplate": template}},
                        {"name": "data", "persistentVolumeClaim": {"claimName": "c1"}},
                    ],
                },
            },
        },
    }


def replaced(body: dict[str, Any], root: str, changes: dict[str, Any]) -> dict[str, Any]:
    """``body`` with the fields at dotted paths under ``root`` replaced, where the path
    still leads somewhere."""
    for path, value in changes.items():
        *parents, last = f"{root}.{path}".split(".") if root else path.split(".")
        target: Any = body
        for part in parents:
            if isinstance(target, list) and part.isdigit() and int(part) < len(target):
                target = target[int(part)]
            elif isinstance(target, dict) and part in target:
                target = target[part]
            else:
                target = None
                break
        if isinstance(target, dict):
            target[last] = value
        elif isinstance(target, list) and last.isdigit() and int(last) < len(target):
            target[int(last)] = value
    return body


def admission_bodies() -> st.SearchStrategy[bytes]:
    pods = st.dictionaries(st.sampled_from(POD_FIELDS), wrong_shapes, min_size=1, max_size=3)
    requests = st.dictionaries(st.sampled_from(REQUEST_FIELDS), wrong_shapes, max_size=2)
    tops = st.dictionaries(st.sampled_from(["apiVersion", "kind", "request"]), json_values)
    return st.one_of(
        pods.map(lambda c: replaced(admission_review(), "request.object", c)),
        requests.map(lambda c: replaced(admission_review(), "request", c)),
        tops.map(lambda c: {**admission_review(), **c}),
    ).map(lambda b: json.dumps(b).encode()) | st.one_of(
        json_values.map(lambda b: json.dumps(b).encode()),
        st.integers(1, 200_000).map(lambda n: b'{"request": ' + b"[" * n + b"]" * n + b"}"),
        st.integers(4000, 100_000).map(lambda n: b'{"request": {"uid": 1' + b"0" * n + b"}}"),
        st.binary(max_size=200),
    )


def admission_answer_problem(status: int, answer: bytes) -> str | None:
    """Why the API server would not take this answer to a POST, or None."""
    if status != 200:
        return f"status {status}"
    try:
        review = json.loads(answer)
        response = review["response"]
        assert review["apiVersion"] == "admission.k8s.io/v1"
        assert review["kind"] == "AdmissionReview"
        assert response["allowed"] is True and isinstance(response["uid"], str)
    except (ValueError, KeyError, TypeError, AssertionError):
        return f"not an AdmissionReview answer: {answer[:80]!r}"
    return None


def fuzz_webhook(port: int, tally: Tally) -> None:
    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    )
    @given(
        method=st.sampled_from(["POST", "POST", "GET", "PUT", "DELETE"]),
        path=st.one_of(st.sampled_from(WEBHOOK_PATHS), st.text(max_size=40).map(lambda t: "/" + t)),
        body=admission_bodies(),
        encoding=st.sampled_from(ENCODINGS),
    )
    def one(method: str, path: str, body: bytes, encoding: str) -> None:
        quoted = "".join(c if 33 <= ord(c) < 127 else f"%{ord(c) & 0xFF:02X}" for c in path)
        body, headers = encoded(body, encoding)
        headers["Content-Type"] = "application/json"
        status, answer = exchange(port, method, quoted, body, headers)
        tally.inputs += 1
        if status >= 500:
            tally.server_errors.append(f"{method} {quoted} -> {status}")
        elif method == "POST" and quoted == "/mutate-pods":
            problem = admission_answer_problem(status, answer)
            if problem is not None:
                tally.server_errors.append(f"{body[:60]!r}: {problem}")

    # The requests the issue found answered with 500.
    for path, value in [
        ("metadata", []),
        ("metadata", "web"),
        ("spec.volumes.0.ephemeral.volumeClaimTemplate", []),
        ("spec.volumes.0.ephemeral.volumeClaimTemplate", "scratch"),
    ]:
        review = json.dumps(replaced(admission_review(), "request.object", {path: value}))
        one = example(method="POST", path="/mutate-pods", body=review.encode(), encoding="")(one)
    one = example(method="POST", path="/mutate-pods", body=b"{}", encoding="gzip, not really")(one)
    one()

    malformed_bytes(port, b"POST /mutate-pods HTTP/1.1\r\n", tally)


async def test_hostile_admission_reviews_are_answered_and_logged_in_one_line(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    cluster.server.load([storage_class("replicated", "replicated.volsched.io"), claim("c1")])
    client = await KubeClient.connect(str(cluster.kubeconfig))
    webhook = RoutingWebhook(client, RoutingRules(scheduler_name="volsched"), None)
    try:
        port = await webhook.start("127.0.0.1:0")
        await eventually(lambda: all(w.state.synced for w in webhook.watchers), what="synced")
        caplog.set_level(logging.DEBUG, logger="volsched")
        tally = Tally()
        await asyncio.to_thread(fuzz_webhook, port, tally)
    finally:
        await webhook.stop()
        await client.close()
    tracebacks = [
        r
        for r in caplog.records
        if r.name.startswith(("volsched", "aiohttp", "asyncio")) and (r.exc_info or r.stack_info)
    ]
    failed = [r for r in caplog.records if "admission review failed" in r.getMessage()]
    print(
        f"\nwebhook fuzz: {tally.inputs} inputs, {len(tally.server_errors)} 5xx or answers "
        f"the API server would refuse, {len(tracebacks)} tracebacks"
    )
    assert tally.inputs >= EXAMPLES
    assert tally.server_errors == []
    assert tracebacks == [] and failed == []
