"""Storage objects: PersistentVolumes, claims, StorageClasses and the CSI kinds.

Defaults the API server would apply are applied here (volumeMode Filesystem, binding mode
Immediate, reclaim policy), so a hand-written snapshot means what it would mean in a
cluster.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from volsched.cache.objects.fields import INT32, Fields, Raw
from volsched.cache.objects.meta import NamespacedView, ObjectMeta, parse_meta
from volsched.cache.objects.selectors import (
    LabelSelector,
    NodeSelector,
    TopologySelectorTerm,
    parse_label_selector,
    parse_node_selector,
    parse_topology_terms,
)
from volsched.cache.quantity import ceil_value

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
ANN_DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
ANN_BETA_DEFAULT_CLASS = "storageclass.beta.kubernetes.io/is-default-class"
NO_PROVISIONER = "kubernetes.io/no-provisioner"

READ_WRITE_ONCE_POD = "ReadWriteOncePod"
ACCESS_MODES = ("ReadWriteOnce", "ReadOnlyMany", "ReadWriteMany", READ_WRITE_ONCE_POD)
VOLUME_MODES = ("Filesystem", "Block")
BINDING_MODES = ("Immediate", "WaitForFirstConsumer")


@dataclass(frozen=True, slots=True)
class ClaimRef:
    namespace: str
    name: str
    uid: str = ""


@dataclass(frozen=True, slots=True)
class PersistentVolume:
    meta: ObjectMeta
    capacity: int
    access_modes: frozenset[str] = frozenset()
    storage_class: str = ""
    volume_mode: str = "Filesystem"
    claim_ref: ClaimRef | None = None
    node_affinity: NodeSelector | None = None
    phase: str = "Available"
    csi_driver: str = ""
    csi_handle: str = ""

    @property
    def name(self) -> str:
        return self.meta.name

    def is_bound_to(self, claim: PersistentVolumeClaim) -> bool:
        """Upstream's IsVolumeBoundToClaim: name and namespace, and uid when set."""
        ref = self.claim_ref
        if ref is None or ref.name != claim.meta.name or ref.namespace != claim.meta.namespace:
            return False
        return not ref.uid or ref.uid == claim.meta.uid


@dataclass(frozen=True, slots=True)
class PersistentVolumeClaim(NamespacedView):
    meta: ObjectMeta
    storage_class: str | None = None
    volume_name: str = ""
    phase: str = "Pending"
    request: int | None = None
    access_modes: frozenset[str] = frozenset()
    selector: LabelSelector | None = None
    volume_mode: str = "Filesystem"

    @property
    def class_name(self) -> str:
        """The claim's class as upstream reads it (None and "" both mean no class)."""
        return self.storage_class or ""

    @property
    def fully_bound(self) -> bool:
        """Bound by the PV controller: volumeName set and bind-completed present."""
        return bool(self.volume_name) and ANN_BIND_COMPLETED in self.meta.annotations

    @property
    def selected_node(self) -> str | None:
        return self.meta.annotations.get(ANN_SELECTED_NODE)


@dataclass(frozen=True, slots=True)
class StorageClass:
    meta: ObjectMeta
    provisioner: str
    binding_mode: str = "Immediate"
    allowed_topologies: tuple[TopologySelectorTerm, ...] = ()
    parameters: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def is_default(self) -> bool:
        annotations = self.meta.annotations
        return (
            annotations.get(ANN_DEFAULT_CLASS) == "true"
            or annotations.get(ANN_BETA_DEFAULT_CLASS) == "true"
        )

    @property
    def wait_for_first_consumer(self) -> bool:
        return self.binding_mode == "WaitForFirstConsumer"


@dataclass(frozen=True, slots=True)
class CSINodeDriver:
    name: str
    allocatable_count: int | None
    topology_keys: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CSINode:
    meta: ObjectMeta
    drivers: dict[str, CSINodeDriver]

    @property
    def name(self) -> str:
        return self.meta.name


@dataclass(frozen=True, slots=True)
class CSIDriver:
    meta: ObjectMeta
    storage_capacity: bool = False

    @property
    def name(self) -> str:
        return self.meta.name


@dataclass(frozen=True, slots=True)
class CSIStorageCapacity:
    meta: ObjectMeta
    storage_class: str
    node_topology: LabelSelector | None
    capacity: int | None
    maximum_volume_size: int | None

    def limit(self) -> int | None:
        """MaximumVolumeSize is the more precise figure when the driver gives it."""
        return self.maximum_volume_size if self.maximum_volume_size is not None else self.capacity


def _modes(spec: Fields, key: str) -> frozenset[str]:
    modes = spec.str_list(key)
    for mode in modes:
        if mode not in ACCESS_MODES:
            raise spec.fail(key, f"{mode!r} is not one of {', '.join(ACCESS_MODES)}")
    return frozenset(modes)


def _volume_mode(spec: Fields) -> str:
    mode = spec.str("volumeMode", "Filesystem") or "Filesystem"
    if mode not in VOLUME_MODES:
        raise spec.fail("volumeMode", f"{mode!r} is not Filesystem or Block")
    return mode


def _storage_bytes(fields: Fields, key: str) -> int | None:
    amounts = fields.sub(key)
    quantity = amounts.quantity("storage")
    if quantity is None:
        return None
    if quantity < 0:
        raise amounts.fail("storage", "must not be negative")
    return ceil_value(quantity)


def parse_persistent_volume(raw: Raw) -> PersistentVolume:
    meta = parse_meta(raw.get("metadata"), "PersistentVolume", namespaced=False)
    spec = Fields(raw.get("spec"), "PersistentVolume", meta.name, "spec")
    status = Fields(raw.get("status"), "PersistentVolume", meta.name, "status")
    capacity = _storage_bytes(spec, "capacity")
    if capacity is None:
        raise spec.fail("capacity.storage", "is required")
    claim_ref = None
    if spec.has("claimRef"):
        ref = spec.sub("claimRef")
        claim_ref = ClaimRef(ref.str("namespace"), ref.str("name"), ref.str("uid"))
    affinity = None
    node_affinity = spec.sub("nodeAffinity")
    if node_affinity.has("required"):
        affinity = parse_node_selector(node_affinity.sub("required"))
    storage_class = meta.annotations.get(ANN_BETA_STORAGE_CLASS)
    if storage_class is None:
        storage_class = spec.str("storageClassName")
    csi = spec.sub("csi")
    return PersistentVolume(
        meta=meta,
        capacity=capacity,
        access_modes=_modes(spec, "accessModes"),
        storage_class=storage_class,
        volume_mode=_volume_mode(spec),
        claim_ref=claim_ref,
        node_affinity=affinity,
        phase=status.str("phase", "Available") or "Available",
        csi_driver=csi.str("driver"),
        csi_handle=csi.str("volumeHandle"),
    )


def parse_persistent_volume_claim(raw: Raw) -> PersistentVolumeClaim:
    meta = parse_meta(raw.get("metadata"), "PersistentVolumeClaim", namespaced=True)
    spec = Fields(raw.get("spec"), "PersistentVolumeClaim", meta.name, "spec")
    status = Fields(raw.get("status"), "PersistentVolumeClaim", meta.name, "status")
    storage_class = meta.annotations.get(ANN_BETA_STORAGE_CLASS)
    if storage_class is None:
        storage_class = spec.opt_str("storageClassName")
    selector = parse_label_selector(spec.sub("selector")) if spec.has("selector") else None
    return PersistentVolumeClaim(
        meta=meta,
        storage_class=storage_class,
        volume_name=spec.str("volumeName"),
        phase=status.str("phase", "Pending") or "Pending",
        request=_storage_bytes(spec.sub("resources"), "requests"),
        access_modes=_modes(spec, "accessModes"),
        selector=selector,
        volume_mode=_volume_mode(spec),
    )


def parse_storage_class(raw: Raw) -> StorageClass:
    meta = parse_meta(raw.get("metadata"), "StorageClass", namespaced=False)
    body = Fields(raw, "StorageClass", meta.name)
    provisioner = body.str("provisioner")
    if not provisioner:
        raise body.fail("provisioner", "is required")
    mode = body.str("volumeBindingMode", "Immediate") or "Immediate"
    if mode not in BINDING_MODES:
        raise body.fail("volumeBindingMode", f"{mode!r} is not Immediate or WaitForFirstConsumer")
    return StorageClass(
        meta=meta,
        provisioner=provisioner,
        binding_mode=mode,
        allowed_topologies=parse_topology_terms(body.items("allowedTopologies")),
        parameters=body.str_map("parameters"),
    )


def parse_csi_node(raw: Raw) -> CSINode:
    meta = parse_meta(raw.get("metadata"), "CSINode", namespaced=False)
    spec = Fields(raw.get("spec"), "CSINode", meta.name, "spec")
    drivers = {}
    for item in spec.items("drivers"):
        name = item.str("name")
        if not name:
            raise item.fail("name", "is required")
        count = item.sub("allocatable").opt_int("count", bits=INT32)
        drivers[name] = CSINodeDriver(name, count, item.str_list("topologyKeys"))
    return CSINode(meta=meta, drivers=drivers)


def parse_csi_driver(raw: Raw) -> CSIDriver:
    meta = parse_meta(raw.get("metadata"), "CSIDriver", namespaced=False)
    spec = Fields(raw.get("spec"), "CSIDriver", meta.name, "spec")
    return CSIDriver(meta=meta, storage_capacity=spec.bool("storageCapacity"))


def parse_csi_storage_capacity(raw: Raw) -> CSIStorageCapacity:
    meta = parse_meta(raw.get("metadata"), "CSIStorageCapacity", namespaced=True)
    body = Fields(raw, "CSIStorageCapacity", meta.name)
    topology = parse_label_selector(body.sub("nodeTopology")) if body.has("nodeTopology") else None
    capacity = body.quantity("capacity")
    maximum = body.quantity("maximumVolumeSize")
    return CSIStorageCapacity(
        meta=meta,
        storage_class=body.str("storageClassName"),
        node_topology=topology,
        capacity=ceil_value(capacity) if capacity is not None else None,
        maximum_volume_size=ceil_value(maximum) if maximum is not None else None,
    )
