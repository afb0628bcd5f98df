"""Proving a resumed kind current without its bookmark: a metadata list that matches the
cache proves it; one that differs proves nothing and the kind is relisted (against the
emulator over real HTTP, with kube-apiserver's bookmark cadence)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest

from tests.emulator.support import node
from volsched.cache.cluster import ClusterCache
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.kube.metadata_lists import PARTIAL_METADATA
from volsched.daemon.watch.ingest import Ingest
from volsched.daemon.watch.proving import (
    MetadataPrefetch,
    Relist,
    cache_matches,
    differences,
    fetch_metadata,
    prove_current,
    relisting_is_sooner,
)
from volsched.daemon.watch.restart_plan import Proof, ProofCosts
from volsched.daemon.watch.watching import KindWatcher, WatchSettings
from volsched.emulator import ApiServer, ControllerSettings

# Relisting looks dear and the window short: a kind of a few nodes is checked by its
# metadata at once.
CHECK_FIRST = ProofCosts(relist_seconds_per_object=10.0, bookmark_window_seconds=2.25)


@pytest.fixture
async def server() -> AsyncIterator[ApiServer]:
    emulator = ApiServer(
        controllers=ControllerSettings.none(), bookmark_cadence="apiserver", bookmark_seed=5
    )
    await emulator.start()
    yield emulator
    await emulator.stop()


async def stored_nodes(client: KubeClient) -> tuple[ClusterCache, Ingest, str]:
    """A cache holding the server's nodes as a stopped daemon's database would, and the
    resume point it kept."""
    cluster = ClusterCache()
    ingest = Ingest(cluster, None, "volsched")
    items, version = await client.list("Node")
    for item in items:
        ingest.upsert("Node", item, persist=False)
    return cluster, ingest, version


async def resumed_node_watcher(
    server: ApiServer, client: KubeClient, bookmarks: bool = False
) -> tuple[ClusterCache, KindWatcher]:
    """The nodes stored, other kinds moved on while the daemon was down (and, unless
    ``bookmarks``, no bookmark ever coming): the Node watch resumes, not yet current."""
    cluster, ingest, resume_from = await stored_nodes(client)
    server.ensure_namespace("elsewhere")
    if not bookmarks:
        server.faults.suppress_bookmarks()
    watcher = KindWatcher("Node", client, ingest, None, WatchSettings(), resume_from)
    watcher.catch_up_to(str(server.store.revision))
    return cluster, watcher


async def test_the_emulator_lists_partial_object_metadata(
    server: ApiServer, client: KubeClient
) -> None:
    server.load([node("n1"), node("n2")])
    pages = [page async for page in client.list_pages("Node", 1, accept=PARTIAL_METADATA)]
    assert [len(items) for items, _ in pages] == [1, 1]
    item = pages[0][0][0]
    assert item["kind"] == "PartialObjectMetadata"
    assert item["apiVersion"] == "meta.k8s.io/v1"
    assert item["metadata"]["name"] == "n1" and item["metadata"]["resourceVersion"]
    assert "status" not in item
    async with (
        aiohttp.ClientSession() as session,
        session.get(f"{server.url}/api/v1/nodes", headers={"Accept": PARTIAL_METADATA}) as response,
    ):
        body = await response.json()
    assert body["kind"] == "PartialObjectMetadataList"
    assert body["metadata"]["resourceVersion"] == str(server.store.revision)


async def test_an_unchanged_kind_is_proven_by_its_metadata_without_a_bookmark(
    server: ApiServer, client: KubeClient
) -> None:
    server.load([node("n1"), node("n2")])
    cluster, watcher = await resumed_node_watcher(server, client)
    assert not watcher.state.synced
    task = asyncio.create_task(watcher.run())
    relisted: list[str] = []

    async def relist(w: KindWatcher) -> None:
        relisted.append(w.kind)

    try:
        proofs = await prove_current([watcher], client, cluster, CHECK_FIRST, 0.0, relist)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
    assert proofs == {"Node": Proof.METADATA}
    assert watcher.state.synced and relisted == []


async def test_a_kind_changed_while_down_is_not_proven_by_stale_metadata(
    server: ApiServer, client: KubeClient
) -> None:
    """Safety: the cache's n1 is older than the server's, n3 is new, n2 is gone. The
    metadata list shows it; the kind is relisted, never counted current as stored."""
    server.load([node("n1"), node("n2")])
    cluster, ingest, resume_from = await stored_nodes(client)
    server.load([node("n3")])
    async with aiohttp.ClientSession(server.url) as session:
        async with session.delete("/api/v1/nodes/n2") as response:
            assert response.status == 200
        async with session.get("/api/v1/nodes/n1") as response:
            changed = await response.json()
        changed["metadata"]["labels"]["changed"] = "yes"
        async with session.put("/api/v1/nodes/n1", json=changed) as response:
            assert response.status == 200
    listed, _ = await fetch_metadata(client, CHECK_FIRST, "Node")
    assert not cache_matches(cluster, "Node", listed)
    # The watch brings nothing (stalled), so both checks differ and it relists.
    server.faults.stall_watches(5)
    watcher = KindWatcher("Node", client, ingest, None, WatchSettings(), resume_from)
    watcher.catch_up_to(str(server.store.revision))

    async def relist(w: KindWatcher) -> None:
        w.forget_resume_point()
        await w.sync()

    proofs = await prove_while_watching(watcher, client, cluster, relist)
    assert proofs == {"Node": Proof.RELIST}
    assert watcher.state.synced
    assert set(cluster.nodes) == {"n1", "n3"}
    assert cluster.nodes["n1"].node.meta.labels.get("changed") == "yes"


async def test_a_small_kind_is_relisted_at_once(server: ApiServer, client: KubeClient) -> None:
    server.load([node("n1")])
    cluster, watcher = await resumed_node_watcher(server, client, bookmarks=True)
    relisted: list[str] = []

    async def relist(w: KindWatcher) -> None:
        relisted.append(w.kind)

    proofs = await prove_current([watcher], client, cluster, ProofCosts(), 0.0, relist)
    assert proofs == {"Node": Proof.RELIST} and relisted == ["Node"]


async def test_a_metadata_list_fetched_during_the_load_proves_the_kind_at_once(
    server: ApiServer, client: KubeClient
) -> None:
    server.load([node("n1"), node("n2")])
    cluster, watcher = await resumed_node_watcher(server, client)
    prefetch = MetadataPrefetch(client, ProofCosts(), ["Node"])
    assert await prefetch.wait_at_most("Node", 10) is not None
    lists_before = len(server.faults.requests("GET", r"/api/v1/nodes\?"))

    await prove_by_prefetch_alone(watcher, client, cluster, prefetch)
    assert len(server.faults.requests("GET", r"/api/v1/nodes\?")) == lists_before


async def test_a_kind_whose_list_is_on_its_way_waits_for_it_rather_than_relisting(
    server: ApiServer, client: KubeClient
) -> None:
    """One node relists sooner than any bookmark (the row above), but its metadata list,
    asked for during the load and slowed here, is already coming: it proves the kind
    and no second list of the whole kind is sent."""
    server.load([node("n1")])
    cluster, watcher = await resumed_node_watcher(server, client)
    server.faults.delay_next("GET", r"/api/v1/nodes\?limit", 0.3)
    prefetch = MetadataPrefetch(client, ProofCosts(), ["Node"])
    await asyncio.sleep(0.05)
    assert prefetch.pending("Node")

    await prove_by_prefetch_alone(watcher, client, cluster, prefetch)
    assert len(server.faults.requests("GET", r"/api/v1/nodes\?limit")) == 1


async def prove_by_prefetch_alone(
    watcher: KindWatcher, client: KubeClient, cluster: ClusterCache, prefetch: MetadataPrefetch
) -> None:
    """The resumed Node kind proven by its prefetched metadata list, never relisted."""

    async def relist(w: KindWatcher) -> None:
        raise AssertionError("relisted a kind its prefetched metadata list proves")

    try:
        proofs = await prove_current(
            [watcher], client, cluster, ProofCosts(), 0.0, relist, prefetch
        )
    finally:
        await prefetch.close()
    assert proofs == {"Node": Proof.METADATA} and watcher.state.synced


async def test_a_prefetched_list_later_than_a_relist_is_not_waited_for(
    server: ApiServer, client: KubeClient
) -> None:
    """The list asked for during the load is held 3 s; relisting the kind would take
    far less (one node, a 0.2 s window): the kind is relisted without waiting on."""
    server.load([node("n1")])
    cluster, watcher = await resumed_node_watcher(server, client)
    server.faults.delay_next("GET", r"/api/v1/nodes\?limit", 3.0)
    costs = ProofCosts(bookmark_window_seconds=0.2)
    prefetch = MetadataPrefetch(client, costs, ["Node"])
    relisted: list[str] = []

    async def relist(w: KindWatcher) -> None:
        relisted.append(w.kind)

    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        proofs = await prove_current([watcher], client, cluster, costs, 0.0, relist, prefetch)
    finally:
        await prefetch.close()
    assert proofs == {"Node": Proof.RELIST} and relisted == ["Node"]
    assert loop.time() - started < 2.0


@pytest.mark.parametrize(("failures", "proof"), [(1, Proof.METADATA), (2, Proof.RELIST)])
async def test_a_failed_metadata_check_is_tried_again_then_relisted(
    server: ApiServer, client: KubeClient, failures: int, proof: Proof
) -> None:
    """No bookmark will come (a quiet kind): a metadata list refused once is asked
    again; refused twice, the kind is relisted at once rather than left to three
    catch-up watches."""
    server.load([node("n1"), node("n2")])
    cluster, watcher = await resumed_node_watcher(server, client)
    server.faults.fail_next("GET", r"/api/v1/nodes\?limit", 500, times=failures)
    relisted: list[str] = []

    async def relist(w: KindWatcher) -> None:
        relisted.append(w.kind)

    proofs = await prove_while_watching(watcher, client, cluster, relist)
    assert proofs == {"Node": proof}
    assert relisted == (["Node"] if proof is Proof.RELIST else [])


async def prove_while_watching(
    watcher: KindWatcher, client: KubeClient, cluster: ClusterCache, relist: Relist
) -> dict[str, Proof]:
    """``prove_current`` for the Node kind with its watch running beside it, metadata
    checked first."""
    task = asyncio.create_task(watcher.run())
    try:
        return await prove_current([watcher], client, cluster, CHECK_FIRST, 0.0, relist)
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


@pytest.mark.parametrize(
    ("listed", "differing", "sooner"),
    [
        # Every stored object replaced: the watch brings twice the kind (deleted + added).
        (1000, 2000, True),
        (5000, 10_000, True),
        # A few changes while down: the watch brings them sooner than a relist.
        (1000, 10, False),
        (1000, 500, False),
        # Nothing listed and nothing to bring: no reason to relist.
        (0, 0, False),
    ],
)
def test_relisting_is_sooner_when_most_of_the_kind_was_replaced(
    listed: int, differing: int, sooner: bool
) -> None:
    assert relisting_is_sooner(ProofCosts(), listed, differing) is sooner


async def replaced_nodes(server: ApiServer, client: KubeClient) -> tuple[ClusterCache, KindWatcher]:
    """Four nodes stored, then deleted and four others made while the daemon was down:
    the resumed Node watch would bring eight events, a relist four objects."""
    server.load([node(f"old-{i}") for i in range(4)])
    cluster, ingest, resume_from = await stored_nodes(client)
    async with aiohttp.ClientSession(server.url) as session:
        for i in range(4):
            async with session.delete(f"/api/v1/nodes/old-{i}") as response:
                assert response.status == 200
    server.load([node(f"new-{i}") for i in range(4)])
    watcher = KindWatcher("Node", client, ingest, None, WatchSettings(), resume_from)
    watcher.catch_up_to(str(server.store.revision))
    return cluster, watcher


async def prove_relisting(
    watcher: KindWatcher, client: KubeClient, cluster: ClusterCache, prefetch: MetadataPrefetch
) -> None:
    """The resumed Node kind is proven by a relist, and only by one."""
    relisted: list[str] = []

    async def relist(w: KindWatcher) -> None:
        relisted.append(w.kind)

    try:
        proofs = await prove_current([watcher], client, cluster, CHECK_FIRST, 0.0, relist, prefetch)
    finally:
        await prefetch.close()
    assert proofs == {"Node": Proof.RELIST} and relisted == ["Node"]


async def test_a_kind_replaced_while_down_is_relisted_at_once(
    server: ApiServer, client: KubeClient
) -> None:
    """The prefetched list shows the kind replaced, and the kind is relisted without
    waiting on the watch."""
    cluster, watcher = await replaced_nodes(server, client)
    # Costs under which the plan alone would check the kind's metadata, not relist it.
    prefetch = MetadataPrefetch(client, CHECK_FIRST, ["Node"])
    listed = await prefetch.wait_at_most("Node", 10)
    assert listed is not None and differences(cluster, "Node", listed[0]) == 8
    await prove_relisting(watcher, client, cluster, prefetch)
    # At once: no second metadata list after a wait for the watch.
    assert len(server.faults.requests("GET", r"/api/v1/nodes\?limit")) == 1


async def test_a_kind_replaced_while_down_is_relisted_when_its_late_list_shows_it(
    server: ApiServer, client: KubeClient
) -> None:
    """As above, but the prefetched list is still on its way when the load is done (the
    API server is busy): the kind waits for it, and once it shows the kind mostly
    replaced, relists rather than letting the watch bring every change."""
    cluster, watcher = await replaced_nodes(server, client)
    server.faults.suppress_bookmarks()
    server.faults.delay_next("GET", r"/api/v1/nodes\?limit", 0.3)
    prefetch = MetadataPrefetch(client, CHECK_FIRST, ["Node"])
    await asyncio.sleep(0.05)
    assert prefetch.pending("Node")
    await prove_relisting(watcher, client, cluster, prefetch)
    assert len(server.faults.requests("GET", r"/api/v1/nodes\?limit")) == 1
