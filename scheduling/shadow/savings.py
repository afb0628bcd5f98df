"""What storage awareness would have saved: the PV capacity each scheduler's choice
leaves stranded beyond the claims' requests, the replicated volumes a pod runs away
from, and the claim pods left pending that volsched's placements would have served
(``pv_ledger``).

A claim bound to a PV larger than it asked for holds the difference: no other claim can
use it. For a pod whose WaitForFirstConsumer claims the other scheduler bound to
pre-provisioned PVs, the shadow compares that excess with the excess of the PVs volsched
chose for the same claims on the same cluster. Claims provisioned dynamically strand
nothing (the volume is made to size) and are left out.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.runner import Decision
from volsched.scheduling.plugins.storage_locality import REPLICA_POINTS, pod_storage
from volsched.scheduling.plugins.volume_binding import NAME as VOLUME_BINDING
from volsched.scheduling.plugins.volume_binding import VolumeBindingState
from volsched.scheduling.shadow.comparison import Comparison
from volsched.scheduling.shadow.own_writes import unbound_claims
from volsched.scheduling.shadow.pv_ledger import PvLedger
from volsched.scheduling.volumes.matching import claim_request


def their_claim_volumes(
    cluster: ClusterCache, claim_keys: Iterable[str], written: Mapping[str, str] | None = None
) -> dict[str, str]:
    """Claim key → the PV each claim is bound to now — or, for a claim the PV controller
    has not bound yet, the PV the other scheduler's PreBind wrote (``written``)."""
    volumes = {}
    written = written or {}
    for key in claim_keys:
        claim = cluster.pvcs.get(key)
        name = (claim.volume_name or written.get(key, "")) if claim is not None else ""
        volume = cluster.pvs.get(name) if name else None
        if claim is not None and volume is not None and volume.is_bound_to(claim):
            volumes[key] = name
    return volumes


def their_stranded(
    cluster: ClusterCache, claim_keys: Iterable[str], written: Mapping[str, str] | None = None
) -> int | None:
    """Bytes beyond the requests in the PVs the other scheduler's placement bound the
    claims to; None when none of them has such a PV."""
    total = None
    for key, name in their_claim_volumes(cluster, claim_keys, written).items():
        claim, volume = cluster.pvcs.get(key), cluster.pvs.get(name)
        if claim is not None and volume is not None:
            total = (total or 0) + max(volume.capacity - claim_request(claim), 0)
    return total


def our_stranded(decision: Decision) -> int | None:
    """Bytes beyond the requests in the PVs volsched chose on its node; None when it
    chose none (no node, or only provisioning)."""
    data: VolumeBindingState | None = decision.state.read(VOLUME_BINDING)
    if decision.node is None or data is None:
        return None
    volumes = data.by_node.get(decision.node)
    if volumes is None or not volumes.static_bindings:
        return None
    return sum(
        max(binding.pv.capacity - claim_request(binding.claim), 0)
        for binding in volumes.static_bindings
    )


def our_volumes(decision: Decision) -> dict[str, str]:
    """Claim key → the PV volsched chose for it on its node (static PVs only)."""
    data: VolumeBindingState | None = decision.state.read(VOLUME_BINDING)
    if decision.node is None or data is None:
        return {}
    volumes = data.by_node.get(decision.node)
    if volumes is None:
        return {}
    return {binding.claim.key: binding.pv.meta.name for binding in volumes.static_bindings}


def volumes_off_node(cluster: ClusterCache, pod: Pod, node: str | None) -> int | None:
    """How many of the pod's replicated volumes have no replica holding healthy data on
    ``node`` (the pod reads them over the network); None for a pod without any."""
    storage = pod_storage(cluster, pod)
    if storage is None or not storage.volumes or node is None:
        return None
    return sum(
        1 for copies in storage.volumes if copies.points_by_node.get(node, 0) < REPLICA_POINTS
    )


@dataclass(slots=True)
class StorageSavings:
    """The running totals the report's ``storage`` shows."""

    claim_pods: int = 0
    their_stranded: int = 0
    our_stranded: int = 0
    replicated_pods: int = 0
    their_off_node: int = 0
    our_off_node: int = 0
    # Claim pods pending because no PV fits: whether volsched's placements would have
    # served each.
    pending_for_volumes: dict[str, bool] = field(default_factory=dict)

    def record(self, stranded: tuple[int, int] | None, off_node: tuple[int, int] | None) -> None:
        if stranded is not None:
            self.claim_pods += 1
            self.their_stranded += stranded[0]
            self.our_stranded += stranded[1]
        if off_node is not None:
            self.replicated_pods += 1
            self.their_off_node += off_node[0]
            self.our_off_node += off_node[1]

    def report(self) -> dict[str, Any]:
        return {
            "claimPods": self.claim_pods,
            "theirStrandedBytes": self.their_stranded,
            "ourStrandedBytes": self.our_stranded,
            "savedBytes": self.their_stranded - self.our_stranded,
            "replicatedPods": self.replicated_pods,
            "theirVolumesOffNode": self.their_off_node,
            "ourVolumesOffNode": self.our_off_node,
            "pendingForVolumes": len(self.pending_for_volumes),
            "pendingServedByVolsched": sum(self.pending_for_volumes.values()),
        }


class StorageAccounting:
    """What each judged pod adds to the storage totals, and the ledger of the PVs each
    scheduler's placements took."""

    def __init__(self, cluster: ClusterCache) -> None:
        self.cluster = cluster
        self.ledger = PvLedger()

    def their_stranded(
        self, claims: Iterable[str], written: Mapping[str, str] | None
    ) -> int | None:
        return their_stranded(self.cluster, claims, written)

    def account(
        self,
        comparison: Comparison,
        pod: Pod,
        decision: Decision,
        claims: tuple[Iterable[str], Mapping[str, str] | None, int | None],
    ) -> Comparison:
        """``comparison`` with the pod's stranded capacity and volumes off the node, as
        both schedulers placed it; ``claims`` is the pod's claims unbound when it was
        first seen, the PVs the other scheduler's PreBind wrote, and their stranded
        capacity (read before their writes were taken out)."""
        keys, written, theirs = claims
        ours = our_stranded(decision)
        if theirs is not None and ours is not None:
            comparison = dataclasses.replace(comparison, stranded=(theirs, ours))
        their_off = volumes_off_node(self.cluster, pod, comparison.their_node)
        our_off = volumes_off_node(self.cluster, pod, decision.node)
        if their_off is not None and our_off is not None:
            comparison = dataclasses.replace(comparison, off_node=(their_off, our_off))
        self.ledger.placed(
            self.cluster,
            their_claim_volumes(self.cluster, keys, written),
            our_volumes(decision),
            decision.node,
        )
        return comparison

    def would_serve(self, pod: Pod) -> bool:
        """Whether volsched's own placements would have left a PV for each of the
        pending pod's unbound claims."""
        claims = [
            claim
            for key in unbound_claims(self.cluster, pod.namespace, pod.claim_names())
            if (claim := self.cluster.pvcs.get(key)) is not None
        ]
        return self.ledger.would_serve(self.cluster, claims)
