"""Whether a binding's volumes are ready for the pod: upstream's ``checkBindings``, read
from the cache, and the objects whose change can settle the question."""

from __future__ import annotations

from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.storage import (
    ANN_SELECTED_NODE,
)
from volsched.daemon.binding.intent import BindingFailed, Intent


def check_bound(cluster: ClusterCache, intent: Intent) -> bool:
    """Upstream's checkBindings: True when every claim is fully bound on a PV the node
    can reach; raises when binding can no longer work."""
    pod = cluster.pods.get(intent.pod)
    if pod is None or pod.meta.uid != intent.pod_uid or pod.meta.deletion_timestamp:
        raise BindingFailed(f"pod {intent.pod} was deleted while its volumes were binding")
    node = cluster.nodes.get(intent.node)
    if node is None:
        raise BindingFailed(f"node {intent.node} was deleted while volumes were binding")
    complete = True
    for prebind in intent.prebinds:
        pv = cluster.pvs.get_api(prebind["pv"])
        ref = pv.claim_ref if pv is not None else None
        if pv is None or ref is None or f"{ref.namespace}/{ref.name}" != prebind["claim"]:
            raise BindingFailed(f'ClaimRef got reset for pv "{prebind["pv"]}"')
        if not ref.uid:
            complete = False  # the PV controller has not taken it up yet
            continue
        claim = cluster.pvcs.get_api(prebind["claim"])
        if claim is None or not claim.fully_bound:
            complete = False
    for provision in intent.provisions:
        claim = cluster.pvcs.get_api(provision["claim"])
        if claim is None:
            raise BindingFailed(f'persistentvolumeclaim "{provision["claim"]}" was deleted')
        if claim.meta.annotations.get(ANN_SELECTED_NODE) != intent.node:
            # A provisioner that fails removes the annotation to ask for a new node.
            raise BindingFailed(f'provisioning failed for PVC "{claim.name}"')
        if claim.volume_name:
            pv = cluster.pvs.get_api(claim.volume_name)
            if pv is None:
                complete = False  # not seen yet; a deleted PV unbinds the claim
                continue
            affinity = pv.node_affinity
            if affinity is not None and not affinity.matches(node.node.meta.labels, intent.node):
                raise BindingFailed(
                    f'pv "{pv.meta.name}" node affinity doesn\'t match node "{intent.node}"'
                )
        if not claim.fully_bound:
            complete = False
    return complete


def watched_keys(cluster: ClusterCache, intent: Intent) -> list[tuple[str, str]]:
    """The objects whose change can complete (or break) this binding: the pod, its
    claims, the PVs prebound to them and those the provisioner gave them so far."""
    keys = [("Pod", intent.pod), ("Node", intent.node)]
    for prebind in intent.prebinds:
        keys += [
            ("PersistentVolumeClaim", prebind["claim"]),
            ("PersistentVolume", prebind["pv"]),
        ]
    for provision in intent.provisions:
        keys.append(("PersistentVolumeClaim", provision["claim"]))
        claim = cluster.pvcs.get_api(provision["claim"])
        if claim is not None and claim.volume_name:
            keys.append(("PersistentVolume", claim.volume_name))
    return keys
