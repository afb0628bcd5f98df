"""Which shadowed pods the other scheduler is binding volumes for right now.

kube-scheduler decides a pod, assumes it on its node in its own cache, and only then,
in PreBind, writes its claims' binding (the PV's ``claimRef``, or ``selected-node``) and
waits — about a second for the PV controller — before it binds the pod. It places the
pods after it with that pod counted on its node. The shadow sees only what reaches the
API server, so it reads the first write for a pod's claim as the moment the pod was
decided: the node is the PV's (when its affinity admits one node) or the selected one,
and the shadow then counts the pod there too, as kube-scheduler does, until the binding
arrives (or a timeout says the binding failed).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from volsched.cache.cluster import ClusterCache


@dataclass(frozen=True, slots=True)
class Written:
    """A PreBind write: the pod, the node it was decided onto, and the PV chosen for a
    claim (claim key → PV name; empty for a claim sent to provisioning)."""

    pod: str
    node: str
    volumes: dict[str, str]


class PreBinding:
    def __init__(self) -> None:
        # Claim key → the pending pod (key) that uses it, for the pods being watched.
        self._pod_of_claim: dict[str, str] = {}
        self._claims_of_pod: dict[str, frozenset[str]] = {}

    def watch(self, pod_key: str, claim_keys: Iterable[str]) -> None:
        claims = frozenset(claim_keys)
        if not claims:
            return
        self._claims_of_pod[pod_key] = claims
        for claim in claims:
            self._pod_of_claim[claim] = pod_key

    def forget(self, pod_key: str) -> None:
        for claim in self._claims_of_pod.pop(pod_key, ()):
            if self._pod_of_claim.get(claim) == pod_key:
                del self._pod_of_claim[claim]

    def watching(self) -> list[str]:
        return list(self._claims_of_pod)

    def written(self, cluster: ClusterCache, kind: str, key: str) -> Written | None:
        """The pod, its node and the PV written, when this change of a PV or claim is
        the other scheduler's PreBind write for a watched pod's claim; None otherwise."""
        if kind == "PersistentVolumeClaim":
            claim = cluster.pvcs.get_api(key)
            node = claim.selected_node if claim is not None else None
            pod = self._pod_of_claim.get(key)
            return Written(pod, node, {}) if pod and node and node in cluster.nodes else None
        if kind != "PersistentVolume":
            return None
        volume = cluster.pvs.get_api(key)
        ref = volume.claim_ref if volume is not None else None
        if ref is None:
            return None
        claim_key = f"{ref.namespace}/{ref.name}"
        pod = self._pod_of_claim.get(claim_key)
        nodes = cluster.pv_index.nodes_of(key)
        if not pod or nodes is None or len(nodes) != 1:
            return None
        (node,) = nodes
        return Written(pod, node, {claim_key: key})
