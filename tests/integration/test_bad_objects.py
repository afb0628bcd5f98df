"""One bad object fails one pod, not the loop: a node view no plugin can read (as a
damaged stored snapshot could hold) is passed over and named once in the log, a pod view
that breaks a plugin gets SchedulerError and backoff, and every well-formed pod is still
placed while /readyz stays green."""

from __future__ import annotations

import dataclasses
import logging

import aiohttp
import pytest

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import node, pod
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.runtime.app import open_daemon


async def test_damaged_views_fail_only_themselves(
    cluster: Cluster, caplog: pytest.LogCaptureFixture
) -> None:
    cluster.server.load([node("good", "zone-a", cpu="8"), node("damaged", "zone-b", cpu="8")])
    daemon = await cluster.start_daemon()
    info = daemon.cluster.nodes["damaged"]
    daemon.cluster.upsert("Node", dataclasses.replace(info.node, allocatable=None))

    caplog.set_level(logging.WARNING, logger="volsched")
    # A pod that waits (no node has its label), whose view then turns unreadable.
    odd = pod("odd")
    odd["spec"]["nodeSelector"] = {"disk": "none"}
    cluster.server.load([pod(f"web-{i}") for i in range(5)] + [odd])
    await eventually(
        lambda: any(e["reason"] == "FailedScheduling" for e in cluster.events_for("odd")),
        what="odd pending",
    )
    view = daemon.cluster.pods["default/odd"]
    meta = dataclasses.replace(view.meta, resource_version=view.meta.resource_version + 1000)
    daemon.ingest.apply_view("Pod", dataclasses.replace(view, meta=meta, requests=None))

    await eventually(
        lambda: all(cluster.node_of(f"web-{i}") == "good" for i in range(5)),
        what="the well-formed pods placed",
    )

    def errors() -> list[str]:
        # The condition has the latest message; the event's series keeps its first note.
        conditions = cluster.pod("odd").get("status", {}).get("conditions") or []
        return [
            c["message"]
            for c in conditions
            if c.get("type") == "PodScheduled"
            and c.get("message", "").startswith("running PreFilter plugins: AttributeError")
        ]

    await eventually(errors, what="the odd pod's error")
    named = [r.getMessage() for r in caplog.records if "could not be evaluated" in r.getMessage()]
    assert len(named) == 1 and named[0].startswith("node damaged could not be evaluated")

    assert daemon.loop.running
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"http://127.0.0.1:{daemon.http_port}/readyz?verbose") as response,
    ):
        body = await response.text()
    assert response.status == 200, body
    assert "[+]scheduling ok" in body


async def test_readyz_waits_for_the_end_of_start_up(cluster: Cluster) -> None:
    """/readyz passes only once start-up is over, when ``volsched ready`` is logged."""
    cluster.server.load([node("n1", "zone-a")])
    client = await KubeClient.connect(str(cluster.kubeconfig))
    daemon = await open_daemon(cluster.settings(), client)
    try:
        ready = {check.name: check for check in daemon.health().ready}
        assert ready["startup"].probe() == "starting"
        await daemon.start()
        assert ready["startup"].probe() is None
        assert all(check.probe() is None for check in daemon.health().ready)
    finally:
        await daemon.stop()
        await client.close()
