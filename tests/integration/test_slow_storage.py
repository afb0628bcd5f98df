"""A provisioner that never answers delays only its own pods: the scheduling cycle never
waits for a binding, and waiting bindings hold no slot."""

from __future__ import annotations

import time

import pytest

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import claim, node, pod, storage_class
from volsched.emulator import ControllerSettings

STUCK = "stuck.example.com"
BIND_TIMEOUT = 8.0


def condition(cluster: Cluster, name: str) -> dict[str, str]:
    found = cluster.server.get("Pod", name, "default") or {}
    for entry in (found.get("status") or {}).get("conditions") or []:
        if entry.get("type") == "PodScheduled":
            return dict(entry)
    return {}


@pytest.mark.parametrize(
    "controllers",
    [
        ControllerSettings(
            pv_bind_delay_seconds=0.1, silent_provisioners=(STUCK,), storage_agent=False
        )
    ],
)
async def test_twenty_stuck_provisions_do_not_hold_up_a_hundred_plain_pods(
    cluster: Cluster, controllers: ControllerSettings
) -> None:
    server = cluster.server
    server.load(
        [node(f"node-{i}", cpu="64") for i in range(3)]
        + [storage_class("stuck", provisioner=STUCK)]
        + [claim(f"c{i}", "stuck") for i in range(20)]
    )
    await cluster.start_daemon(cluster.settings(bind_timeout_seconds=BIND_TIMEOUT))
    started = time.monotonic()
    # The stuck pods first, so that every one of them is binding (waiting) when the
    # plain pods arrive.
    server.load([pod(f"stuck-{i}", (f"c{i}",)) for i in range(20)])
    await eventually(
        lambda: all(cluster.selected_node(f"c{i}") for i in range(20)),
        what="all twenty claims waiting for their provisioner",
    )
    server.load([pod(f"plain-{i}") for i in range(100)])
    await eventually(
        lambda: all(cluster.node_of(f"plain-{i}") for i in range(100)),
        timeout=BIND_TIMEOUT,
        what="the hundred plain pods bound",
    )
    # All of them bound while every stuck binding was still waiting on its provisioner.
    assert time.monotonic() - started < BIND_TIMEOUT
    assert not any(cluster.node_of(f"stuck-{i}") for i in range(20))
    # After bindTimeoutSeconds each stuck pod is rolled back with upstream's reason.
    await eventually(
        lambda: all(
            "timed out waiting for the condition"
            in condition(cluster, f"stuck-{i}").get("message", "")
            for i in range(20)
        ),
        timeout=BIND_TIMEOUT + 10,
        what="the stuck pods' timeout reason",
    )
    assert not any(cluster.node_of(f"stuck-{i}") for i in range(20))
