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
from collections.abc import Awaitable, Callable, Iterable, Mapping

from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import ApiError
from volsched.cache.objects.registry import KINDS
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.kube.metadata_lists import version_pages
from volsched.daemon.kube.resources import resource
from volsched.daemon.watch.restart_plan import Proof, ProofCosts, bookmark_wait_left, plan_proofs
from volsched.daemon.watch.watching import KindWatcher

log = logging.getLogger("volsched.watch")

# A metadata list that differs from the cache is compared again as the watch applies
# events, for this long, then taken once more (the cache may have gone past it).
RECHECK_SECONDS = 0.25
MATCH_POLL_SECONDS = 0.01

Relist = Callable[[KindWatcher], Awaitable[None]]
# Each listed object's resourceVersion by key, and the list's resourceVersion.
Listed = tuple[dict[str, str], str]


async def fetch_metadata(client: KubeClient, costs: ProofCosts, kind: str) -> Listed:
    """Every object's resourceVersion by key, from a PartialObjectMetadataList list, and
    the list's resourceVersion."""
    listed: dict[str, str] = {}
    version = ""
    pages = version_pages(
        client, resource(kind).path(), KINDS[kind].namespaced, costs.metadata_page_size
    )
    async for page in pages:
        version = page.resource_version
        listed.update(page.versions)
        await asyncio.sleep(0)
    return listed, version


def cache_matches(cluster: ClusterCache, kind: str, listed: Mapping[str, str]) -> bool:
    """Whether layer 1 holds exactly the listed objects at the listed resourceVersions.
    One step with no await: the watch may not apply anything in between."""
    held = dict(cluster.informer_items(kind))
    if len(held) != len(listed):
        return False
    return all(listed.get(key) == str(view.meta.resource_version) for key, view in held.items())


def differences(cluster: ClusterCache, kind: str, listed: Mapping[str, str]) -> int:
    """How many objects the watch must bring before the cache holds ``listed``: those
    added or changed since the cache was stored, and those deleted."""
    held = {key: str(view.meta.resource_version) for key, view in cluster.informer_items(kind)}
    changed = sum(1 for key, version in listed.items() if held.get(key) != version)
    return changed + sum(1 for key in held if key not in listed)


def relisting_is_sooner(costs: ProofCosts, listed: int, differing: int) -> bool:
    """Whether relisting ``listed`` objects is done sooner than the resumed watch brings
    ``differing`` events, each an object to decode as a relist decodes one (a kind whose
    objects were mostly replaced while the daemon was down)."""
    return costs.relist_seconds(listed) < differing * costs.relist_seconds_per_object


class MetadataPrefetch:
    """The resumed kinds' metadata lists, fetched while the stored cache loads (the API
    server encodes them while this process unpickles): after the load, a kind whose
    list matches is proven at once. A list read after the process started is at least
    as fresh as the API server's state at the start, which is all a proof needs."""

    def __init__(self, client: KubeClient, costs: ProofCosts, kinds: Iterable[str]) -> None:
        self._tasks = {
            kind: asyncio.create_task(self._fetch(client, costs, kind), name=f"metadata {kind}")
            for kind in kinds
        }

    @staticmethod
    async def _fetch(client: KubeClient, costs: ProofCosts, kind: str) -> Listed | None:
        try:
            return await fetch_metadata(client, costs, kind)
        except ApiError:
            # Absent CRD, or the server is away: the other proofs find out.
            return None

    def pending(self, kind: str) -> bool:
        """Whether the kind's list is still on its way."""
        task = self._tasks.get(kind)
        return task is not None and not task.done()

    def ready(self, kind: str) -> Listed | None:
        """The kind's list if it has arrived."""
        task = self._tasks.get(kind)
        if task is None or not task.done() or task.cancelled() or task.exception() is not None:
            return None
        return task.result()

    async def wait_at_most(self, kind: str, seconds: float) -> Listed | None:
        """The kind's list once it arrives (None without one), waited for at most
        ``seconds``: TimeoutError after them, and the list still comes."""
        task = self._tasks.get(kind)
        if task is None:
            return None
        return await asyncio.wait_for(asyncio.shield(task), seconds)

    async def close(self) -> None:
        for task in self._tasks.values():
            task.cancel()
        await asyncio.gather(*self._tasks.values(), return_exceptions=True)


async def prove_kind(
    watcher: KindWatcher,
    proof: Proof,
    client: KubeClient,
    cluster: ClusterCache,
    costs: ProofCosts,
    waited_seconds: float,
    relist: Relist,
    prefetch: MetadataPrefetch | None = None,
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
        if state.synced:
            return Proof.BOOKMARK
        try:
            listed = None
            if prefetch is not None and not attempt:
                bound = _list_wait(cluster, costs, watcher)
                try:
                    listed = await prefetch.wait_at_most(watcher.kind, bound)
                except TimeoutError:
                    # Relisting now is done sooner than a list this late.
                    log.info(
                        "%s: its metadata list has not come in %.1fs; relisting",
                        watcher.kind,
                        bound,
                    )
                    await relist(watcher)
                    return Proof.RELIST
            if listed is None:
                listed = await fetch_metadata(client, costs, watcher.kind)
        except ApiError as exc:
            # Tried once more, then relisted: a quiet kind may get no bookmark at all
            # (kube-apiserver's cadence), and its watch would relist it only after
            # three catch-up watches. An absent CRD's relist finds it absent.
            log.info("%s: metadata check failed (%s)", watcher.kind, exc)
            if not attempt:
                await asyncio.sleep(RECHECK_SECONDS)
            continue
        if relisting_is_sooner(
            costs, len(listed[0]), differences(cluster, watcher.kind, listed[0])
        ):
            # Mostly replaced while the daemon was down, seen only now the list is in
            # (it came after the load): the watch still has most of it to bring.
            await relist(watcher)
            return Proof.RELIST
        # A list that differs is usually one the watch is still catching up to: it
        # matches once the watch has applied the changes up to the list's version.
        waiting = RECHECK_SECONDS if not attempt else 0.0
        if await _cache_comes_to(cluster, watcher, listed[0], waiting):
            watcher.proven_current(listed[1])
            return Proof.METADATA
    if state.synced:
        return Proof.BOOKMARK
    log.info("%s: no metadata list matched the cache; relisting", watcher.kind)
    await relist(watcher)
    return Proof.RELIST


async def _cache_comes_to(
    cluster: ClusterCache, watcher: KindWatcher, listed: Mapping[str, str], seconds: float
) -> bool:
    """Whether the cache matches ``listed`` now or, as the watch applies events, within
    ``seconds`` (False at once if the watch proves the kind first)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + seconds
    while not cache_matches(cluster, watcher.kind, listed):
        if watcher.state.synced or loop.time() >= deadline:
            return False
        await asyncio.sleep(MATCH_POLL_SECONDS)
    return True


def _list_wait(cluster: ClusterCache, costs: ProofCosts, watcher: KindWatcher) -> float:
    """How long a prefetched list is worth waiting for: while relisting the kind would
    not be done sooner (and at least the bookmark's window)."""
    objects = sum(1 for _ in cluster.informer_items(watcher.kind))
    return max(costs.relist_seconds(objects), costs.bookmark_window_seconds)


async def prove_current(
    watchers: list[KindWatcher],
    client: KubeClient,
    cluster: ClusterCache,
    costs: ProofCosts,
    waited_seconds: float,
    relist: Relist,
    prefetch: MetadataPrefetch | None = None,
) -> dict[str, Proof]:
    """Prove every resumed kind current at once; the proof each needed (kinds whose
    watch got there first are left out). Kinds whose prefetched metadata list has
    arrived and matches are proven first, without a request; a kind whose list is
    still on its way waits for it rather than relisting (a list of the names alone,
    asked for earlier, comes sooner than the whole kind asked for now). A kind whose
    list shows it mostly replaced is relisted at once: that is sooner than its watch
    bringing every change."""
    proven: dict[str, Proof] = {}
    resumed = []
    relist_now: set[str] = set()
    for watcher in watchers:
        if not watcher.state.resource_version or watcher.state.synced:
            continue
        listed = prefetch.ready(watcher.kind) if prefetch is not None else None
        if listed is not None and cache_matches(cluster, watcher.kind, listed[0]):
            watcher.proven_current(listed[1])
            proven[watcher.kind] = Proof.METADATA
        else:
            resumed.append(watcher)
            if listed is not None and relisting_is_sooner(
                costs, len(listed[0]), differences(cluster, watcher.kind, listed[0])
            ):
                relist_now.add(watcher.kind)
    on_the_way = {w.kind for w in resumed if prefetch is not None and prefetch.pending(w.kind)}
    sizes = {
        w.kind: sum(1 for _ in cluster.informer_items(w.kind))
        for w in resumed
        if w.kind not in on_the_way | relist_now
    }
    plan = plan_proofs(sizes, waited_seconds, costs)
    plan.update(dict.fromkeys(on_the_way, Proof.METADATA))
    plan.update(dict.fromkeys(relist_now, Proof.RELIST))
    proofs = await asyncio.gather(
        *(
            prove_kind(w, plan[w.kind], client, cluster, costs, waited_seconds, relist, prefetch)
            for w in resumed
        )
    )
    proven.update((w.kind, p) for w, p in zip(resumed, proofs, strict=True) if p is not None)
    return proven


class CatchUpProofs:
    """One warm start's proofs: the metadata lists fetched while the cache loads, then
    every resumed kind proven current beside its watch."""

    def __init__(self, client: KubeClient, cluster: ClusterCache, costs: ProofCosts) -> None:
        self.client = client
        self.cluster = cluster
        self.costs = costs
        self._prefetch: MetadataPrefetch | None = None
        self._task: asyncio.Task[None] | None = None

    def prefetch(self, kinds: Iterable[str]) -> None:
        self._prefetch = MetadataPrefetch(self.client, self.costs, kinds)

    def start(self, watchers: list[KindWatcher], opened_at: float, relist: Relist) -> None:
        """Prove the resumed kinds, whose watches opened at loop time ``opened_at``."""
        self._task = asyncio.create_task(self._run(watchers, opened_at, relist))

    async def _run(self, watchers: list[KindWatcher], opened_at: float, relist: Relist) -> None:
        loop = asyncio.get_running_loop()
        proofs = await prove_current(
            watchers,
            self.client,
            self.cluster,
            self.costs,
            loop.time() - opened_at,
            relist,
            self._prefetch,
        )
        if proofs:
            # Logged before anything else is awaited: a daemon stopped as soon as it is
            # ready still says how it got there.
            log.info(
                "caught up after %.2fs: %s",
                loop.time() - opened_at,
                ", ".join(f"{kind} by {proof.value}" for kind, proof in sorted(proofs.items())),
            )
        await self._close_prefetch()

    async def _close_prefetch(self) -> None:
        if self._prefetch is not None:
            await self._prefetch.close()
            self._prefetch = None

    async def close(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        await self._close_prefetch()
