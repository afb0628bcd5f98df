"""``volsched demo`` end to end: every pod but the oversized one placed, replicas shown,
the pending pod explained."""

from __future__ import annotations

import io
import time

from volsched.daemon.cli.demo import run_demo


async def test_demo_places_everything_but_the_warehouse() -> None:
    out = io.StringIO()
    started = time.monotonic()
    status = await run_demo(out)
    elapsed = time.monotonic() - started
    text = out.getvalue()
    assert status == 0, text
    assert elapsed < 30
    assert "10/11 pods placed" in text
    pending = [line for line in text.splitlines() if line.startswith("shop/warehouse-0")]
    assert pending and "<pending>" in pending[0]
    assert "0/9 nodes are available: 9 node(s) did not have enough free storage." in pending[0]
    postgres = [line for line in text.splitlines() if line.startswith("shop/postgres-0")]
    # Three replicas, in three zones, one of them on the pod's own node (best-effort).
    replicas = postgres[0].split("[", 1)[1].rstrip("]").split(", ")
    assert len(replicas) == 3
    assert len({r.split("/")[0][-2] for r in replicas}) == 3
    node = postgres[0].split()[1]
    assert any(r.startswith(node + "/") for r in replicas)
