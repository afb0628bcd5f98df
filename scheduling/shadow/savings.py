"""What storage awareness would have saved: the PV capacity each scheduler's choice
leaves stranded beyond the claims' requests.

A claim bound to a PV larger than it asked for holds the difference: no other claim can
use it. For a pod whose WaitForFirstConsumer claims the other scheduler bound to
pre-provisioned PVs, the shadow compares that excess with the excess of the PVs volsched
chose for the same claims on the same cluster. Claims provisioned dynamically strand
nothing (the volume is made to size) and are left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from volsched.cache.cluster import ClusterCache
from volsched.scheduling.framework.runner import Decision
from volsched.scheduling.plugins.volume_binding import NAME as VOLUME_BINDING
from volsched.scheduling.plugins.volume_binding import VolumeBindingState
from volsched.scheduling.volumes.matching import claim_request


def their_stranded(
    cluster: ClusterCache, claim_keys: Iterable[str], written: Mapping[str, str] | None = None
) -> int | None:
    """Bytes beyond the requests in the PVs the claims are bound to now — or, for a claim
    the PV controller has not bound yet, the PV the other scheduler's PreBind wrote
    (``written``: claim key → PV name); None when none of them has such a PV."""
    total = None
    written = written or {}
    for key in claim_keys:
        claim = cluster.pvcs.get(key)
        name = (claim.volume_name or written.get(key, "")) if claim is not None else ""
        volume = cluster.pvs.get(name) if name else None
        if claim is None or volume is None or not volume.is_bound_to(claim):
            continue
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
