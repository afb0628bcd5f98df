"""Per-node agents: volsched's storage agent and a minimal kubelet.

The storage agent runs only while the ``storagenodes.volsched.io`` CRD exists.  It keeps
every StorageNode ``status.ready: true`` and each configured disk's
``status.disks.<disk>.storageScheduled`` equal to the sum of ``Volume.spec.size`` over
the Replicas placed on it (``spec.nodeID`` / ``spec.diskID``), as Longhorn's node
controller does, and marks a Replica ``status.synced: true`` once it has existed for
``replica_sync_delay_seconds``.  Other disk figures (``storageMaximum``,
``storageAvailable``) are measured by a real agent; here they stay as loaded.

The kubelet (off by default, so tests control their nodes) taints a node that is not
Ready with ``node.kubernetes.io/not-ready:NoSchedule``, as the node lifecycle
controller does, marks it Ready after ``node_ready_delay_seconds`` and lifts the taint;
it also starts pods bound to a Ready node (phase ``Running``) after
``pod_start_delay_seconds``.
"""

from __future__ import annotations

from typing import Any

from volsched.emulator.controllers import Controller
from volsched.emulator.pv_controller import deleting
from volsched.emulator.quantity import to_bytes
from volsched.emulator.raw import Raw, clone, mapping, name_of, namespace_of, now_rfc3339

STORAGE_NODE_CRD = "storagenodes.volsched.io"
GROUP = "volsched.io"
NOT_READY_TAINT = "node.kubernetes.io/not-ready"


class StorageAgent(Controller):
    name = "storage-agent"

    def reconcile(self) -> None:
        if not self.crd_exists(STORAGE_NODE_CRD):
            return
        sizes = {
            name_of(v): to_bytes(mapping(v, "spec").get("size", 0)) or 0
            for v in self.objects(GROUP, "volumes")
        }
        scheduled: dict[tuple[str, str], int] = {}
        for replica in self.objects(GROUP, "replicas"):
            spec = mapping(replica, "spec")
            place = (str(spec.get("nodeID") or ""), str(spec.get("diskID") or ""))
            scheduled[place] = scheduled.get(place, 0) + sizes.get(
                str(spec.get("volumeName") or ""), 0
            )
            if not deleting(replica) and mapping(replica, "status").get("synced") is not True:
                name = name_of(replica)
                self.later(
                    f"sync/{name}",
                    self.settings.replica_sync_delay_seconds,
                    self._sync,
                    name,
                )
        for node in self.objects(GROUP, "storagenodes"):
            status: Any = clone(node.get("status") or {})
            status["ready"] = True
            disks = status.get("disks") if isinstance(status.get("disks"), dict) else {}
            for disk in mapping(node, "spec", "disks"):
                entry = dict(disks.get(disk) or {})
                entry["storageScheduled"] = scheduled.get((name_of(node), str(disk)), 0)
                disks[disk] = entry
            status["disks"] = disks
            if status != node.get("status"):
                new = clone(node)
                new["status"] = status
                self.write(GROUP, "storagenodes", new, self._status_sub("storagenodes"))

    def _status_sub(self, plural: str) -> str | None:
        resource = self.kind(GROUP, plural)
        return "status" if resource is not None and resource.has_status else None

    def _sync(self, name: str) -> None:
        replica = self.find(GROUP, "replicas", "", name)
        if replica is None or deleting(replica) or mapping(replica, "status").get("synced") is True:
            return
        new = clone(replica)
        new.setdefault("status", {})["synced"] = True
        self.write(GROUP, "replicas", new, self._status_sub("replicas"))


def _ready(node: Raw) -> bool:
    return any(
        c.get("type") == "Ready" and c.get("status") == "True"
        for c in mapping(node, "status").get("conditions") or []
    )


class Kubelet(Controller):
    name = "kubelet"

    def reconcile(self) -> None:
        ready_nodes = set()
        for node in self.objects("", "nodes"):
            name = name_of(node)
            taints = mapping(node, "spec").get("taints") or []
            tainted = any(t.get("key") == NOT_READY_TAINT for t in taints)
            if _ready(node):
                ready_nodes.add(name)
                if tainted:
                    self._set_taint(node, False)
                continue
            if not tainted:
                self._set_taint(node, True)
            self.later(
                f"ready/{name}",
                self.settings.node_ready_delay_seconds,
                self._mark_ready,
                name,
            )
        for pod in self.objects("", "pods"):
            node_name = mapping(pod, "spec").get("nodeName")
            if (
                node_name in ready_nodes
                and mapping(pod, "status").get("phase", "Pending") == "Pending"
                and not deleting(pod)
            ):
                key = (namespace_of(pod), name_of(pod))
                self.later(
                    f"start/{key[0]}/{key[1]}",
                    self.settings.pod_start_delay_seconds,
                    self._start,
                    key,
                )

    def _set_taint(self, node: Raw, present: bool) -> None:
        new = clone(node)
        spec = new.setdefault("spec", {})
        taints = [t for t in spec.get("taints") or [] if t.get("key") != NOT_READY_TAINT]
        if present:
            taints.append({"key": NOT_READY_TAINT, "effect": "NoSchedule"})
        spec["taints"] = taints
        self.write("", "nodes", new)

    def _mark_ready(self, name: str) -> None:
        node = self.find("", "nodes", "", name)
        if node is None or _ready(node):
            return
        new = clone(node)
        status = new.setdefault("status", {})
        now = now_rfc3339()
        conditions = [c for c in status.get("conditions") or [] if c.get("type") != "Ready"]
        conditions.append(
            {
                "type": "Ready",
                "status": "True",
                "reason": "KubeletReady",
                "message": "kubelet is posting ready status",
                "lastHeartbeatTime": now,
                "lastTransitionTime": now,
            }
        )
        status["conditions"] = conditions
        node = self.write("", "nodes", new, "status")
        self._set_taint(node, False)

    def _start(self, key: tuple[str, str]) -> None:
        pod = self.find("", "pods", *key)
        if (
            pod is None
            or deleting(pod)
            or mapping(pod, "status").get("phase", "Pending") != "Pending"
        ):
            return
        node = self.find("", "nodes", "", str(mapping(pod, "spec").get("nodeName") or ""))
        if node is None or not _ready(node):
            return
        new = clone(pod)
        status = new.setdefault("status", {})
        now = now_rfc3339()
        status["phase"] = "Running"
        status["startTime"] = now
        kept = [c for c in status.get("conditions") or [] if c.get("type") == "PodScheduled"]
        status["conditions"] = kept + [
            {"type": t, "status": "True", "lastProbeTime": None, "lastTransitionTime": now}
            for t in ("Initialized", "Ready", "ContainersReady")
        ]
        self.write("", "pods", new, "status")
