"""The provisioning checks CheckVolumeBinding runs, by provisioner: the daemon and
``simulate`` build the same set."""

from __future__ import annotations

from volsched.scheduling.longhorn_placement import LONGHORN_PROVISIONER, LonghornProvisioner
from volsched.scheduling.storage_placement import (
    REPLICATED_PROVISIONER,
    ReplicaContext,
    ReplicatedProvisioner,
)
from volsched.scheduling.volumes.provisioning import ProvisionerCheck


def storage_provisioners(context: ReplicaContext) -> dict[str, ProvisionerCheck]:
    return {
        REPLICATED_PROVISIONER: ReplicatedProvisioner(context),
        LONGHORN_PROVISIONER: LonghornProvisioner(context),
    }
