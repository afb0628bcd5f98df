"""The cluster the other scheduler decided on: its own writes for the pod taken out.

kube-scheduler's PreBind binds a WaitForFirstConsumer claim (the PV's ``claimRef``, then
the PV controller's binding) or names its node (``selected-node``) before it binds the
pod. By the time the shadow sees the binding, the cache holds those writes, and a claim
bound on *their* node leaves volsched's VolumeBinding only that node: the comparison
could never disagree. So the claims that were unbound when the pod was first seen
pending are judged unbound again, in the cache's assume layer, for the one decision:

- the claim loses its volume, its bind annotations and its selected node;
- a PV that already existed then is free again (no ``claimRef``, Available);
- a PV created since — provisioned for this claim — is hidden: it stays bound, to no
  claim volsched knows, so it is no candidate for the claim it was made for.

``restore`` puts the cache back as the API server says it is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.storage import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    ClaimRef,
    PersistentVolume,
    PersistentVolumeClaim,
)

_BINDING_ANNOTATIONS = (ANN_BIND_COMPLETED, ANN_BOUND_BY_CONTROLLER, ANN_SELECTED_NODE)
# A claim no pod has: what a hidden PV is bound to.
_NOBODY = ClaimRef(namespace="", name="", uid="volsched-shadow-hidden")


@dataclass(slots=True)
class Undone:
    """What was taken out of the cache, to put back."""

    claims: list[str] = field(default_factory=list)
    volumes: list[str] = field(default_factory=list)

    def restore(self, cluster: ClusterCache) -> None:
        for key in self.claims:
            cluster.pvcs.restore(key)
        for name in self.volumes:
            cluster.pvs.restore(name)


def unbound_claims(
    cluster: ClusterCache, namespace: str, claim_names: Iterable[str]
) -> frozenset[str]:
    """The keys of the pod's claims that nothing has bound or placed yet. A claim the
    cache does not hold yet counts: made just before its pod (as a StatefulSet's are),
    its event can reach the shadow after the pod's, and nothing could have bound it
    before the pod existed but the one who made it bound."""
    keys = []
    for name in claim_names:
        key = f"{namespace}/{name}"
        claim = cluster.pvcs.get(key)
        if claim is None or (not claim.volume_name and not claim.selected_node):
            keys.append(key)
    return frozenset(keys)


def _unbound(claim: PersistentVolumeClaim) -> PersistentVolumeClaim:
    annotations = {
        key: value
        for key, value in claim.meta.annotations.items()
        if key not in _BINDING_ANNOTATIONS
    }
    return dataclasses.replace(
        claim,
        volume_name="",
        phase="Pending",
        meta=dataclasses.replace(claim.meta, annotations=annotations),
    )


def undo_binding_writes(
    cluster: ClusterCache,
    claim_keys: Iterable[str],
    first_seen: float,
    written: Mapping[str, str] | None = None,
) -> Undone:
    """Judge ``claim_keys`` unbound again (see the module's docstring); ``first_seen``
    is when the pod was first seen pending (a creation timestamp's clock), ``written``
    the PVs the other scheduler's PreBind wrote for claims the PV controller has not
    bound yet (claim key → PV name)."""
    undone = Undone()
    written = written or {}
    for key in claim_keys:
        claim = cluster.pvcs.get(key)
        if claim is None:
            continue
        name = claim.volume_name or written.get(key, "")
        if not (name or claim.selected_node):
            continue
        if claim.volume_name or claim.selected_node:
            cluster.pvcs.assume(key, _unbound(claim))
            undone.claims.append(key)
        volume = cluster.pvs.get(name) if name else None
        if volume is None or not volume.is_bound_to(claim):
            continue
        freed: PersistentVolume
        if volume.meta.creation_timestamp and volume.meta.creation_timestamp >= first_seen:
            freed = dataclasses.replace(volume, claim_ref=_NOBODY, phase="Bound")
        else:
            freed = dataclasses.replace(volume, claim_ref=None, phase="Available")
        cluster.pvs.assume(volume.meta.name, freed)
        undone.volumes.append(volume.meta.name)
    return undone
