"""Proving each resumed kind current after a warm start's load (see ``restart_plan``).

Runs once the stored cache is loaded and the catch-up targets are known, beside the
resumed watches, which keep bringing events all along. A kind is counted synced only by
its watch (an event or bookmark at or past its target), by a relist, or by a metadata
list that matches the cache exactly; nothing here ever marks a kind synced on a guess.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import ApiError
from volsched.cache.objects.registry import KINDS
from volsched.daemon.kube.client import PARTIAL_METADATA, KubeClient
from volsched.daemon.watch.ingest import object_key
from volsched.daemon.watch.restart_plan import Proof, ProofCosts, bookmark_wait_left, plan_proofs
from volsched.daemon.watch.watching import KindWatcher

log = logging.getLogger("volsched.watch")

# A metadata list that differs from the cache is taken again this much later (the watch
# is usually still applying the changes that made the difference), once.
RECHECK_SECONDS = 0.25

Relist = Callable[[KindWatcher], Awaitable[None]]


async def metadata_matches(
    client: KubeClient, cluster: ClusterCache, costs: ProofCosts, kind: str
) -> str | None:
    """The list's resourceVersion when the cache's layer 1 holds exactly the listed
    objects at the listed resourceVersions; None when anything differs."""
    namespaced = KINDS[kind].namespaced
    listed: dict[str, str] = {}
    version = ""
    async for items, page_version in client.list_pages(
        kind, costs.metadata_page_size, accept=PARTIAL_METADATA
    ):
        version = page_version
        for item in items:
            meta = item.get("metadata") or {}
            listed[object_key(item, namespaced)] = str(meta.get("resourceVersion") or "")
        await asyncio.sleep(0)
    # Compared in one step, with no await: the watch may not apply anything in between.
    held = dict(cluster.informer_items(kind))
    if len(held) != len(listed):
        return None
    for key, view in held.items():
        if listed.get(key) != str(view.meta.resource_version):
            return None
    return version


async def prove_kind(
    watcher: KindWatcher,
    proof: Proof,
    client: KubeClient,
    cluster: ClusterCache,
    costs: ProofCosts,
    waited_seconds: float,
    relist: Relist,
) -> Proof | None:
    """Prove one resumed kind current by the planned means; the proof it took, or None
    when its watch got there first."""
    state = watcher.state
    if state.synced:
        return None
    if proof is Proof.RELIST:
        await relist(watcher)
        return proof
    if proof is Proof.BOOKMARK:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                state.synced_event.wait(), bookmark_wait_left(costs, waited_seconds)
            )
        if state.synced:
            return proof
    for attempt in range(2):
        if attempt:
            await asyncio.sleep(RECHECK_SECONDS)
        if state.synced:
            return Proof.BOOKMARK
        try:
            version = await metadata_matches(client, cluster, costs, watcher.kind)
        except ApiError as exc:
            # Absent CRD, or the server is away: the watch finds out and relists.
            log.info("%s: metadata check failed (%s); waiting for the watch", watcher.kind, exc)
            return None
        if version is not None:
            watcher.proven_current(version)
            return Proof.METADATA
    log.info("%s: the cache differs from the API server's list; relisting", watcher.kind)
    await relist(watcher)
    return Proof.RELIST


async def prove_current(
    watchers: list[KindWatcher],
    client: KubeClient,
    cluster: ClusterCache,
    costs: ProofCosts,
    waited_seconds: float,
    relist: Relist,
) -> dict[str, Proof]:
    """Prove every resumed kind current at once; the proof each needed (kinds whose
    watch got there first are left out)."""
    resumed = [w for w in watchers if w.state.resource_version and not w.state.synced]
    sizes = {w.kind: sum(1 for _ in cluster.informer_items(w.kind)) for w in resumed}
    plan = plan_proofs(sizes, waited_seconds, costs)
    proofs = await asyncio.gather(
        *(
            prove_kind(w, plan[w.kind], client, cluster, costs, waited_seconds, relist)
            for w in resumed
        )
    )
    return {w.kind: p for w, p in zip(resumed, proofs, strict=True) if p is not None}
