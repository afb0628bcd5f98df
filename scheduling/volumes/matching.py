"""Finding the PV for an unbound WaitForFirstConsumer claim on one node.

The rules are upstream's FindMatchingVolume, in its order:

- a PV pre-bound to the claim (claimRef names it, uid matching when set) that is large
  enough, of the claim's volume mode and not being deleted wins if the node satisfies its
  node affinity — and if it does not, the claim has no PV on this node (it blocks);
- otherwise the smallest PV that is unclaimed, large enough, of the same volume mode,
  not being deleted, phase Available, matching the claim's selector and class, reachable
  from the node and offering every access mode the claim asks for;
- a PV already chosen for another claim of the same pod is skipped.

Candidates come from the PV index (PVs whose node affinity names the node, per class)
plus a per-cycle list of the class's PVs without node affinity, pre-filtered and sorted
once, so the cost per node follows the PVs that node can reach.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.storage import PersistentVolume, PersistentVolumeClaim


def claim_request(claim: PersistentVolumeClaim) -> int:
    return claim.request or 0


def _fits_basics(pv: PersistentVolume, claim: PersistentVolumeClaim, request: int) -> bool:
    """Size, volume mode and deletion: checked before anything else, pre-bound or not."""
    return (
        pv.capacity >= request
        and pv.volume_mode == claim.volume_mode
        and pv.meta.deletion_timestamp is None
    )


def _fits_unclaimed(pv: PersistentVolume, claim: PersistentVolumeClaim, request: int) -> bool:
    if pv.claim_ref is not None or not _fits_basics(pv, claim, request):
        return False
    if pv.phase != "Available":
        return False
    if claim.selector is not None and not claim.selector.matches(pv.meta.labels):
        return False
    if pv.storage_class != claim.class_name:
        return False
    return claim.access_modes <= pv.access_modes


@dataclass(slots=True)
class ClaimMatcher:
    """Everything about one claim that does not depend on the node, computed once."""

    claim: PersistentVolumeClaim
    request: int
    prebound: list[PersistentVolume]
    anywhere: list[PersistentVolume]
    selected_node: str | None = None

    @classmethod
    def build(cls, cluster: ClusterCache, claim: PersistentVolumeClaim) -> ClaimMatcher:
        request = claim_request(claim)
        class_name = claim.class_name
        prebound = []
        for name in sorted(cluster.pvs_prebound_to(claim.key)):
            pv = cluster.pvs.get(name)
            if pv is not None and pv.storage_class == class_name and pv.is_bound_to(claim):
                prebound.append(pv)
        anywhere = []
        for name in cluster.pv_index.anywhere(class_name):
            pv = cluster.pvs.get(name)
            if pv is not None and _fits_unclaimed(pv, claim, request):
                anywhere.append(pv)
        anywhere.sort(key=lambda pv: (pv.capacity, pv.meta.name))
        return cls(claim, request, prebound, anywhere, claim.selected_node)

    def find(
        self, cluster: ClusterCache, node: NodeInfo, chosen: set[str]
    ) -> PersistentVolume | None:
        claim = self.claim
        request = self.request
        node_name = node.name
        for pv in self.prebound:
            if pv.meta.name in chosen or not _fits_basics(pv, claim, request):
                continue
            affinity = pv.node_affinity
            if affinity is None or affinity.matches(node.node.meta.labels, node_name):
                return pv
            return None
        # The index only lists PVs of the claim's class whose node affinity admits this
        # node; the rest of _fits_unclaimed is inlined here, cheapest tests first, since
        # this loop runs for every candidate node of every pod.
        best: PersistentVolume | None = None
        latest = cluster.pvs.latest
        mode = claim.volume_mode
        class_name = claim.class_name
        modes = claim.access_modes
        selector = claim.selector
        candidates = cluster.pv_index.on_node(node_name, class_name)
        # Smallest first: the first PV that passes every test is the one to take.
        for capacity, name in candidates[bisect.bisect_left(candidates, (request, "")) :]:
            if name in chosen:
                continue
            candidate = latest.get(name)
            if (
                candidate is None
                or candidate.claim_ref is not None
                or candidate.phase != "Available"
                or candidate.capacity != capacity
                or candidate.volume_mode != mode
                or candidate.meta.deletion_timestamp is not None
                or candidate.storage_class != class_name
                or not modes <= candidate.access_modes
                or (selector is not None and not selector.matches(candidate.meta.labels))
            ):
                continue
            best = candidate
            break
        for spare in self.anywhere:
            if spare.meta.name in chosen:
                continue
            if best is None or (spare.capacity, spare.meta.name) < (best.capacity, best.meta.name):
                best = spare
            break
        return best
