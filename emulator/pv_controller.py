"""The PersistentVolume controller: completes bindings and binds Immediate claims.

What kube-controller-manager's ``persistentvolume-binder`` does that a scheduler depends
on.  A PV whose ``spec.claimRef`` names an existing claim (the scheduler's prebind writes
it) is bound after ``pv_bind_delay_seconds``: the claimRef's uid is filled in, the PV
goes ``Bound``, the claim gets ``spec.volumeName``, the ``bind-completed`` and
``bound-by-controller`` annotations and a ``Bound`` status with the PV's capacity.
A claim of an Immediate class (or of no class) is bound to the smallest Available PV
that matches it, as upstream's ``FindMatchingVolume`` picks.  A bound PV whose claim is
gone becomes ``Released``; a bound claim whose PV is gone becomes ``Lost``; a new PV
becomes ``Available``.
"""

from __future__ import annotations

from volsched.emulator.controllers import Controller
from volsched.emulator.quantity import to_bytes
from volsched.emulator.raw import (
    Raw,
    annotations_of,
    clone,
    labels_of,
    mapping,
    metadata,
    name_of,
    namespace_of,
    now_rfc3339,
)
from volsched.emulator.selectors import label_selector_matches

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
NO_PROVISIONER = "kubernetes.io/no-provisioner"


def claim_class(claim: Raw) -> str:
    return str(mapping(claim, "spec").get("storageClassName") or "")


def volume_class(pv: Raw) -> str:
    return str(mapping(pv, "spec").get("storageClassName") or "")


def requested_bytes(claim: Raw) -> int:
    return to_bytes(mapping(claim, "spec", "resources", "requests").get("storage", 0)) or 0


def capacity_bytes(pv: Raw) -> int:
    return to_bytes(mapping(pv, "spec", "capacity").get("storage", 0)) or 0


def deleting(obj: Raw) -> bool:
    return bool(mapping(obj, "metadata").get("deletionTimestamp"))


def volume_matches(pv: Raw, claim: Raw) -> bool:
    """Whether an unclaimed Available PV could serve the claim (node affinity aside)."""
    spec, claim_spec = mapping(pv, "spec"), mapping(claim, "spec")
    if deleting(pv) or spec.get("claimRef") or mapping(pv, "status").get("phase") != "Available":
        return False
    if volume_class(pv) != claim_class(claim):
        return False
    if (spec.get("volumeMode") or "Filesystem") != (claim_spec.get("volumeMode") or "Filesystem"):
        return False
    if not set(claim_spec.get("accessModes") or []) <= set(spec.get("accessModes") or []):
        return False
    if capacity_bytes(pv) < requested_bytes(claim):
        return False
    selector = claim_spec.get("selector")
    return selector is None or label_selector_matches(selector, labels_of(pv))


def find_matching_volume(pvs: list[Raw], claim: Raw) -> Raw | None:
    """The smallest matching PV (name breaks ties), as the PV controller chooses."""
    candidates = [pv for pv in pvs if volume_matches(pv, claim)]
    if not candidates:
        return None
    return min(candidates, key=lambda pv: (capacity_bytes(pv), name_of(pv)))


def binding_mode(registry_classes: list[Raw], claim: Raw) -> str | None:
    """``Immediate``, ``WaitForFirstConsumer``, or None when the class does not exist."""
    name = claim_class(claim)
    if not name:
        return "Immediate"
    for storage_class in registry_classes:
        if name_of(storage_class) == name:
            return str(storage_class.get("volumeBindingMode") or "Immediate")
    return None


def claim_ref_matches(pv: Raw, claim: Raw) -> bool:
    ref = mapping(pv, "spec", "claimRef")
    if not ref or ref.get("name") != name_of(claim):
        return False
    if (ref.get("namespace") or "") != namespace_of(claim):
        return False
    uid = ref.get("uid")
    return not uid or uid == mapping(claim, "metadata").get("uid")


class PersistentVolumeController(Controller):
    name = "pv-controller"

    def reconcile(self) -> None:
        pvs = self.objects("", "persistentvolumes")
        claims = {
            (namespace_of(c), name_of(c)): c for c in self.objects("", "persistentvolumeclaims")
        }
        pv_names = {name_of(pv) for pv in pvs}
        claimed: set[tuple[str, str]] = set()
        for pv in pvs:
            if deleting(pv):
                continue
            name, phase = name_of(pv), mapping(pv, "status").get("phase")
            ref = mapping(pv, "spec", "claimRef")
            if not ref:
                if phase != "Available":
                    self._set_phase(pv, "Available")
                continue
            key = (str(ref.get("namespace") or ""), str(ref.get("name") or ""))
            claim = claims.get(key)
            if claim is not None and claim_ref_matches(pv, claim):
                claimed.add(key)
                bound_elsewhere = mapping(claim, "spec").get("volumeName") not in (None, "", name)
                if not bound_elsewhere and self._needs_binding(pv, claim):
                    self.later(
                        f"bind/{name}",
                        self.settings.pv_bind_delay_seconds,
                        self._bind,
                        name,
                    )
                elif bound_elsewhere and annotations_of(pv).get(ANN_BOUND_BY_CONTROLLER):
                    # The claim went to another volume (a lost prebind race): free this one.
                    self.later(
                        f"unbind/{name}", self.settings.pv_bind_delay_seconds, self._unbind, name
                    )
            elif ref.get("uid"):
                if phase not in ("Released", "Failed"):
                    self.later(
                        f"release/{name}",
                        self.settings.pv_bind_delay_seconds,
                        self._release,
                        name,
                    )
            elif phase not in ("Available",):
                # Pre-bound to a claim that does not exist yet: waits, Available.
                self._set_phase(pv, "Available")
        classes = self.objects("storage.k8s.io", "storageclasses")
        for key, claim in claims.items():
            if deleting(claim):
                continue
            volume_name = mapping(claim, "spec").get("volumeName")
            if volume_name:
                bound = annotations_of(claim).get(ANN_BIND_COMPLETED)
                if (
                    bound
                    and volume_name not in pv_names
                    and mapping(claim, "status").get("phase") != "Lost"
                ):
                    self._set_status(("", "persistentvolumeclaims"), claim, {"phase": "Lost"})
                elif not bound and key not in claimed and volume_name in pv_names:
                    # A claim pre-bound by its author to a PV: claim that PV for it.
                    self.later(
                        f"prebound/{key[0]}/{key[1]}",
                        self.settings.pv_bind_delay_seconds,
                        self._bind_prebound_claim,
                        key,
                    )
                continue
            if key in claimed or binding_mode(classes, claim) != "Immediate":
                continue
            if find_matching_volume(pvs, claim) is not None:
                self.later(
                    f"immediate/{key[0]}/{key[1]}",
                    self.settings.pv_bind_delay_seconds,
                    self._bind_immediate,
                    key,
                )

    def _needs_binding(self, pv: Raw, claim: Raw) -> bool:
        return (
            not mapping(pv, "spec", "claimRef").get("uid")
            or mapping(pv, "status").get("phase") != "Bound"
            or mapping(claim, "spec").get("volumeName") != name_of(pv)
            or annotations_of(claim).get(ANN_BIND_COMPLETED) != "yes"
            or mapping(claim, "status").get("phase") != "Bound"
        )

    def _set_status(self, kind: tuple[str, str], obj: Raw, changes: Raw) -> Raw:
        new = clone(obj)
        status = new.setdefault("status", {})
        if (
            "phase" in changes
            and status.get("phase") != changes["phase"]
            and kind[1] == "persistentvolumes"
        ):
            status["lastPhaseTransitionTime"] = now_rfc3339()
        status.update(changes)
        return self.write(kind[0], kind[1], new, "status")

    def _set_phase(self, pv: Raw, phase: str) -> None:
        self._set_status(("", "persistentvolumes"), pv, {"phase": phase})

    def _bind(self, pv_name: str) -> None:
        pv = self.find("", "persistentvolumes", "", pv_name)
        if pv is None or deleting(pv):
            return
        ref = mapping(pv, "spec", "claimRef")
        claim = self.find(
            "",
            "persistentvolumeclaims",
            str(ref.get("namespace") or ""),
            str(ref.get("name") or ""),
        )
        if claim is None or deleting(claim) or not claim_ref_matches(pv, claim):
            return
        if mapping(claim, "spec").get("volumeName") not in (None, "", pv_name):
            return
        claim_meta = mapping(claim, "metadata")
        if not ref.get("uid"):
            new = clone(pv)
            new_ref = new["spec"]["claimRef"]
            new_ref.update(
                {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "uid": claim_meta.get("uid")}
            )
            new_ref["resourceVersion"] = claim_meta.get("resourceVersion")
            pv = self.write("", "persistentvolumes", new)
        if mapping(pv, "status").get("phase") != "Bound":
            pv = self._set_status(("", "persistentvolumes"), pv, {"phase": "Bound"})
        if (
            mapping(claim, "spec").get("volumeName") != pv_name
            or annotations_of(claim).get(ANN_BIND_COMPLETED) != "yes"
        ):
            new = clone(claim)
            notes = metadata(new).setdefault("annotations", {})
            notes[ANN_BIND_COMPLETED] = "yes"
            if not mapping(claim, "spec").get("volumeName"):
                notes[ANN_BOUND_BY_CONTROLLER] = "yes"
            new.setdefault("spec", {})["volumeName"] = pv_name
            claim = self.write("", "persistentvolumeclaims", new)
        spec = mapping(pv, "spec")
        self._set_status(
            ("", "persistentvolumeclaims"),
            claim,
            {
                "phase": "Bound",
                "capacity": dict(mapping(spec, "capacity")),
                "accessModes": list(spec.get("accessModes") or []),
            },
        )

    def _bind_immediate(self, key: tuple[str, str]) -> None:
        claim = self.find("", "persistentvolumeclaims", *key)
        if claim is None or deleting(claim) or mapping(claim, "spec").get("volumeName"):
            return
        if binding_mode(self.objects("storage.k8s.io", "storageclasses"), claim) != "Immediate":
            return
        pv = find_matching_volume(self.objects("", "persistentvolumes"), claim)
        if pv is not None:
            self._claim_volume(pv, claim)

    def _bind_prebound_claim(self, key: tuple[str, str]) -> None:
        claim = self.find("", "persistentvolumeclaims", *key)
        if claim is None or deleting(claim) or annotations_of(claim).get(ANN_BIND_COMPLETED):
            return
        pv = self.find("", "persistentvolumes", "", str(mapping(claim, "spec").get("volumeName")))
        if pv is None or deleting(pv) or mapping(pv, "spec").get("claimRef"):
            return
        self._claim_volume(pv, claim)

    def _unbind(self, pv_name: str) -> None:
        pv = self.find("", "persistentvolumes", "", pv_name)
        if pv is None or not annotations_of(pv).get(ANN_BOUND_BY_CONTROLLER):
            return
        ref = mapping(pv, "spec", "claimRef")
        claim = self.find(
            "",
            "persistentvolumeclaims",
            str(ref.get("namespace") or ""),
            str(ref.get("name") or ""),
        )
        if claim is None or mapping(claim, "spec").get("volumeName") in (None, "", pv_name):
            return
        new = clone(pv)
        new["spec"].pop("claimRef", None)
        metadata(new)["annotations"].pop(ANN_BOUND_BY_CONTROLLER, None)
        self._set_phase(self.write("", "persistentvolumes", new), "Available")

    def _claim_volume(self, pv: Raw, claim: Raw) -> None:
        """Write the claimRef (with uid) into the PV, then complete the binding."""
        key = (namespace_of(claim), name_of(claim))
        claim_meta = mapping(claim, "metadata")
        new = clone(pv)
        new.setdefault("spec", {})["claimRef"] = {
            "kind": "PersistentVolumeClaim",
            "apiVersion": "v1",
            "namespace": key[0],
            "name": key[1],
            "uid": claim_meta.get("uid"),
            "resourceVersion": claim_meta.get("resourceVersion"),
        }
        metadata(new).setdefault("annotations", {})[ANN_BOUND_BY_CONTROLLER] = "yes"
        self.write("", "persistentvolumes", new)
        self._bind(name_of(pv))

    def _release(self, pv_name: str) -> None:
        pv = self.find("", "persistentvolumes", "", pv_name)
        if pv is None or deleting(pv):
            return
        ref = mapping(pv, "spec", "claimRef")
        if not ref.get("uid") or mapping(pv, "status").get("phase") in ("Released", "Failed"):
            return
        claim = self.find(
            "",
            "persistentvolumeclaims",
            str(ref.get("namespace") or ""),
            str(ref.get("name") or ""),
        )
        if claim is not None and claim_ref_matches(pv, claim):
            return
        self._set_phase(pv, "Released")
