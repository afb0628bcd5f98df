"""Undoing a binding cycle's API writes: what a failed cycle and recovery both need.

A PV stays with its claim only if the PV controller already bound them (rolling forward
is what the user wants); otherwise its claimRef is cleared. A claim we annotated loses
the selected-node annotation. Replicas created for a volume that was never provisioned
are deleted.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import ApiError, Conflict, NotFound
from volsched.cache.objects.storage import (
    ANN_BIND_COMPLETED,
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
)
from volsched.daemon.binding.intent import ANN_BINDING_INTENT, Intent, UndoResult, written_by
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.watch.ingest import Ingest

log = logging.getLogger("volsched.binding")


class Undoer:
    def __init__(self, client: KubeClient, cluster: ClusterCache, ingest: Ingest) -> None:
        self.client = client
        self.cluster = cluster
        self.ingest = ingest

    async def undo(self, intent: Intent, done: Mapping[str, list[str]] | None = None) -> UndoResult:
        """Take back API writes that would outlive the failed binding.

        A PV stays with its claim only if the PV controller already bound them (rolling
        forward is what the user wants); otherwise its claimRef is cleared. A claim we
        annotated loses the selected-node annotation (if it was provisioned meanwhile, it
        keeps its volume). Replicas created for a volume that was never provisioned are
        deleted.
        """
        prebinds = (
            intent.prebinds
            if done is None
            else [p for p in intent.prebinds if p["pv"] in done["prebinds"]]
        )
        result = UndoResult()
        for prebind in prebinds:
            if prebind.get("preexisting") or not prebind.get("write", True):
                result.kept.append(prebind["pv"])
                continue
            try:
                released = await self._release_pv(prebind["pv"], prebind["claim"], intent)
            except ApiError as exc:
                log.warning("could not release PV %s: %s", prebind["pv"], exc)
                result.failed.append(f"PersistentVolume {prebind['pv']}")
                continue
            (result.released if released else result.kept).append(prebind["pv"])
        provisions = (
            intent.provisions
            if done is None
            else [p for p in intent.provisions if p["claim"] in done["provisions"]]
        )
        for provision in provisions:
            try:
                await self._release_claim(provision["claim"], intent)
            except ApiError as exc:
                log.warning("could not release claim %s: %s", provision["claim"], exc)
                result.failed.append(f"PersistentVolumeClaim {provision['claim']}")
        replicas = (
            intent.replicas
            if done is None
            else [r for r in intent.replicas if r["name"] in done["replicas"]]
        )
        for replica in replicas:
            if self.cluster.pvs.get_api(replica["volume"]) is None:
                try:
                    await self.client.delete("Replica", replica["name"])
                except NotFound:
                    pass
                except ApiError as exc:
                    log.warning("could not delete replica %s: %s", replica["name"], exc)
                    result.failed.append(f"Replica {replica['name']}")
                    continue
                self.ingest.delete_key("Replica", replica["name"])
        return result

    async def pod_is_bound(self, intent: Intent) -> bool:
        """Whether the intent's pod is bound on the intent's node, as the API server says
        now. A pod bound elsewhere (placed again after its first binding was abandoned)
        leaves the intent to undo: undo keeps whatever got bound and releases only what
        still names the claim."""
        namespace, name = intent.pod.split("/", 1)
        try:
            pod = await self.client.get("Pod", name, namespace)
        except NotFound:
            return False
        uid = (pod.get("metadata") or {}).get("uid")
        if intent.pod_uid and uid != intent.pod_uid:
            return False
        node = (pod.get("spec") or {}).get("nodeName")
        return bool(node) and (not intent.node or node == intent.node)

    async def _release_pv(self, pv_name: str, claim_key: str, intent: Intent) -> bool:
        """Clear a claimRef we wrote unless the claim got bound to the PV, or a later
        cycle of the pod wrote it again; True if cleared."""
        for _attempt in range(3):
            try:
                raw = await self.client.get("PersistentVolume", pv_name)
            except NotFound:
                return False
            ref = (raw.get("spec") or {}).get("claimRef") or {}
            if f"{ref.get('namespace')}/{ref.get('name')}" != claim_key:
                return False
            if not written_by((raw.get("metadata") or {}).get("annotations") or {}, intent):
                return False
            claim = self.cluster.pvcs.get_api(claim_key)
            if claim is not None and claim.volume_name == pv_name and claim.fully_bound:
                return False
            try:
                claim_raw = await self.client.get(
                    "PersistentVolumeClaim", *reversed(claim_key.split("/", 1))
                )
                annotations = (claim_raw.get("metadata") or {}).get("annotations") or {}
                if (claim_raw.get("spec") or {}).get("volumeName") == pv_name and (
                    ANN_BIND_COMPLETED in annotations
                ):
                    return False
            except NotFound:
                pass
            raw["spec"].pop("claimRef", None)
            released_annotations = (raw.get("metadata") or {}).get("annotations", {})
            released_annotations.pop(ANN_BOUND_BY_CONTROLLER, None)
            released_annotations.pop(ANN_BINDING_INTENT, None)
            try:
                updated = await self.client.replace("PersistentVolume", raw)
            except Conflict:
                continue
            except ApiError as exc:
                log.warning("could not release PV %s: %s", pv_name, exc)
                return False
            updated.setdefault("kind", "PersistentVolume")
            self.ingest.upsert("PersistentVolume", updated)
            return True
        return False

    async def _release_claim(self, claim_key: str, intent: Intent) -> None:
        """Remove the selected-node annotation (and the intent) we wrote for the intent's
        node; an API error is raised, for the caller to try again.

        A claim with no volume yet tells its provisioner to stop. A claim the provisioner
        already served keeps its volume, but loses the annotations too: a volume that
        other nodes can reach (no node affinity) lets the pod be placed elsewhere, and
        the claim must not go on naming a node its pod is not on. Annotations a later
        cycle of the pod wrote are left alone, and the patch carries the resourceVersion
        it was decided on, so a cycle that writes in between is never undone."""
        namespace, name = claim_key.split("/", 1)
        for _attempt in range(3):
            try:
                raw = await self.client.get("PersistentVolumeClaim", name, namespace)
            except NotFound:
                return
            meta = raw.get("metadata") or {}
            annotations = meta.get("annotations") or {}
            if annotations.get(ANN_SELECTED_NODE) != intent.node:
                return
            if not written_by(annotations, intent):
                return
            patch = {
                "metadata": {
                    "resourceVersion": meta.get("resourceVersion"),
                    "annotations": {ANN_SELECTED_NODE: None, ANN_BINDING_INTENT: None},
                }
            }
            try:
                updated = await self.client.patch(
                    "PersistentVolumeClaim", name, patch, namespace=namespace
                )
            except Conflict:
                continue
            updated.setdefault("kind", "PersistentVolumeClaim")
            self.ingest.upsert("PersistentVolumeClaim", updated)
            return
        raise Conflict(409, f"claim {claim_key} kept changing while its annotations were released")
