"""The shadow beside an "other scheduler" that behaves as kube-scheduler does: it decides
pods one at a time in queue order, writes its PreBind (a PV's ``claimRef``) before the
binding, and sends each binding from a task of its own, so bindings arrive out of the
order they were decided in. The shadow must judge each pod on the cluster it was
decided on:

- ``first`` is decided on a1 (the emptier node), then three pods that may only go to
  a1; ``first`` is bound last. Judged on the cluster its binding arrives in, a1 holds the
  three and b1 looks better (``lower_score``); decided on, a1 was better.
- ``pinned`` is decided on a2 (the only node it may use), then ``free`` on b2; ``free``
  is bound first. Judged before ``pinned`` is counted, a2 looks emptier.
- ``db`` has a WaitForFirstConsumer claim; the other scheduler gives it the 100 GiB PV
  though a 10 GiB one fits its 9 GiB. By the binding, the claim is bound on their node,
  which would leave volsched only that node: the comparison could never disagree.
"""

from __future__ import annotations

import asyncio

import aiohttp

from tests.integration.conftest import Cluster, eventually
from tests.support import node, pod, pv, pvc, storage_class
from volsched.daemon.config.settings import ShadowSettings
from volsched.daemon.runtime.shadowing import ShadowDaemon
from volsched.emulator.binding import bind

GiB = 1024**3
OTHER = {"schedulerName": "other"}


def hostname(name: str) -> dict[str, str]:
    return {"kubernetes.io/hostname": name}


def pair(name: str) -> dict[str, str]:
    return {"pair": name}


NODES = [
    *(
        node(f"{side}{n}", cpu="8", memory="32Gi", labels=pair(str(n)))
        for n in (1, 2, 3)
        for side in "ab"
    ),
    pod("filler-1", cpu="500m", node_name="b1", spec=OTHER),
    pod("filler-2", cpu="500m", node_name="b2", spec=OTHER),
    storage_class("local"),
    pv("tight", "10Gi", node_names=["a3"]),
    pv("roomy", "100Gi", node_names=["b3"]),
    pvc("data", request="9Gi"),
]
# In the order the other scheduler decides them (their creation order): where it puts
# each, and how long its binding takes.
DECISIONS = [
    ("first", pod("first", cpu="1", spec={"nodeSelector": pair("1")}), "a1", 1.0),
    *(
        (name, pod(name, cpu="1", spec={"nodeSelector": hostname("a1")}), "a1", 0.1)
        for name in ("pinned-0", "pinned-1", "pinned-2")
    ),
    ("pinned", pod("pinned", cpu="2", spec={"nodeSelector": hostname("a2")}), "a2", 0.8),
    ("free", pod("free", cpu="1", spec={"nodeSelector": pair("2")}), "b2", 0.1),
    ("db", pod("db", claims=["data"], spec={"nodeSelector": pair("3")}), "b3", 0.1),
]


def claim_volume(cluster: Cluster) -> str:
    claim = cluster.server.get("PersistentVolumeClaim", "data", "default")
    return str((claim or {}).get("spec", {}).get("volumeName", ""))


async def other_scheduler(cluster: Cluster) -> None:
    """Decides in order; PreBind before each binding; bindings asynchronous."""
    registry = cluster.server.registry

    async def binding(name: str, node_name: str, delay: float) -> None:
        await asyncio.sleep(delay)
        if name == "db":
            # PreBind: the PV names the claim; the PV controller binds the claim.
            pvs = registry.core("persistentvolumes")
            volume = registry.get(pvs, "", "roomy")
            claim = registry.get(registry.core("persistentvolumeclaims"), "default", "data")
            volume["spec"]["claimRef"] = {
                "kind": "PersistentVolumeClaim",
                "namespace": "default",
                "name": "data",
                "uid": claim["metadata"]["uid"],
            }
            registry.update(pvs, "", "roomy", volume)
            await eventually(
                lambda: claim_volume(cluster) == "roomy",
                what="the claim bound by the PV controller",
            )
        body = {"metadata": {"name": name}, "target": {"kind": "Node", "name": node_name}}
        bind(registry, "default", name, body)

    tasks = []
    for name, _, node_name, delay in DECISIONS:
        tasks.append(asyncio.create_task(binding(name, node_name, delay)))
        await asyncio.sleep(0.02)
    await asyncio.gather(*tasks)


async def test_each_binding_is_judged_on_the_cluster_it_was_decided_on(cluster: Cluster) -> None:
    server = cluster.server
    server.load(NODES)
    daemon = await cluster.start_daemon(
        cluster.settings(shadow=ShadowSettings(enabled=True)), lead=False
    )
    assert isinstance(daemon, ShadowDaemon)
    server.load([raw for _, raw, _, _ in DECISIONS])
    await eventually(
        lambda: len(daemon.tally.pending) == len(DECISIONS), what="every pending pod decided"
    )
    await other_scheduler(cluster)
    await eventually(lambda: daemon.tally.compared == len(DECISIONS), what="every binding judged")

    report = daemon.tally.report()
    differences = {d["pod"]: d for d in report["differences"]}
    # The pods without claims: volsched agrees on the cluster each was decided on.
    assert set(differences) == {"default/db"}, differences
    db = differences["default/db"]
    assert (db["theirNode"], db["ourNode"], db["outcome"], db["cause"]) == (
        "b3",
        "a3",
        "lower_score",
        "storage-preference",
    )
    assert report["storage"]["theirStrandedBytes"] == 91 * GiB
    assert report["storage"]["ourStrandedBytes"] == 1 * GiB
    # The decisions page shows the same difference, with its cause.
    url = f"http://127.0.0.1:{daemon.http_port}/decisions"
    async with aiohttp.ClientSession() as session, session.get(url) as response:
        page = await response.text()
    assert 'data-pod="default/db"' in page and 'class="cause">storage-preference<' in page
