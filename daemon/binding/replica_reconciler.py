"""Leader-only: keep every existing Volume at its numberOfReplicas.

When a replica fails past its replenishment wait, or a Replica object waits without a
node, the replica scheduler places what is missing (Longhorn's rules, the same code
``simulate`` runs) and this loop writes the result: waiting Replica objects get their
``nodeID``/``diskID``, new ones are created. It runs after storage objects change, and
never while the replica is a standby.
"""

from __future__ import annotations

import asyncio
import logging
import secrets
from collections.abc import Callable, Sequence
from dataclasses import replace

from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import ApiError
from volsched.cache.objects.replicated import API_VERSION, Replica, Volume
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.watch.ingest import Ingest
from volsched.scheduling.replicas import replicas_to_fill, schedule_volume
from volsched.scheduling.replicas.results import VolumePlacement
from volsched.scheduling.storage_placement import ReplicaContext

log = logging.getLogger("volsched.replicas")
RESCAN_SECONDS = 30.0


class ReplicaReconciler:
    def __init__(
        self,
        client: KubeClient,
        cluster: ClusterCache,
        ingest: Ingest,
        context: ReplicaContext,
        leading: asyncio.Event,
        interval_seconds: float = 2.0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self.client = client
        self.cluster = cluster
        self.ingest = ingest
        self.context = context
        self.leading = leading
        self.interval = interval_seconds
        self.clock = clock or context.clock
        self.placed = 0

    async def run(self) -> None:
        seen = -1
        last = 0.0
        loop = asyncio.get_running_loop()
        while True:
            await self.leading.wait()
            generation = self.cluster.storage_generation
            # The replenishment wait ends with time, not with an event: look again every
            # so often even when nothing changed.
            if generation != seen or loop.time() - last >= RESCAN_SECONDS:
                seen = generation
                last = loop.time()
                try:
                    await self.reconcile_once()
                except ApiError as exc:
                    log.warning("replica placement: %s", exc)
                    seen = -1  # try again at the next interval, not after the rescan
            await asyncio.sleep(self.interval)

    async def reconcile_once(self) -> int:
        """One pass over the volumes in name order; returns the replicas written."""
        # Only volsched's own volumes: Longhorn's replicas are longhorn-manager's to place.
        volumes: dict[str, Volume] = self.cluster.storage.volsched.volumes
        written = 0
        now = self.clock()
        for name in sorted(volumes):
            volume = volumes[name]
            view = self.context.view()
            waiting = replicas_to_fill(volume, view)
            placement = schedule_volume(
                volume, view, self.context.settings, now, self.context.scheduled
            )
            if placement is None or not placement.placed:
                if placement is not None and placement.unplaced:
                    log.info("volume %s: %s", name, placement.message)
                continue
            assumed = self.context.commit(
                placement, synced=volume.actual_size == 0, size=volume.size
            )
            written_here: list[str] = []
            try:
                await self._write(name, placement, waiting, written_here)
            finally:
                if len(written_here) < len(placement.placed):
                    # A write failed (or the pass was cancelled): the replicas not
                    # written hand their promised space back, or the disks would look
                    # fuller than they are until a restart.
                    count = len(written_here)
                    self.context.release(
                        replace(placement, placed=placement.placed[count:]), assumed[count:]
                    )
            written += len(written_here)
            log.info("volume %s: placed %s", name, ", ".join(written_here))
        self.placed += written
        return written

    async def _write(
        self,
        name: str,
        placement: VolumePlacement,
        waiting: Sequence[Replica],
        written: list[str],
    ) -> None:
        """Give waiting Replica objects their node and disk and create the others, in
        order; ``written`` grows with each one the API server accepted."""
        for index, target in enumerate(placement.placed):
            if index < len(waiting):
                updated = await self.client.patch(
                    "Replica",
                    waiting[index].meta.name,
                    {"spec": {"nodeID": target.node, "diskID": target.disk}},
                )
            else:
                updated = await self.client.create(
                    "Replica",
                    {
                        "apiVersion": API_VERSION,
                        "kind": "Replica",
                        "metadata": {"name": f"{name}-r-{secrets.token_hex(4)}"},
                        "spec": {
                            "volumeName": name,
                            "nodeID": target.node,
                            "diskID": target.disk,
                            "primary": False,
                        },
                    },
                )
            updated.setdefault("kind", "Replica")
            self.ingest.upsert("Replica", updated)
            written.append(f"{target.node}/{target.disk}")
