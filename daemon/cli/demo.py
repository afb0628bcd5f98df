"""``volsched demo``: the real daemon against the embedded cluster, in under 30 seconds.

Starts the Kubernetes API emulator on a loopback port with the sample cluster, runs the
daemon against it over HTTP with a real SQLite file (in a temporary directory), creates
pods over a few seconds, shows progress as they are placed, and ends with a table of
where every pod and replica went and why the one that does not fit is pending.
"""

from __future__ import annotations

import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, TextIO

from volsched.daemon.cli.demo_cluster import arrivals, cluster_objects
from volsched.daemon.config.settings import (
    AuthSettings,
    DatabaseSettings,
    HttpSettings,
    LeaderElectionSettings,
    Settings,
)
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.runtime.app import Daemon, DaemonOptions, open_daemon
from volsched.emulator import ApiServer, ControllerSettings, write_kubeconfig

TIME_LIMIT_SECONDS = 25.0


def _pods(server: ApiServer) -> list[dict[str, Any]]:
    return [
        p
        for p in server.list("Pod", "shop")
        if (p.get("spec") or {}).get("schedulerName") == "volsched"
    ]


def _pending_reason(pod: dict[str, Any]) -> str:
    for condition in (pod.get("status") or {}).get("conditions") or []:
        if condition.get("type") == "PodScheduled" and condition.get("status") == "False":
            return str(condition.get("message") or condition.get("reason") or "")
    return ""


def _volumes(server: ApiServer, pod: dict[str, Any]) -> str:
    parts = []
    for volume in (pod.get("spec") or {}).get("volumes") or []:
        claim_name = (volume.get("persistentVolumeClaim") or {}).get("claimName")
        if not claim_name:
            continue
        claim = server.get("PersistentVolumeClaim", claim_name, "shop") or {}
        pv_name = (claim.get("spec") or {}).get("volumeName") or "?"
        replicas = [
            r for r in server.list("Replica") if (r.get("spec") or {}).get("volumeName") == pv_name
        ]
        if replicas:
            where = ", ".join(
                f"{r['spec'].get('nodeID')}/{r['spec'].get('diskID')}"
                for r in sorted(replicas, key=lambda r: r["spec"].get("nodeID", ""))
            )
            parts.append(f"{claim_name}→{pv_name} [{where}]")
        else:
            parts.append(f"{claim_name}→{pv_name}")
    return ", ".join(parts)


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]) - 1)]
    return "\n".join(
        "  ".join(
            [*(cell.ljust(w) for cell, w in zip(row[:-1], widths, strict=True)), row[-1]]
        ).rstrip()
        for row in rows
    )


async def _create_arrivals(client: KubeClient, started: float) -> None:
    for at, objects in arrivals():
        delay = started + at - time.monotonic()
        if delay > 0:
            await asyncio.sleep(delay)
        for obj in objects:
            await client.create(obj["kind"], obj, namespace=obj["metadata"].get("namespace"))


async def run_demo(out: TextIO | None = None, time_limit: float = TIME_LIMIT_SECONDS) -> int:
    # The stdout of the moment, not of import time: a caller may have replaced it since.
    out = sys.stdout if out is None else out
    started = time.monotonic()
    expected = sum(1 for _, objects in arrivals() for o in objects if o["kind"] == "Pod")
    with tempfile.TemporaryDirectory(prefix="volsched-demo-") as workdir:
        server = ApiServer(
            ControllerSettings(
                pv_bind_delay_seconds=0.1, provision_delay_seconds=0.2, kubelet=True
            ),
            bookmark_interval_seconds=1.0,
        )
        url = await server.start()
        server.load(cluster_objects())
        kubeconfig = write_kubeconfig(Path(workdir) / "kubeconfig", url)
        settings = Settings(
            database=DatabaseSettings(str(Path(workdir) / "volsched.db")),
            http=HttpSettings("127.0.0.1:0", AuthSettings(enabled=False)),
            bind_timeout_seconds=60,
            # One replica: no need to wait for a lease.
            leader_election=LeaderElectionSettings(enabled=False),
        )
        client = await KubeClient.connect(str(kubeconfig))
        daemon: Daemon | None = None
        try:
            daemon = await open_daemon(
                settings,
                client,
                DaemonOptions(seed=1, grace_seconds=5),
            )
            await daemon.start()
            print(f"volsched demo: Kubernetes API emulator at {url} (9 nodes in 3 zones)", file=out)
            print(
                f"volsched demo: scheduler running; metrics at http://127.0.0.1:{daemon.http_port}/metrics",
                file=out,
            )
            creator = asyncio.create_task(_create_arrivals(client, time.monotonic()))
            seen: set[str] = set()
            reported: set[str] = set()
            while time.monotonic() - started < time_limit:
                await asyncio.sleep(0.2)
                pods = _pods(server)
                for pod in pods:
                    name = pod["metadata"]["name"]
                    node = (pod.get("spec") or {}).get("nodeName")
                    elapsed = time.monotonic() - started
                    if node and name not in seen:
                        seen.add(name)
                        print(f"  {elapsed:5.1f}s  {name:<14} → {node}", file=out)
                    elif not node and name not in reported and _pending_reason(pod):
                        reported.add(name)
                        print(
                            f"  {elapsed:5.1f}s  {name:<14} pending: {_pending_reason(pod)}",
                            file=out,
                        )
                placed_or_explained = len(seen) + len(reported - seen)
                if creator.done() and len(pods) == expected and placed_or_explained == expected:
                    break
            await creator
            pods = sorted(_pods(server), key=lambda p: p["metadata"]["name"])
            rows = [["POD", "NODE", "VOLUMES [REPLICAS]" + " / WHY PENDING"]]
            for pod in pods:
                node = (pod.get("spec") or {}).get("nodeName")
                rows.append(
                    [
                        f"shop/{pod['metadata']['name']}",
                        node or "<pending>",
                        _volumes(server, pod) if node else _pending_reason(pod),
                    ]
                )
            print("", file=out)
            print(_table(rows), file=out)
            placed = sum(1 for pod in pods if (pod.get("spec") or {}).get("nodeName"))
            print(
                f"\n{placed}/{len(pods)} pods placed in {time.monotonic() - started:.1f}s; "
                f"volumes bound by the emulated PV controller, replicas created by volsched.",
                file=out,
            )
            return 0 if placed == expected - 1 else 1
        finally:
            if daemon is not None:
                await daemon.stop()
            await client.close()
            await server.stop()


def main() -> int:
    return asyncio.run(run_demo())
