"""A stored Node view whose allocatable holds NaN or an infinity is damage (a float where
an integer is stored, refused by its type; a float field holding one is refused as not
finite, tests/store/test_non_finite_views.py): `volsched
migrate --check` names it and exits non-zero, the daemon refuses the snapshot with one
line and reads the object rows (the API server's JSON) instead, pods are placed, and
the next clean stop keeps a snapshot without it. Before, every pod failed scoring with
``ValueError: cannot convert float NaN to integer``, and each stop wrote the NaN back."""

from __future__ import annotations

import dataclasses
import logging
import pickle
import sqlite3
from pathlib import Path

import pytest

from tests.integration.conftest import Cluster, eventually
from tests.integration.objects import node, pod
from volsched.daemon.cli.main import main


def check(path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    """``volsched migrate --check``, run in-process: its status and its lines."""
    capsys.readouterr()
    status = main(["migrate", "--check", "--database", str(path)])
    out, err = capsys.readouterr()
    assert "Traceback" not in err
    return status, out.splitlines()


def damage_node_view(path: Path, name: str, cpu: float) -> None:
    """Rewrite the stored snapshot with ``name``'s allocatable cpu set to ``cpu``, as a
    disk returning the wrong bytes or a hand edit could."""
    with sqlite3.connect(path) as connection:
        parts = connection.execute("SELECT id, body FROM snapshot").fetchall()
        for part_id, body in parts:
            fmt, views, raw = pickle.loads(body)  # the test's own file
            nodes = views.get("Node", {})
            if name in nodes:
                allocatable = {**nodes[name].allocatable, "cpu": cpu}
                nodes[name] = dataclasses.replace(nodes[name], allocatable=allocatable)
                body = pickle.dumps((fmt, views, raw), protocol=pickle.HIGHEST_PROTOCOL)
                connection.execute("UPDATE snapshot SET body = ? WHERE id = ?", (body, part_id))
    connection.close()


@pytest.mark.parametrize("cpu", [float("nan"), float("-inf")])
async def test_a_non_finite_number_in_a_stored_view_is_damage(
    cluster: Cluster,
    caplog: pytest.LogCaptureFixture,
    capsys: pytest.CaptureFixture[str],
    cpu: float,
) -> None:
    cluster.server.load([node("n1"), node("n2", "zone-b")])
    first = await cluster.start_daemon()
    await cluster.stop_daemon(first)
    assert check(cluster.db_path, capsys)[0] == 0
    damage_node_view(cluster.db_path, "n1", cpu)

    status, lines = check(cluster.db_path, capsys)
    assert status == 1, lines
    found = [line for line in lines if "allocatable['cpu']" in line]
    assert len(found) == 1
    # allocatable holds integers (millicores): a float there is refused by its type
    # before its value is looked at.
    assert "its Node n1: .allocatable['cpu'] is float, not int" in found[0]
    assert found[0].endswith("(the daemon reads the object rows instead)")

    caplog.set_level(logging.WARNING, logger="volsched")
    daemon = await cluster.start_daemon()
    assert not daemon.sync.loaded_from_snapshot
    lines = [r.getMessage() for r in caplog.records if "snapshot unusable" in r.getMessage()]
    assert len(lines) == 1 and "Node n1" in lines[0] and "allocatable['cpu']" in lines[0]
    assert daemon.cluster.nodes["n1"].node.allocatable["cpu"] == 4000
    cluster.server.load([pod(f"web-{i}", cpu="1") for i in range(6)])
    await eventually(
        lambda: all(cluster.node_of(f"web-{i}") for i in range(6)), what="every pod placed"
    )
    assert not [e for i in range(6) for e in cluster.events_for(f"web-{i}") if "NaN" in e["note"]]
    # The next clean stop keeps a snapshot without the damage.
    await cluster.stop_daemon(daemon)
    assert check(cluster.db_path, capsys)[0] == 0
