"""The PVs each scheduler's placements took, to tell which claims left pending volsched's
placements would have served.

The shadow judges every claim pod on the cluster the other scheduler made, so volsched's
choices never add up to a cluster of their own: a tight PV it would have taken stays
free in the real cluster and may be its choice again for the next claim. The ledger
keeps that second cluster for static PVs only:

- every claim the other scheduler bound to a PV is recorded as theirs;
- volsched's choice for the same claim is recorded as ours if it is still free in
  volsched's placement; if an earlier claim took it there, the smallest PV that is free
  there and fits on volsched's node stands in; if none does, the claim is unserved there.

A PV is free in volsched's placement when the ledger has not given it to a claim and it
is either Available in the cluster or taken only by one of their placements. A claim pod
the other scheduler leaves pending because no PV fits (volsched's VolumeBinding rejects
every node) counts as one volsched would have served when each of its unbound claims has
such a free PV. Only PVs are counted: that the pod's other needs (CPU, affinity) would
also have fitted that PV's node is not checked.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.storage import PersistentVolume, PersistentVolumeClaim
from volsched.scheduling.volumes.matching import claim_request


class PvLedger:
    def __init__(self) -> None:
        # PV name → the claim key it went to.
        self.theirs: dict[str, str] = {}
        self.ours: dict[str, str] = {}

    def placed(
        self,
        cluster: ClusterCache,
        their_volumes: Mapping[str, str],
        our_volumes: Mapping[str, str],
        our_node: str | None,
    ) -> None:
        """One judged claim pod: claim key → PV, for each scheduler's placement."""
        for claim_key, name in their_volumes.items():
            self.theirs[name] = claim_key
        for claim_key in their_volumes:
            ours = our_volumes.get(claim_key)
            if ours is None or not self.free(cluster, ours):
                claim = cluster.pvcs.get(claim_key)
                volume = self.fitting(cluster, claim, our_node, ()) if claim else None
                ours = volume.meta.name if volume is not None else None
            if ours is not None:
                self.ours[ours] = claim_key

    def free(self, cluster: ClusterCache, name: str) -> bool:
        if name in self.ours:
            return False
        if name in self.theirs:
            return True
        volume = cluster.pvs.get(name)
        return volume is not None and volume.claim_ref is None and volume.phase == "Available"

    def fitting(
        self,
        cluster: ClusterCache,
        claim: PersistentVolumeClaim,
        node: str | None,
        taken: Iterable[str],
    ) -> PersistentVolume | None:
        """The smallest PV free in volsched's placement that ``claim`` could bind (on
        ``node`` when one is given), but for ``taken``."""
        request = claim_request(claim)
        skip = set(taken)
        labels = cluster.nodes[node].node.meta.labels if node in cluster.nodes else None
        best: PersistentVolume | None = None
        for volume in cluster.pvs.values():
            name = volume.meta.name
            if (
                name in skip
                or volume.storage_class != claim.class_name
                or volume.capacity < request
                or volume.volume_mode != claim.volume_mode
                or not claim.access_modes <= volume.access_modes
                or volume.meta.deletion_timestamp is not None
                or (claim.selector is not None and not claim.selector.matches(volume.meta.labels))
                or not self.free(cluster, name)
            ):
                continue
            if node is not None:
                affinity = volume.node_affinity
                if affinity is not None and (labels is None or not affinity.matches(labels, node)):
                    continue
            if best is None or (volume.capacity, name) < (best.capacity, best.meta.name):
                best = volume
        return best

    def would_serve(self, cluster: ClusterCache, claims: Iterable[PersistentVolumeClaim]) -> bool:
        """Whether every one of a pending pod's unbound claims has a PV free in
        volsched's placement (each a different one)."""
        chosen: list[str] = []
        for claim in claims:
            volume = self.fitting(cluster, claim, None, chosen)
            if volume is None:
                return False
            chosen.append(volume.meta.name)
        return True

    def forget(self, claim_keys: Iterable[str]) -> None:
        """Claims deleted: the PVs they held are theirs no more, nor ours."""
        gone = set(claim_keys)
        for ledger in (self.theirs, self.ours):
            for name in [name for name, key in ledger.items() if key in gone]:
                del ledger[name]
