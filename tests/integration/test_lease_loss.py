"""Only the leader writes. A leader that cannot renew its lease stops leading before a
standby may take over, and from that moment nothing of its reaches the API server: no
binding, no undo of one, no event, no eviction, no extender bind. What it left half done
is the next leader's recovery's to finish, from the intents in the objects."""

from __future__ import annotations

import asyncio
import re
import time

import aiohttp
import pytest

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import claim, node, pod, storage_class
from volsched.emulator import ControllerSettings
from volsched.emulator.faults import WRITE_METHODS

STUCK = "stuck.example.com"
# The lease and the reviews of callers are not decisions' writes.
NOT_DECISIONS = re.compile(r"/leases/|/tokenreviews|/subjectaccessreviews")


@pytest.mark.parametrize(
    "controllers",
    [ControllerSettings(pv_bind_delay_seconds=0.05, silent_provisioners=(STUCK,))],
)
async def test_a_leader_that_lost_its_lease_writes_nothing_more(
    cluster: Cluster, controllers: ControllerSettings
) -> None:
    server = cluster.server
    server.load(
        [node("node-1", cpu="8"), storage_class("stuck", provisioner=STUCK)]
        + [claim(f"c{i}", "stuck") for i in range(10)]
    )
    daemon = await cluster.start_daemon()
    lost_at: list[float] = []
    leading = daemon.elector.leading
    clear = leading.clear

    def lose() -> None:
        lost_at.append(time.monotonic())
        clear()

    leading.clear = lose  # type: ignore[method-assign]

    # A burst: ten bindings waiting on a provisioner that never answers (their claims
    # annotated, each binding cycle holding writes to undo), and pods that cannot fit.
    server.load([pod(f"stuck-{i}", (f"c{i}",)) for i in range(10)])
    server.load([pod(f"huge-{i}", cpu="64") for i in range(5)])
    await eventually(
        lambda: all(cluster.selected_node(f"c{i}") for i in range(10)),
        what="ten bindings waiting",
    )

    # The lease can no longer be renewed (the API server refuses the leader's PUTs).
    server.faults.fail_next("PUT", r"/leases/volsched$", 500, times=10_000)
    await eventually(lambda: bool(lost_at), timeout=10, what="leadership lost")
    # More work arrives, and kube-scheduler calls the extender's bind for a pod.
    server.load([pod("late-1"), pod("late-2", cpu="64")])
    async with (
        aiohttp.ClientSession() as session,
        session.post(
            f"http://127.0.0.1:{daemon.http_port}/scheduler/bind",
            json={"PodName": "late-1", "PodNamespace": "default", "PodUID": "", "Node": "node-1"},
        ) as response,
    ):
        answer = await response.json()
    assert answer.get("Error")
    await asyncio.sleep(1.0)

    writes = [r for r in server.faults.requests() if r.method in WRITE_METHODS]
    decisions = [r for r in writes if not NOT_DECISIONS.search(r.path)]
    assert any(r.received < lost_at[0] for r in decisions), "the burst wrote nothing"
    late = [f"{r.method} {r.path}" for r in decisions if r.received >= lost_at[0]]
    assert late == []
    assert cluster.node_of("late-1") is None
