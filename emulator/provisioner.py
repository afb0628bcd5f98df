"""A dynamic provisioner: creates a PV for a claim that needs one.

As the external-provisioner sidecar does, it acts on a claim of a class whose provisioner
is not ``kubernetes.io/no-provisioner``, that has no volume yet, and that either carries
``volume.kubernetes.io/selected-node`` (WaitForFirstConsumer: the scheduler chose the
node) or belongs to an Immediate class with no Available PV to bind.  After
``provision_delay_seconds`` it creates PV ``pvc-<claim uid>`` pre-bound to the claim
(``claimRef`` with uid) with the claim's size, access modes and class; the PV controller
then completes the binding.

For ``replicated.volsched.io`` the PV is a CSI volume and, when the Volume CRD exists, a
cluster-scoped ``volsched.io/v1alpha1`` Volume of the same name is created from the
class's Longhorn-style string parameters.  Longhorn's ``driver.longhorn.io`` gets a CSI PV
with no node affinity, as Longhorn's CSI driver makes (Longhorn itself, not the
embedded cluster, would then create the volume).  Any other provisioner gets a local PV pinned
to the selected node (or, for an Immediate claim, which has no node, a CSI PV of that
driver with no node affinity).
"""

from __future__ import annotations

from volsched.emulator.controllers import Controller
from volsched.emulator.errors import ApiError
from volsched.emulator.pv_controller import (
    NO_PROVISIONER,
    binding_mode,
    claim_class,
    deleting,
    find_matching_volume,
    requested_bytes,
)
from volsched.emulator.raw import Raw, annotations_of, mapping, name_of, namespace_of

ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
REPLICATED_PROVISIONER = "replicated.volsched.io"
LONGHORN_DRIVER = "driver.longhorn.io"
VOLUME_CRD = "volumes.volsched.io"


def _tags(text: object) -> list[str]:
    return [t.strip() for t in str(text or "").split(",") if t.strip()]


class Provisioner(Controller):
    name = "provisioner"

    def _class_of(self, claim: Raw) -> Raw | None:
        name = claim_class(claim)
        return self.find("storage.k8s.io", "storageclasses", "", name) if name else None

    def _wanted(self, claim: Raw) -> tuple[Raw, str] | None:
        """The claim's class and selected node ("" for Immediate) when it needs a volume."""
        if deleting(claim) or mapping(claim, "spec").get("volumeName"):
            return None
        uid = mapping(claim, "metadata").get("uid")
        if not uid or self.find("", "persistentvolumes", "", f"pvc-{uid}") is not None:
            return None
        storage_class = self._class_of(claim)
        if storage_class is None or storage_class.get("provisioner") in (None, "", NO_PROVISIONER):
            return None
        if storage_class.get("provisioner") in self.settings.silent_provisioners:
            return None
        node = annotations_of(claim).get(ANN_SELECTED_NODE)
        if node:
            return storage_class, node
        classes = self.objects("storage.k8s.io", "storageclasses")
        if binding_mode(classes, claim) != "Immediate":
            return None
        if find_matching_volume(self.objects("", "persistentvolumes"), claim) is not None:
            return None
        return storage_class, ""

    def reconcile(self) -> None:
        for claim in self.objects("", "persistentvolumeclaims"):
            if self._wanted(claim) is not None:
                key = (namespace_of(claim), name_of(claim))
                self.later(
                    f"provision/{key[0]}/{key[1]}",
                    self.settings.provision_delay_seconds,
                    self._provision,
                    key,
                )

    def _provision(self, key: tuple[str, str]) -> None:
        claim = self.find("", "persistentvolumeclaims", *key)
        wanted = self._wanted(claim) if claim is not None else None
        if claim is None or wanted is None:
            return  # bound, deleted, or the scheduler took its node choice back
        storage_class, node = wanted
        provisioner = str(storage_class["provisioner"])
        claim_meta, claim_spec = mapping(claim, "metadata"), mapping(claim, "spec")
        volume_name = f"pvc-{claim_meta['uid']}"
        size = mapping(claim_spec, "resources", "requests").get("storage", "0")
        spec: Raw = {
            "capacity": {"storage": size},
            "accessModes": list(claim_spec.get("accessModes") or ["ReadWriteOnce"]),
            "storageClassName": claim_class(claim),
            "persistentVolumeReclaimPolicy": storage_class.get("reclaimPolicy") or "Delete",
            "volumeMode": claim_spec.get("volumeMode") or "Filesystem",
            "claimRef": {
                "kind": "PersistentVolumeClaim",
                "apiVersion": "v1",
                "namespace": key[0],
                "name": key[1],
                "uid": claim_meta["uid"],
                "resourceVersion": claim_meta.get("resourceVersion"),
            },
        }
        if storage_class.get("mountOptions"):
            spec["mountOptions"] = list(storage_class["mountOptions"])
        parameters = mapping(storage_class, "parameters")
        if provisioner in (REPLICATED_PROVISIONER, LONGHORN_DRIVER) or not node:
            spec["csi"] = {
                "driver": provisioner,
                "volumeHandle": volume_name,
                "fsType": parameters.get("fsType", "ext4"),
                "volumeAttributes": {str(k): str(v) for k, v in parameters.items()},
            }
        else:
            spec["local"] = {"path": f"{self.settings.local_volume_root}/{volume_name}"}
            spec["nodeAffinity"] = {
                "required": {
                    "nodeSelectorTerms": [
                        {
                            "matchExpressions": [
                                {
                                    "key": "kubernetes.io/hostname",
                                    "operator": "In",
                                    "values": [node],
                                }
                            ]
                        }
                    ]
                }
            }
        pv = {
            "apiVersion": "v1",
            "kind": "PersistentVolume",
            "metadata": {"name": volume_name, "annotations": {ANN_PROVISIONED_BY: provisioner}},
            "spec": spec,
        }
        if provisioner == REPLICATED_PROVISIONER:
            self._create_volume(volume_name, requested_bytes(claim), parameters, node)
        self.registry.create(self.registry.core("persistentvolumes"), "", pv)

    def _create_volume(self, name: str, size: int, parameters: Raw, node: str) -> None:
        if not self.crd_exists(VOLUME_CRD):
            return
        resource = self.kind("volsched.io", "volumes")
        if resource is None or self.find("volsched.io", "volumes", "", name) is not None:
            return
        replicas = str(parameters.get("numberOfReplicas", "3"))
        spec: Raw = {
            "size": str(size),
            "numberOfReplicas": int(replicas) if replicas.isdigit() else 3,
            "dataLocality": str(parameters.get("dataLocality") or "disabled"),
            "nodeSelector": _tags(parameters.get("nodeSelector")),
            "diskSelector": _tags(parameters.get("diskSelector")),
            "nodeID": node,
        }
        volume = {
            "apiVersion": resource.api_version,
            "kind": resource.kind,
            "metadata": {"name": name},
            "spec": spec,
            "status": {"robustness": "healthy", "state": "attached" if node else "detached"},
        }
        try:
            created = self.registry.create(resource, "", volume)
        except ApiError as error:
            if error.code != 409:
                raise
            return
        if resource.has_status:
            # A status subresource drops status on create: set it as Longhorn would.
            new = dict(created)
            new["status"] = volume["status"]
            self.registry.update(resource, "", name, new, "status")
