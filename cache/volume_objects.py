"""PersistentVolumes and claims in both layers, with the indexes volume binding reads.

The volume binder assumes PVs (a claimRef) and claims (a selected node) before the API
server confirms them, so both kinds live in an ``AssumeCache``. Every change of a PV,
informer or assumed, passes through one callback that keeps the index of PVs each node
can reach and the PVs pre-bound to each claim, so neither layer can leave them stale.
"""

from __future__ import annotations

from collections import defaultdict

from volsched.cache.assumed import AssumeCache
from volsched.cache.objects.storage import PersistentVolume, PersistentVolumeClaim
from volsched.cache.pv_index import PersistentVolumeIndex


class VolumeObjects:
    """The PV and PVC assume caches, the per-node PV index, and claimRefs by claim."""

    def __init__(self) -> None:
        self.pv_index = PersistentVolumeIndex()
        self._claim_pvs: dict[str, set[str]] = defaultdict(set)
        self.pvs: AssumeCache[PersistentVolume] = AssumeCache("PersistentVolume", self._pv_changed)
        self.pvcs: AssumeCache[PersistentVolumeClaim] = AssumeCache("PersistentVolumeClaim")

    def pvs_prebound_to(self, claim_key: str) -> set[str]:
        """PVs whose (latest) claimRef names this claim."""
        return self._claim_pvs.get(claim_key) or set()

    def _pv_changed(self, old: PersistentVolume | None, new: PersistentVolume | None) -> None:
        if old is not None and old.claim_ref is not None:
            ref = old.claim_ref
            self._claim_pvs[f"{ref.namespace}/{ref.name}"].discard(old.meta.name)
        if new is None:
            if old is not None:
                self.pv_index.delete_pv(old.meta.name)
            return
        if new.claim_ref is not None:
            ref = new.claim_ref
            self._claim_pvs[f"{ref.namespace}/{ref.name}"].add(new.meta.name)
        self.pv_index.upsert_pv(new)
