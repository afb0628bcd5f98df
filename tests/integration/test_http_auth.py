"""Who may call the daemon: the extender verbs and /metrics need a caller the API server
vouches for (TokenReview) and allows (SubjectAccessReview); probes stay anonymous. The
Helm chart's ServiceMonitor scrapes /metrics with what it renders."""

from __future__ import annotations

import asyncio
import ssl
from dataclasses import replace
from pathlib import Path
from typing import Any

import aiohttp
import pytest

from tests.deploy.helm_binary import helm_binary
from tests.deploy.test_helm import key, render, settings_of
from tests.integration.certificates import client_pair, serving_pair
from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import claim, local_pv, node, pod, storage_class
from volsched.cache.errors import ConfigError
from volsched.daemon.config.settings import AuthSettings, HttpSettings
from volsched.daemon.http.tls import self_signed_pair
from volsched.daemon.runtime.app import Daemon
from volsched.emulator import User

SCHEDULER = "scheduler-token"
SCRAPER = "scraper-token"
NOBODY = "nobody-token"
VERBS = ("filter", "prioritize", "bind", "preempt")


def grant(cluster: Cluster) -> None:
    access = cluster.server.access
    access.tokens[SCHEDULER] = User("system:kube-scheduler", uid="u-1")
    access.tokens[SCRAPER] = User("system:serviceaccount:monitoring:prometheus")
    access.tokens[NOBODY] = User("nobody", groups=("team-a",))
    access.allow("system:kube-scheduler", "/scheduler/*", "post")
    access.allow("system:serviceaccount:monitoring:prometheus", "/metrics", "get")


async def start(cluster: Cluster, auth: AuthSettings | None = None) -> Daemon:
    grant(cluster)
    cluster.server.load(
        [
            node("node-1", "zone-a"),
            storage_class("local"),
            local_pv("pv-1", "node-1"),
            claim("c1"),
        ]
    )
    workload = pod("web", ("c1",))
    workload["spec"]["schedulerName"] = "default-scheduler"
    cluster.server.load([workload])
    settings = cluster.settings(http=HttpSettings("127.0.0.1:0", auth or AuthSettings()))
    daemon = await cluster.start_daemon(settings)
    await eventually(lambda: "default/web" in daemon.cluster.pods, what="pod in cache")
    return daemon


def bodies(cluster: Cluster) -> dict[str, Any]:
    web = cluster.pod("web")
    return {
        "filter": {"Pod": web, "NodeNames": ["node-1"]},
        "prioritize": {"Pod": web, "NodeNames": ["node-1"]},
        "bind": {"PodName": "web", "PodNamespace": "default", "Node": "node-1"},
        "preempt": {"Pod": web, "NodeNameToMetaVictims": {}},
    }


async def call(
    daemon: Daemon, method: str, path: str, token: str | None = None, body: Any = None
) -> tuple[int, str]:
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    url = f"https://127.0.0.1:{daemon.http_port}{path}"
    async with (
        aiohttp.ClientSession() as session,
        session.request(method, url, headers=headers, json=body, ssl=False) as response,
    ):
        return response.status, await response.text()


@pytest.mark.parametrize(
    ("token", "status"), [(None, 401), ("made-up", 401), (NOBODY, 403), (SCRAPER, 403)]
)
async def test_extender_verbs_refuse_unknown_and_unauthorised_callers(
    cluster: Cluster, token: str | None, status: int
) -> None:
    daemon = await start(cluster)
    for verb, body in bodies(cluster).items():
        got, text = await call(daemon, "POST", f"/scheduler/{verb}", token, body)
        assert got == status, (verb, text)
    assert cluster.node_of("web") is None
    volume = cluster.server.get("PersistentVolume", "pv-1")
    assert volume is not None and not volume["spec"].get("claimRef")


async def test_authorised_scheduler_gets_answers_and_binds(cluster: Cluster) -> None:
    daemon = await start(cluster)
    requests = bodies(cluster)
    status, text = await call(daemon, "POST", "/scheduler/filter", SCHEDULER, requests["filter"])
    assert status == 200 and '"NodeNames": ["node-1"]' in text
    status, text = await call(daemon, "POST", "/scheduler/bind", SCHEDULER, requests["bind"])
    assert status == 200 and '"Error": ""' in text
    assert cluster.node_of("web") == "node-1"
    # The answers are cached: one TokenReview for the token, one review per path.
    kinds = [kind for kind, _ in cluster.server.access.reviews]
    assert kinds.count("TokenReview") == 1
    assert kinds.count("SubjectAccessReview") == 2


async def test_metrics_need_the_scraper_and_health_is_anonymous(cluster: Cluster) -> None:
    daemon = await start(cluster)
    assert (await call(daemon, "GET", "/metrics"))[0] == 401
    assert (await call(daemon, "GET", "/metrics", NOBODY))[0] == 403
    status, text = await call(daemon, "GET", "/metrics", SCRAPER)
    assert status == 200 and "volsched_" in text
    for path in ("/healthz", "/livez", "/readyz"):
        status, text = await call(daemon, "GET", path)
        assert status == 200 and text == "ok"


async def test_client_certificates_from_the_configured_ca(cluster: Cluster, tmp_path: Path) -> None:
    ca_cert, client_cert, client_key = client_pair(tmp_path, "system:kube-scheduler")
    daemon = await start(cluster, AuthSettings(client_ca_file=str(ca_cert)))
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    context.load_cert_chain(client_cert, client_key)
    url = f"https://127.0.0.1:{daemon.http_port}/scheduler/filter"
    async with (
        aiohttp.ClientSession() as session,
        session.post(url, json=bodies(cluster)["filter"], ssl=context) as response,
    ):
        assert response.status == 200


async def served_certificate(port: int) -> bytes:
    context = ssl.create_default_context()
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    _, writer = await asyncio.open_connection("127.0.0.1", port, ssl=context)
    try:
        der = writer.get_extra_info("ssl_object").getpeercert(binary_form=True)
    finally:
        writer.close()
        await writer.wait_closed()
    assert der
    return bytes(der)


async def test_a_renewed_certificate_is_served_without_restart(
    cluster: Cluster, tmp_path: Path
) -> None:
    first = tmp_path / "first"
    first.mkdir()
    cert, key = self_signed_pair(first, ["127.0.0.1"])
    daemon = await start(cluster, AuthSettings(cert_file=str(cert), key_file=str(key)))
    before = await served_certificate(daemon.http_port)
    second = tmp_path / "second"
    second.mkdir()
    new_cert, new_key = self_signed_pair(second, ["127.0.0.1"])
    new_key.replace(key)
    new_cert.replace(cert)
    after = await served_certificate(daemon.http_port)
    assert after != before
    assert after == ssl.PEM_cert_to_DER_cert(cert.read_text())


async def test_authentication_off_is_refused_off_loopback(cluster: Cluster) -> None:
    settings = cluster.settings(http=HttpSettings("0.0.0.0:0", AuthSettings(enabled=False)))
    with pytest.raises(ConfigError, match="loopback"):
        await cluster.start_daemon(replace(settings), lead=False)


async def test_a_flood_of_idle_connections_does_not_keep_probes_out(cluster: Cluster) -> None:
    http = HttpSettings("127.0.0.1:0", AuthSettings(enabled=False), max_connections=8)
    daemon = await cluster.start_daemon(cluster.settings(http=http))
    flood = [await asyncio.open_connection("127.0.0.1", daemon.http_port) for _ in range(40)]
    try:
        for _, writer in flood[:20]:
            writer.write(b"GET /livez HTTP/1.1\r\nHost: x\r\n")  # headers never finished
            await writer.drain()
        url = f"http://127.0.0.1:{daemon.http_port}/livez"
        async with aiohttp.ClientSession() as session, session.get(url) as response:
            assert response.status == 200
        assert len(daemon._runner.server.connections) <= 8  # type: ignore[union-attr]
    finally:
        for _, writer in flood:
            writer.close()


# -- the Helm chart's ServiceMonitor ----------------------------------------------------

NAMESPACE = "volsched-system"
Raw = dict[str, Any]


def _named(items: list[Raw], name: str) -> Raw:
    (found,) = [item for item in items if item.get("name") == name]
    return found


def _ca_of(tls: Raw, secrets: dict[str, dict[str, bytes]]) -> bytes:
    """The CA a ServiceMonitor's tlsConfig names, looked up as prometheus-operator does:
    a key of a Secret (or ConfigMap; none here) in the ServiceMonitor's namespace."""
    ca = tls["ca"]
    return secrets[ca["secret"]["name"]][ca["secret"]["key"]]


async def scrape(endpoint: Raw, port: int, secrets: dict[str, dict[str, bytes]]) -> Any:
    """GET the endpoint as Prometheus does: its scheme (http when unset), its path, the
    token from the Secret key its authorization names, and a TLS check by its tlsConfig."""
    scheme = endpoint.get("scheme", "http")
    headers = {}
    if "authorization" in endpoint:
        credentials = endpoint["authorization"]["credentials"]
        token = secrets[credentials["name"]][credentials["key"]].decode()
        headers["Authorization"] = f"{endpoint['authorization'].get('type', 'Bearer')} {token}"
    tls = endpoint.get("tlsConfig") or {}
    context: ssl.SSLContext | bool = False
    server_hostname = None
    if scheme == "https" and not tls.get("insecureSkipVerify"):
        context = ssl.create_default_context(cadata=_ca_of(tls, secrets).decode())
        server_hostname = tls.get("serverName")
    url = f"{scheme}://127.0.0.1:{port}{endpoint.get('path', '/metrics')}"
    async with (
        aiohttp.ClientSession() as session,
        session.get(url, headers=headers, ssl=context, server_hostname=server_hostname) as got,
    ):
        return got.status, got.headers.get("Content-Type", ""), await got.text()


async def test_the_charts_service_monitor_scrapes_the_daemon(
    cluster: Cluster, tmp_path: Path
) -> None:
    helm, why = helm_binary()
    if helm is None:
        pytest.skip(why)
    objects = {key(o): o for o in render(helm, "--set", "serviceMonitor.enabled=true")}
    monitor = objects[("ServiceMonitor", NAMESPACE, "volsched")]
    (endpoint,) = monitor["spec"]["endpoints"]

    # The endpoint's port is the Service port that leads to the daemon's HTTP address.
    service = objects[("Service", NAMESPACE, "volsched")]
    deployment = objects[("Deployment", NAMESPACE, "volsched")]
    pod_spec = deployment["spec"]["template"]["spec"]
    (container,) = pod_spec["containers"]
    target = _named(service["spec"]["ports"], endpoint["port"])["targetPort"]
    container_port = _named(container["ports"], target)["containerPort"]
    settings = settings_of(objects[("ConfigMap", NAMESPACE, "volsched-config")])
    assert settings.http.address.endswith(f":{container_port}")

    # The serving Secret as cert-manager writes it, mounted where the chart mounts it.
    secret_name = _named(pod_spec["volumes"], "tls")["secret"]["secretName"]
    mount = _named(container["volumeMounts"], "tls")["mountPath"]
    pair = serving_pair([f"volsched.{NAMESPACE}.svc", f"volsched.{NAMESPACE}.svc.cluster.local"])
    secrets = {secret_name: {**pair, "client-ca.crt": pair["ca.crt"]}}
    mounted = tmp_path / "tls"
    mounted.mkdir()
    for file_name, content in secrets[secret_name].items():
        (mounted / file_name).write_bytes(content)

    def on_disk(path: str | None) -> str | None:
        assert path is not None and path.startswith(f"{mount}/"), path
        return str(mounted / path.removeprefix(f"{mount}/"))

    auth = settings.http.authentication
    auth = replace(
        auth,
        cert_file=on_disk(auth.cert_file),
        key_file=on_disk(auth.key_file),
        client_ca_file=on_disk(auth.client_ca_file),
    )

    # The cluster: the chart's /metrics RBAC, and the service accounts it names.
    role = objects[("ClusterRole", "", "volsched-metrics-reader")]
    binding = objects[("ClusterRoleBinding", "", "volsched-metrics-reader")]
    assert role["rules"] == [{"nonResourceURLs": ["/metrics"], "verbs": ["get"]}]
    token_secret = objects[("Secret", NAMESPACE, endpoint["authorization"]["credentials"]["name"])]
    scraper = objects[("ServiceAccount", NAMESPACE, "volsched-metrics-scraper")]
    other = {"apiVersion": "v1", "kind": "ServiceAccount"}
    other["metadata"] = {"name": "other", "namespace": NAMESPACE}
    cluster.server.load([role, binding, scraper, other])

    def with_token_of(account: str) -> dict[str, dict[str, bytes]]:
        # What the token controller writes into a service-account-token Secret.
        token = cluster.server.service_account_token(NAMESPACE, account)
        return {**secrets, token_secret["metadata"]["name"]: {"token": token.encode()}}

    daemon = await cluster.start_daemon(cluster.settings(http=HttpSettings("127.0.0.1:0", auth)))
    annotations = token_secret["metadata"]["annotations"]
    scraping = with_token_of(annotations["kubernetes.io/service-account.name"])
    status, content_type, text = await scrape(endpoint, daemon.http_port, scraping)
    assert status == 200, text
    assert content_type.startswith("text/plain") and "# TYPE " in text and "volsched_" in text
    # RBAC is what lets it in: another service account's token is refused.
    status, _, _ = await scrape(endpoint, daemon.http_port, with_token_of("other"))
    assert status == 403
