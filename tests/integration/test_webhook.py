"""The scheduler-routing webhook as the API server calls it: real AdmissionReview v1
bodies over HTTPS (with the ``timeout`` parameter kube-apiserver adds), its caches filled
by list+watch from the emulator, claims its watch has not brought yet read from the API
server, certificates rotated on disk."""

from __future__ import annotations

import asyncio
import base64
import gzip
import io
import json
import logging
import ssl
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.integration.conftest import ROOT, Cluster, eventually
from volsched.cache.errors import ConfigError
from volsched.daemon.http.tls_files import ReloadingTLS
from volsched.daemon.http.webhook import RoutingWebhook, lookup_deadline
from volsched.daemon.kube.client import KubeClient
from volsched.scheduling.routing import RoutingRules

Raw = dict[str, Any]


def certificate(directory: Path, common_name: str) -> tuple[Path, Path]:
    cert, key = directory / "tls.crt", directory / "tls.key"
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", f"/CN={common_name}", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", str(key), "-out", str(cert),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    return cert, key


def storage_class(name: str, provisioner: str, default: bool = False) -> Raw:
    annotations = {"storageclass.kubernetes.io/is-default-class": "true"} if default else {}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name, "annotations": annotations},
        "provisioner": provisioner,
        "volumeBindingMode": "WaitForFirstConsumer",
    }


def claim(name: str, class_name: str | None, volume: str = "") -> Raw:
    spec: Raw = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}
    if class_name is not None:
        spec["storageClassName"] = class_name
    if volume:
        spec["volumeName"] = volume
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": "shop"},
        "spec": spec,
    }


LONGHORN_PV = {
    "apiVersion": "v1",
    "kind": "PersistentVolume",
    "metadata": {"name": "pvc-lh-1"},
    "spec": {
        "capacity": {"storage": "1Gi"},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": "",
        "csi": {"driver": "driver.longhorn.io", "volumeHandle": "pvc-lh-1"},
        "claimRef": {"namespace": "shop", "name": "static-longhorn"},
    },
}

OBJECTS = [
    storage_class("local-nvme", "kubernetes.io/no-provisioner"),
    storage_class("replicated", "replicated.volsched.io"),
    storage_class("standard", "ebs.csi.aws.com", default=True),
    LONGHORN_PV,
    claim("db-data", "local-nvme"),
    claim("cache", "replicated"),
    claim("logs", "standard"),
    claim("defaulted", None),
    claim("static-longhorn", "", volume="pvc-lh-1"),
]

RULES = RoutingRules(
    scheduler_name="volsched",
    storage_classes=frozenset({"local-nvme"}),
    provisioners=frozenset({"replicated.volsched.io", "driver.longhorn.io"}),
)


def pod(
    volumes: list[Raw],
    scheduler: str | None = None,
    labels: Raw | None = None,
    name: str | None = None,
) -> Raw:
    spec: Raw = {"containers": [{"name": "main", "image": "busybox"}], "volumes": volumes}
    if scheduler is not None:
        spec["schedulerName"] = scheduler
    metadata: Raw = {"namespace": "shop", "labels": labels or {}}
    if name is not None:
        metadata["name"] = name  # a StatefulSet's pod
    else:
        metadata["generateName"] = "web-"
    return {"apiVersion": "v1", "kind": "Pod", "metadata": metadata, "spec": spec}


def claim_volume(name: str) -> Raw:
    return {"name": name, "persistentVolumeClaim": {"claimName": name}}


def ephemeral(class_name: str) -> Raw:
    template = {"spec": {"storageClassName": class_name, "accessModes": ["ReadWriteOnce"]}}
    return {"name": "scratch", "ephemeral": {"volumeClaimTemplate": template}}


def admission(obj: Raw, uid: str = "7f6c1a2e") -> Raw:
    return {
        "apiVersion": "admission.k8s.io/v1",
        "kind": "AdmissionReview",
        "request": {
            "uid": uid,
            "kind": {"group": "", "version": "v1", "kind": "Pod"},
            "resource": {"group": "", "version": "v1", "resource": "pods"},
            "namespace": "shop",
            "operation": "CREATE",
            "object": obj,
        },
    }


# What kube-apiserver adds to the webhook's URL: its timeoutSeconds, as deploy/ sets it.
API_SERVER_TIMEOUT = "?timeout=3s"


class Webhook:
    def __init__(self, url: str, cafile: Path) -> None:
        self.url = url
        self.ssl = ssl.create_default_context(cafile=str(cafile))

    async def post(
        self, body: Any, raw: bytes | None = None, headers: dict[str, str] | None = None
    ) -> tuple[int, Raw]:
        data = raw if raw is not None else json.dumps(body).encode()
        async with (
            aiohttp.ClientSession() as session,
            session.post(
                self.url + "/mutate-pods" + API_SERVER_TIMEOUT,
                data=io.BytesIO(data),
                headers={"Content-Type": "application/json", **(headers or {})},
                ssl=self.ssl,
            ) as response,
        ):
            return response.status, await response.json()


@pytest.fixture
async def webhook(
    cluster: Cluster, tmp_path: Path
) -> AsyncIterator[tuple[Webhook, RoutingWebhook]]:
    cluster.server.load(OBJECTS)
    cert, key = certificate(tmp_path, "volsched-webhook")
    client = await KubeClient.connect(str(cluster.kubeconfig))
    server = RoutingWebhook(client, RULES, ReloadingTLS(str(cert), str(key), check_seconds=0.1))
    port = await server.start("127.0.0.1:0")
    try:
        await eventually(lambda: all(w.state.synced for w in server.watchers), what="caches synced")
        yield Webhook(f"https://127.0.0.1:{port}", cert), server
    finally:
        await server.stop()
        await client.close()


def patched_scheduler(answer: Raw) -> str | None:
    response = answer["response"]
    if "patch" not in response:
        return None
    assert response["patchType"] == "JSONPatch"
    (operation,) = json.loads(base64.b64decode(response["patch"]))
    assert operation["path"] == "/spec/schedulerName"
    return str(operation["value"])


@pytest.mark.parametrize(
    ("obj", "expected"),
    [
        pytest.param(pod([claim_volume("db-data")]), "volsched", id="a listed class"),
        pytest.param(pod([claim_volume("cache")]), "volsched", id="a listed provisioner"),
        pytest.param(
            pod([claim_volume("static-longhorn")]), "volsched", id="bound to a listed CSI driver"
        ),
        pytest.param(pod([ephemeral("replicated")]), "volsched", id="an ephemeral claim template"),
        pytest.param(
            pod([claim_volume("logs"), claim_volume("db-data")]),
            "volsched",
            id="one volume of several",
        ),
        pytest.param(
            pod([claim_volume("db-data")], scheduler="default-scheduler"),
            "volsched",
            id="the default scheduler named explicitly",
        ),
        pytest.param(pod([claim_volume("logs")]), None, id="another class"),
        pytest.param(pod([claim_volume("defaulted")]), None, id="the default class is not ours"),
        pytest.param(pod([claim_volume("missing")]), None, id="an unknown claim"),
        pytest.param(pod([]), None, id="no volumes"),
        pytest.param(
            pod([claim_volume("db-data")], scheduler="gpu-scheduler"),
            None,
            id="another scheduler is left alone",
        ),
        pytest.param(
            pod([claim_volume("db-data")], labels={"volsched.io/scheduler-routing": "disabled"}),
            None,
            id="opted out",
        ),
    ],
)
async def test_admission_reviews(
    webhook: tuple[Webhook, RoutingWebhook], obj: Raw, expected: str | None
) -> None:
    client, _ = webhook
    status, answer = await client.post(admission(obj))
    assert status == 200
    assert answer["apiVersion"] == "admission.k8s.io/v1"
    assert answer["kind"] == "AdmissionReview"
    assert answer["response"]["uid"] == "7f6c1a2e"
    assert answer["response"]["allowed"] is True
    assert patched_scheduler(answer) == expected


async def test_claims_created_later_are_seen(
    webhook: tuple[Webhook, RoutingWebhook], cluster: Cluster
) -> None:
    client, _ = webhook
    cluster.server.load([claim("late", "local-nvme")])
    await eventually(
        lambda: webhook[1].cluster.pvcs.get("shop/late") is not None, what="watch delivered"
    )
    _, answer = await client.post(admission(pod([claim_volume("late")])))
    assert patched_scheduler(answer) == "volsched"


CLAIMS = "/api/v1/namespaces/shop/persistentvolumeclaims"
LOGGER = "volsched.daemon.http.webhook"


async def test_claims_created_just_before_their_pods_are_routed_while_the_watch_lags(
    webhook: tuple[Webhook, RoutingWebhook], cluster: Cluster
) -> None:
    """A StatefulSet's way: each claim is created, and its pod is admitted the moment the
    API server has answered, while the API server is busy with hundreds of other claim
    creations and the webhook's watch has fallen behind (nothing reaches its cache). The
    webhook reads each claim it does not know before it decides: every pod is routed."""
    client, server = webhook
    cluster.server.faults.stall_watches(60)
    async with aiohttp.ClientSession(cluster.server.url) as api:

        async def create(name: str) -> None:
            async with api.post(CLAIMS, json=claim(name, "local-nvme")) as response:
                assert response.status == 201, await response.text()

        async def stateful_pod(ordinal: int) -> str | None:
            await create(f"data-web-{ordinal}")
            volume = {"name": "data", "persistentVolumeClaim": {"claimName": f"data-web-{ordinal}"}}
            _, answer = await client.post(admission(pod([volume], name=f"web-{ordinal}")))
            return patched_scheduler(answer)

        busy = [create(f"bulk-{n}") for n in range(600)]
        results = await asyncio.gather(*(stateful_pod(i) for i in range(100)), *busy)
    routed = results[:100]
    assert routed.count("volsched") == 100, routed
    assert server.cluster.pvcs.get("shop/data-web-99") is not None
    assert server.looked_up == 100 and server.lookups_failed == 0


async def test_a_claim_read_that_runs_out_of_time_is_logged_with_the_pod(
    webhook: tuple[Webhook, RoutingWebhook],
    cluster: Cluster,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The API server takes too long to answer the read: the webhook answers in time
    (within the API server's 3 s), leaves the pod unchanged, and says which pod."""
    client, server = webhook
    cluster.server.faults.stall_watches(60)
    cluster.server.load([claim("data-db-0", "local-nvme")])
    cluster.server.faults.delay_next("GET", r"/persistentvolumeclaims/data-db-0$", 10)
    caplog.set_level(logging.INFO, logger=LOGGER)
    loop = asyncio.get_running_loop()
    started = loop.time()
    volume = {"name": "data", "persistentVolumeClaim": {"claimName": "data-db-0"}}
    _, answer = await client.post(admission(pod([volume], name="db-0")))
    assert loop.time() - started < 2.5
    assert patched_scheduler(answer) is None
    [warning] = [r for r in caplog.records if r.name == LOGGER and r.levelno >= logging.WARNING]
    assert warning.getMessage() == (
        "pod shop/db-0 not routed to volsched and left to default-scheduler: "
        "reading claim shop/data-db-0 timed out after 1.5s"
    )
    assert server.lookups_failed == 1


async def test_a_claim_that_does_not_exist_is_logged_with_the_pod(
    webhook: tuple[Webhook, RoutingWebhook], caplog: pytest.LogCaptureFixture
) -> None:
    client, _ = webhook
    caplog.set_level(logging.INFO, logger=LOGGER)
    volume = {"name": "data", "persistentVolumeClaim": {"claimName": "never-made"}}
    _, answer = await client.post(admission(pod([volume], name="lonely-0")))
    assert patched_scheduler(answer) is None
    assert [r.getMessage() for r in caplog.records if r.name == LOGGER] == [
        "pod shop/lonely-0 not routed to volsched: claim shop/never-made not found"
    ]


def test_the_read_takes_at_most_half_the_api_servers_timeout() -> None:
    assert lookup_deadline("3s", 1.5) == 1.5
    assert lookup_deadline("1s", 1.5) == 0.5
    assert lookup_deadline("10s", 1.5) == 1.5
    assert lookup_deadline(None, 1.5) == 1.5
    assert lookup_deadline("soon", 1.5) == 1.5


def with_object(changes: Raw) -> Raw:
    """A Pod AdmissionReview whose pod has fields replaced (``a.b`` paths)."""
    body = admission(pod([ephemeral("replicated")]), uid="u")
    for path, value in changes.items():
        *parents, last = path.split(".")
        target = body["request"]
        for part in parents:
            target = target[part] if not part.isdigit() else target[int(part)]
        target[last] = value
    return body


@pytest.mark.parametrize(
    ("changes", "warning"),
    [
        ({"object.metadata": []}, "request.object.metadata is not an object"),
        ({"object.metadata": "web"}, "request.object.metadata is not an object"),
        ({"object.metadata.labels": ["a"]}, "request.object.metadata.labels is not an object"),
        ({"object.metadata.namespace": 3}, "request.object.metadata.namespace is not a string"),
        ({"object.spec": "x"}, "request.object.spec is not an object"),
        ({"object.spec.schedulerName": {}}, "request.object.spec.schedulerName is not a string"),
        ({"object.spec.volumes": {}}, "request.object.spec.volumes is not a list"),
        ({"object.spec.volumes": [1]}, "request.object.spec.volumes[0] is not an object"),
        (
            {"object.spec.volumes.0.ephemeral.volumeClaimTemplate": []},
            "request.object.spec.volumes[0].ephemeral.volumeClaimTemplate is not an object",
        ),
        (
            {"object.spec.volumes.0.ephemeral.volumeClaimTemplate": "c"},
            "request.object.spec.volumes[0].ephemeral.volumeClaimTemplate is not an object",
        ),
        (
            {"object.spec.volumes.0.ephemeral": ["c"]},
            "request.object.spec.volumes[0].ephemeral is not an object",
        ),
        (
            {"object.spec.volumes.0.ephemeral.volumeClaimTemplate.spec": 1},
            "request.object.spec.volumes[0].ephemeral.volumeClaimTemplate.spec is not an object",
        ),
        (
            {"object.spec.volumes.0.ephemeral.volumeClaimTemplate.spec.storageClassName": 1},
            "request.object.spec.volumes[0].ephemeral.volumeClaimTemplate.spec.storageClassName"
            " is not a string",
        ),
        (
            {"object.spec.volumes.0.persistentVolumeClaim": "db-data"},
            "request.object.spec.volumes[0].persistentVolumeClaim is not an object",
        ),
        (
            {"object.spec.volumes.0.persistentVolumeClaim": {"claimName": 1}},
            "request.object.spec.volumes[0].persistentVolumeClaim.claimName is not a string",
        ),
        ({"namespace": ["shop"]}, "request.namespace is not a string"),
    ],
)
async def test_a_pod_of_the_wrong_shape_is_allowed_with_a_warning(
    webhook: tuple[Webhook, RoutingWebhook], changes: Raw, warning: str
) -> None:
    client, _ = webhook
    status, answer = await client.post(with_object(changes))
    assert status == 200
    assert answer["response"]["uid"] == "u"
    assert answer["response"]["allowed"] is True
    assert "patch" not in answer["response"]
    assert answer["response"]["warnings"] == [f"volsched routing: {warning}; pod left unchanged"]


@pytest.mark.parametrize(
    ("body", "raw", "warning"),
    [
        (
            {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview"},
            None,
            "not an AdmissionReview request",
        ),
        (None, b"{not json", "not JSON"),
        (
            {**admission(pod([])), "apiVersion": "admission.k8s.io/v1beta1"},
            None,
            "expected admission.k8s.io/v1 AdmissionReview",
        ),
        (
            {
                "apiVersion": "admission.k8s.io/v1",
                "kind": "AdmissionReview",
                "request": {"uid": "u", "kind": {"kind": "Pod"}, "object": "?"},
            },
            None,
            "the request holds no Pod",
        ),
    ],
)
async def test_a_malformed_request_is_allowed_with_a_warning(
    webhook: tuple[Webhook, RoutingWebhook], body: Any, raw: bytes | None, warning: str
) -> None:
    client, _ = webhook
    status, answer = await client.post(body, raw)
    assert status == 200
    assert answer["response"]["allowed"] is True
    assert "patch" not in answer["response"]
    assert any(warning in text for text in answer["response"]["warnings"])


@pytest.mark.parametrize(
    ("raw", "headers", "warning"),
    [
        (b"{}", {"Content-Encoding": "gzip"}, "request body is not valid gzip data"),
        (b"{}", {"Content-Encoding": "br"}, "Content-Encoding 'br' is not accepted"),
        (
            gzip.compress(b" " * (4 * 1024 * 1024)),
            {"Content-Encoding": "gzip"},
            "too large: more than 3,145,728 bytes once gzip is undone",
        ),
        (b" " * (4 * 1024 * 1024), {}, "too large: more than 3,145,728 bytes"),
        (b"[" + b"{}," * 1_000_000 + b"{}]", {}, "MiB to decode, more than the 64 MiB allowed"),
    ],
)
async def test_a_body_it_cannot_read_is_allowed_with_a_warning(
    webhook: tuple[Webhook, RoutingWebhook], raw: bytes, headers: dict[str, str], warning: str
) -> None:
    client, _ = webhook
    status, answer = await client.post(None, raw, headers)
    assert status == 200
    assert answer["response"]["allowed"] is True
    assert "patch" not in answer["response"]
    (text,) = answer["response"]["warnings"]
    assert warning in text and "\n" not in text


async def test_rotated_certificate_is_served(
    webhook: tuple[Webhook, RoutingWebhook], tmp_path: Path
) -> None:
    client, server = webhook
    assert server.tls is not None
    rotated = tmp_path / "rotated"
    rotated.mkdir()
    cert, key = certificate(rotated, "volsched-webhook-rotated")
    Path(server.tls.cert_file).write_bytes(cert.read_bytes())
    Path(server.tls.key_file).write_bytes(key.read_bytes())
    await eventually(lambda: server.tls is not None and server.tls.reloads == 1, what="reload")
    # The old CA no longer verifies the server; the new one does.
    with pytest.raises(aiohttp.ClientConnectorCertificateError):
        await client.post(admission(pod([])))
    status, _ = await Webhook(client.url, cert).post(admission(pod([])))
    assert status == 200


async def test_half_written_files_keep_the_old_certificate(
    webhook: tuple[Webhook, RoutingWebhook],
) -> None:
    client, server = webhook
    assert server.tls is not None
    Path(server.tls.key_file).write_text("-----BEGIN PRIVATE KEY-----\ntruncated")
    await asyncio.sleep(0.4)
    assert server.tls.reloads == 0
    status, _ = await client.post(admission(pod([])))
    assert status == 200


async def test_a_port_in_use_is_one_error_naming_the_setting(
    webhook: tuple[Webhook, RoutingWebhook], cluster: Cluster
) -> None:
    address = webhook[0].url.removeprefix("https://")
    client = await KubeClient.connect(str(cluster.kubeconfig))
    second = RoutingWebhook(client, RULES, None)
    try:
        with pytest.raises(ConfigError, match=f"^webhook.address: cannot listen on {address}: "):
            await second.start(address)
    finally:
        await second.stop()
        await client.close()


def test_the_command_needs_a_certificate(tmp_path: Path) -> None:
    completed = subprocess.run(
        [sys.executable, "-m", "volsched", "webhook", "--kubeconfig", str(tmp_path / "none")],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert completed.returncode == 2
    assert completed.stderr.strip().splitlines() == [
        "volsched: webhook: the API server calls webhooks over HTTPS only; give "
        "webhook.certFile and webhook.keyFile (or --cert-file and --key-file)"
    ]


# -- names from the request ------------------------------------------------------------
# A mutating webhook sees the pod before the API server validates it (and the API
# server then checks only that a claimName is not empty): a claim name goes into no
# API path unless it can name a claim.


@pytest.mark.parametrize(
    ("claim_name", "namespace", "problem"),
    [
        ("x?watch=true&timeoutSeconds=5", "shop", "must be a lowercase RFC 1123 subdomain"),
        ("?limit=1&labelSelector=app%3Dweb", "shop", "must be a lowercase RFC 1123 subdomain"),
        ("a/b/c", "shop", "must be a lowercase RFC 1123 subdomain"),
        ("..", "shop", "must be a lowercase RFC 1123 subdomain"),
        (".", "shop", "must be a lowercase RFC 1123 subdomain"),
        ("../../../nodes", "shop", "must be a lowercase RFC 1123 subdomain"),
        ("Data", "shop", "must be a lowercase RFC 1123 subdomain"),
        ("a" * 254, "shop", "must be no more than 253 characters"),
        ("data", "a/b", "namespace must be a lowercase RFC 1123 label"),
        ("data", "kube-system/../shop", "namespace must be a lowercase RFC 1123 label"),
    ],
    ids=["watch", "list", "slashes", "dot-dot", "dot", "climb", "upper", "long", "ns", "ns-climb"],
)
async def test_a_claim_name_no_claim_can_have_is_never_read(
    webhook: tuple[Webhook, RoutingWebhook],
    cluster: Cluster,
    caplog: pytest.LogCaptureFixture,
    claim_name: str,
    namespace: str,
    problem: str,
) -> None:
    """It cannot exist, so it cannot be found: the pod is left unchanged with a warning
    saying why, and the API server is asked nothing (the webhook's watches are
    cluster-wide; any request under a namespace would be the lookup)."""
    client, server = webhook
    caplog.set_level(logging.INFO, logger=LOGGER)
    body = admission(pod([{"name": "d", "persistentVolumeClaim": {"claimName": claim_name}}]))
    body["request"]["namespace"] = namespace
    status, answer = await client.post(body)
    assert status == 200
    response = answer["response"]
    assert response["allowed"] is True and "patch" not in response
    (warning,) = response["warnings"]
    assert warning.startswith("volsched routing: no PersistentVolumeClaim can be named '")
    assert warning.endswith(f"({problem}); pod left unchanged")
    assert len(warning) <= 256
    assert cluster.server.faults.requests(path_regex="/namespaces/") == []
    assert server.lookups_failed == 0
    [line] = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert line.startswith(f"pod {namespace}/") and problem in line


async def test_a_valid_claim_beside_an_invalid_one_is_still_read_and_routes(
    webhook: tuple[Webhook, RoutingWebhook], cluster: Cluster
) -> None:
    client, _ = webhook
    cluster.server.faults.stall_watches(60)
    cluster.server.load([claim("fresh", "local-nvme")])
    volumes = [claim_volume("fresh"), {"name": "x", "persistentVolumeClaim": {"claimName": "a/b"}}]
    _, answer = await client.post(admission(pod(volumes, name="web-0")))
    assert patched_scheduler(answer) == "volsched"
    assert [r.path for r in cluster.server.faults.requests(path_regex="/namespaces/")] == [
        f"{CLAIMS}/fresh"
    ]


HUGE = "b" * 200_000


@pytest.mark.parametrize(
    "changes",
    [
        {"object.metadata.name": HUGE},
        {"object.metadata.name": "web-0\nFORGED volsched: all pods routed"},
        {"object.spec.volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": HUGE}}]},
        {"namespace": HUGE},
    ],
    ids=["pod name", "newline in name", "claim name", "namespace"],
)
async def test_log_lines_show_at_most_a_bounded_part_of_a_name(
    webhook: tuple[Webhook, RoutingWebhook],
    caplog: pytest.LogCaptureFixture,
    changes: Raw,
) -> None:
    client, _ = webhook
    caplog.set_level(logging.DEBUG, logger=LOGGER)
    body = admission(pod([claim_volume("never-made")], name="web-0"))
    for key, value in changes.items():
        *parents, last = key.split(".")
        target = body["request"]
        for part in parents:
            target = target[part]
        target[last] = value
    status, answer = await client.post(body)
    assert status == 200 and answer["response"]["allowed"] is True
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert lines
    for line in lines:
        assert len(line) < 1000 and "\n" not in line, line[:300]
    for warning in answer["response"].get("warnings", []):
        assert len(warning) <= 256
