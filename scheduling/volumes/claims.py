"""Sorting a pod's claims the way the VolumeBinding plugin's PreFilter does.

A claim is *fully bound* when ``spec.volumeName`` is set and the PV controller has added
``pv.kubernetes.io/bind-completed``; anything else is unbound, and an unbound claim is
the scheduler's to bind only when its class waits for the first consumer and no volume is
named yet. Everything else is "unbound immediate": the PV controller's job, so the pod
waits.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.core import Pod
from volsched.cache.objects.storage import PersistentVolumeClaim


class ClaimProblem(Exception):
    """A claim makes the pod unschedulable before any node is looked at."""


def uses_claim(pod: Pod, claim: PersistentVolumeClaim | None) -> bool:
    """Whether the pod names the claim (a claim added or changed may concern it)."""
    return (
        claim is not None and claim.namespace == pod.namespace and claim.name in pod.claim_names()
    )


def claim_not_found(name: str) -> str:
    """The API server's NotFound message for a claim, which upstream's plugins show as is."""
    return f'persistentvolumeclaim "{name}" not found'


@dataclass(slots=True)
class PodVolumeClaims:
    bound: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_delayed: list[PersistentVolumeClaim] = field(default_factory=list)
    unbound_immediate: list[PersistentVolumeClaim] = field(default_factory=list)


def _is_owned_by(pod: Pod, claim: PersistentVolumeClaim) -> bool:
    controller = claim.meta.controller()
    return controller is not None and controller.kind == "Pod" and controller.uid == pod.meta.uid


def check_pod_claims(cluster: ClusterCache, pod: Pod) -> bool:
    """Upstream's podHasPVCs: True when the pod uses claims; raises for a bad claim.

    Messages are upstream's, so operators can search them.
    """
    has_claims = False
    for volume in pod.volumes:
        if not volume.claim_name:
            continue
        has_claims = True
        claim = cluster.pvcs.get_api(f"{pod.namespace}/{volume.claim_name}")
        if claim is None:
            if volume.ephemeral:
                raise ClaimProblem(
                    "waiting for ephemeral volume controller to create the "
                    f'persistentvolumeclaim "{volume.claim_name}"'
                )
            raise ClaimProblem(claim_not_found(volume.claim_name))
        if claim.phase == "Lost":
            raise ClaimProblem(
                f'persistentvolumeclaim "{claim.name}" bound to non-existent '
                f'persistentvolume "{claim.volume_name}"'
            )
        if claim.meta.deletion_timestamp is not None:
            raise ClaimProblem(f'persistentvolumeclaim "{claim.name}" is being deleted')
        if volume.ephemeral and not _is_owned_by(pod, claim):
            raise ClaimProblem(
                f"PVC {claim.namespace}/{claim.name} was not created for pod "
                f"{pod.namespace}/{pod.name} (pod is not owner)"
            )
    return has_claims


def classify_pod_claims(cluster: ClusterCache, pod: Pod) -> PodVolumeClaims:
    """Split the pod's claims into bound, unbound-delayed and unbound-immediate."""
    result = PodVolumeClaims()
    for volume in pod.volumes:
        if not volume.claim_name:
            continue
        claim = cluster.pvcs.get(f"{pod.namespace}/{volume.claim_name}")
        if claim is None:
            raise ClaimProblem(
                f'error getting PVC "{pod.namespace}/{volume.claim_name}": not found'
            )
        if claim.fully_bound:
            result.bound.append(claim)
            continue
        storage_class = cluster.storage_classes.get(claim.class_name) if claim.class_name else None
        delayed = storage_class is not None and storage_class.wait_for_first_consumer
        if delayed and not claim.volume_name:
            result.unbound_delayed.append(claim)
        else:
            # Pre-bound claims (volumeName set, not yet completed) count as immediate.
            result.unbound_immediate.append(claim)
    return result
