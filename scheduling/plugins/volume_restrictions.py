"""NoDiskConflict (upstream's VolumeRestrictions): in-tree disks that cannot be mounted
twice, and ReadWriteOncePod claims that only one pod may use.

Disks are compared as ``PodVolume.disk`` identities against every pod on the node:

- GCE PD: same ``pdName``, unless both mounts are read-only;
- AWS EBS: same ``volumeID``, read-only or not;
- iSCSI: same IQN, unless both mounts are read-only;
- Ceph RBD: at least one monitor in common, same pool and same image, unless both
  mounts are read-only.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, replace

from volsched.cache.cluster import ClusterCache
from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.cache.objects.storage import READ_WRITE_ONCE_POD, PersistentVolumeClaim
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.events import (
    ADD,
    DELETE,
    NODE,
    PERSISTENT_VOLUME_CLAIM,
    POD,
    ClusterEventWithHint,
    on,
)
from volsched.scheduling.framework.status import SKIP, SUCCESS, Status, unresolvable, unschedulable
from volsched.scheduling.volumes.claims import claim_not_found, uses_claim

REASON_DISK_CONFLICT = "node(s) had no available disk"
# Current kube-scheduler's wording (older releases: "node has pod using
# PersistentVolumeClaim with the same name and ReadWriteOncePod access mode").
REASON_READ_WRITE_ONCE_POD = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode"
    " already in-use by another pod"
)
_DISK_REJECTED = unschedulable(REASON_DISK_CONFLICT)
_READ_WRITE_ONCE_POD_REJECTED = unschedulable(REASON_READ_WRITE_ONCE_POD)


def _monitors(packed: str) -> frozenset[str]:
    # ``_disk_identity`` packs an RBD volume's monitors as a sorted comma-joined string.
    return frozenset(packed.split(",")) if packed else frozenset()


@dataclass(frozen=True, slots=True)
class _Wanted:
    """The pod's disks grouped by kind, and its ReadWriteOncePod claims already in use."""

    gce: tuple[tuple[str, bool], ...] = ()
    aws: frozenset[str] = frozenset()
    iscsi: tuple[tuple[str, bool], ...] = ()
    rbd: tuple[tuple[frozenset[str], str, str, bool], ...] = ()
    # How many uses by placed pods of the pod's ReadWriteOncePod claims (upstream's
    # conflictingPVCRefCount), and those claims, to count pods added or removed.
    claims_in_use: int = 0
    exclusive_claims: frozenset[str] = frozenset()

    @property
    def has_disks(self) -> bool:
        return bool(self.gce or self.aws or self.iscsi or self.rbd)

    def conflicts_with(self, disk: tuple[str, ...]) -> bool:
        """Whether another pod's disk ``disk`` collides with one of this pod's."""
        kind = disk[0]
        if kind == "gce":
            name, read_only = disk[1], disk[2] == "ro"
            return any(n == name and not (ro and read_only) for n, ro in self.gce)
        if kind == "aws":
            return disk[1] in self.aws
        if kind == "iscsi":
            iqn, read_only = disk[1], disk[2] == "ro"
            return any(i == iqn and not (ro and read_only) for i, ro in self.iscsi)
        if kind == "rbd" and self.rbd:
            monitors = _monitors(disk[1])
            pool, image, read_only = disk[2], disk[3], disk[4] == "ro"
            return any(
                p == pool and i == image and not (ro and read_only) and not m.isdisjoint(monitors)
                for m, p, i, ro in self.rbd
            )
        return False


def _disk_name(disk: tuple[str, ...]) -> tuple[str, ...]:
    """A disk's identity without its mode (and, for RBD, its monitors): two pods whose
    disks share it may conflict."""
    return ("rbd", disk[2], disk[3]) if disk[0] == "rbd" else disk[:2]


def _uses(other: Pod, namespace: str, claims: Collection[str]) -> int:
    """How many of ``other``'s volumes are one of ``claims`` (of ``namespace``)."""
    if other.meta.namespace != namespace:
        return 0
    return sum(
        1 for volume in other.volumes if volume.claim_name in claims and not volume.ephemeral
    )


class VolumeRestrictions:
    """Filter. A disk conflict and a ReadWriteOncePod claim in use are both Unschedulable
    (evicting the other pod would resolve them); a claim that does not exist is
    UnschedulableAndUnresolvable at pre-filter. A pod with neither kind of volume skips
    the filter on every node."""

    name = "VolumeRestrictions"

    def __init__(self, cluster: ClusterCache) -> None:
        self.cluster = cluster
        self._key = f"PreFilter{self.name}"

    def events_to_register(self) -> tuple[ClusterEventWithHint, ...]:
        """Upstream's: a deleted pod releases its disks and claims (a pod's volumes
        never change), a node added has none in use, the pod's claim may appear."""
        return (
            on(POD, DELETE, self.after_pod_deleted),
            on(NODE, ADD),
            on(PERSISTENT_VOLUME_CLAIM, ADD, self.after_claim_added),
        )

    def after_pod_deleted(self, pod: Pod, old: Pod | None, new: Pod | None) -> bool:
        """The deleted pod used one of the pod's claims, or one of its disks."""
        if old is None:
            return False
        if old.namespace == pod.namespace and set(old.claim_names()) & set(pod.claim_names()):
            return True
        disks = {_disk_name(volume.disk) for volume in pod.volumes if volume.disk}
        return any(volume.disk and _disk_name(volume.disk) in disks for volume in old.volumes)

    def after_claim_added(
        self, pod: Pod, old: PersistentVolumeClaim | None, new: PersistentVolumeClaim | None
    ) -> bool:
        return uses_claim(pod, new)

    def pre_filter(self, state: CycleState, pod: Pod) -> tuple[Collection[str] | None, Status]:
        gce: list[tuple[str, bool]] = []
        aws: set[str] = set()
        iscsi: list[tuple[str, bool]] = []
        rbd: list[tuple[frozenset[str], str, str, bool]] = []
        exclusive_claims: set[str] = set()
        for volume in pod.volumes:
            disk = volume.disk
            if disk:
                kind = disk[0]
                if kind == "gce":
                    gce.append((disk[1], disk[2] == "ro"))
                elif kind == "aws":
                    aws.add(disk[1])
                elif kind == "iscsi":
                    iscsi.append((disk[1], disk[2] == "ro"))
                elif kind == "rbd":
                    rbd.append((_monitors(disk[1]), disk[2], disk[3], disk[4] == "ro"))
            elif volume.claim_name and not volume.ephemeral:
                # Upstream reads only persistentVolumeClaim volumes here, not ephemeral ones.
                claim = self.cluster.pvcs.get_api(f"{pod.namespace}/{volume.claim_name}")
                if claim is None:
                    return None, unresolvable(claim_not_found(volume.claim_name))
                if READ_WRITE_ONCE_POD in claim.access_modes:
                    exclusive_claims.add(volume.claim_name)
        in_use = self._claims_in_use(pod.namespace, exclusive_claims) if exclusive_claims else 0
        wanted = _Wanted(
            tuple(gce),
            frozenset(aws),
            tuple(iscsi),
            tuple(rbd),
            in_use,
            frozenset(exclusive_claims),
        )
        state.write(self._key, wanted)
        if not wanted.has_disks and in_use == 0:
            return None, SKIP
        return None, SUCCESS

    def _claims_in_use(self, namespace: str, claims: set[str]) -> int:
        """How many uses of ``claims`` placed (or assumed) pods make."""
        return sum(
            _uses(other, namespace, claims)
            for info in self.cluster.nodes.values()
            for other in info.pods.values()
        )

    def add_pod(self, state: CycleState, pod: Pod, added: Pod, node: NodeInfo) -> None:
        """PreFilterExtensions: a pod the preemption dry run or a nomination adds."""
        self._count(state, pod, added, 1)

    def remove_pod(self, state: CycleState, pod: Pod, removed: Pod, node: NodeInfo) -> None:
        """PreFilterExtensions: a victim the dry run removes frees its claims."""
        self._count(state, pod, removed, -1)

    def _count(self, state: CycleState, pod: Pod, other: Pod, sign: int) -> None:
        wanted: _Wanted | None = state.read(self._key)
        if wanted is None or not wanted.exclusive_claims:
            return
        uses = _uses(other, pod.namespace, wanted.exclusive_claims)
        if uses:
            state.write(
                self._key, replace(wanted, claims_in_use=wanted.claims_in_use + sign * uses)
            )

    def filter(self, state: CycleState, pod: Pod, node: NodeInfo) -> Status | None:
        wanted: _Wanted | None = state.read(self._key)
        if wanted is None:
            # Pre-filter did not run for this cycle: do its work once, here.
            _, status = self.pre_filter(state, pod)
            wanted = state.read(self._key)
            if wanted is None:
                return status
        if wanted.has_disks:
            for other in node.pods.values():
                for volume in other.volumes:
                    if volume.disk and wanted.conflicts_with(volume.disk):
                        return _DISK_REJECTED
        if wanted.claims_in_use:
            return _READ_WRITE_ONCE_POD_REJECTED
        return None
