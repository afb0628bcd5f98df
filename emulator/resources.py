"""The table of served resources: what each (group, version, plural) is, and CRD serving.

Built-in resources are listed once here.  Creating a CustomResourceDefinition registers
one ``ResourceType`` per served version; deleting it unregisters them, after which their
paths answer 404 as on a real server.  Objects are stored per (group, plural), so every
served version of a CRD sees the same objects (no conversion: the emulator only rewrites
``apiVersion``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from volsched.emulator.raw import Raw, mapping

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")

StorageKey = tuple[str, str]  # (group, plural)


@dataclass(frozen=True, slots=True)
class ResourceType:
    group: str
    version: str
    plural: str
    kind: str
    namespaced: bool
    singular: str = ""
    short_names: tuple[str, ...] = ()
    subresources: frozenset[str] = field(default_factory=frozenset)
    verbs: tuple[str, ...] = ALL_VERBS
    custom: bool = False

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def key(self) -> StorageKey:
        return (self.group, self.plural)

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"

    @property
    def has_status(self) -> bool:
        return "status" in self.subresources

    @property
    def group_resource(self) -> str:
        """How upstream's messages name the resource: ``pods``, ``leases.coordination.k8s.io``."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def qualified_kind(self) -> str:
        """How a 422 names the kind: ``Pod``, ``Event.events.k8s.io``."""
        return f"{self.kind}.{self.group}" if self.group else self.kind


def _builtin(
    group: str,
    version: str,
    plural: str,
    kind: str,
    namespaced: bool,
    short: tuple[str, ...] = (),
    sub: tuple[str, ...] = (),
    verbs: tuple[str, ...] = ALL_VERBS,
) -> ResourceType:
    return ResourceType(
        group, version, plural, kind, namespaced, kind.lower(), short, frozenset(sub), verbs
    )


BUILTIN: tuple[ResourceType, ...] = (
    _builtin("", "v1", "namespaces", "Namespace", False, ("ns",), ("status",)),
    _builtin("", "v1", "nodes", "Node", False, ("no",), ("status",)),
    _builtin("", "v1", "pods", "Pod", True, ("po",), ("status", "binding")),
    _builtin("", "v1", "bindings", "Binding", True, verbs=("create",)),
    _builtin("", "v1", "persistentvolumes", "PersistentVolume", False, ("pv",), ("status",)),
    _builtin(
        "", "v1", "persistentvolumeclaims", "PersistentVolumeClaim", True, ("pvc",), ("status",)
    ),
    _builtin("", "v1", "services", "Service", True, ("svc",), ("status",)),
    _builtin("", "v1", "events", "Event", True, ("ev",)),
    _builtin("", "v1", "configmaps", "ConfigMap", True, ("cm",)),
    _builtin("", "v1", "secrets", "Secret", True),
    _builtin("", "v1", "serviceaccounts", "ServiceAccount", True, ("sa",)),
    _builtin("storage.k8s.io", "v1", "storageclasses", "StorageClass", False, ("sc",)),
    _builtin("storage.k8s.io", "v1", "csinodes", "CSINode", False),
    _builtin("storage.k8s.io", "v1", "csidrivers", "CSIDriver", False),
    _builtin("storage.k8s.io", "v1", "csistoragecapacities", "CSIStorageCapacity", True),
    _builtin("apps", "v1", "replicasets", "ReplicaSet", True, ("rs",), ("status",)),
    _builtin("apps", "v1", "statefulsets", "StatefulSet", True, ("sts",), ("status",)),
    _builtin("apps", "v1", "deployments", "Deployment", True, ("deploy",), ("status",)),
    _builtin("apps", "v1", "daemonsets", "DaemonSet", True, ("ds",), ("status",)),
    _builtin(
        "policy", "v1", "poddisruptionbudgets", "PodDisruptionBudget", True, ("pdb",), ("status",)
    ),
    _builtin("scheduling.k8s.io", "v1", "priorityclasses", "PriorityClass", False, ("pc",)),
    _builtin("coordination.k8s.io", "v1", "leases", "Lease", True),
    _builtin("resource.k8s.io", "v1", "deviceclasses", "DeviceClass", False),
    _builtin("resource.k8s.io", "v1", "resourceslices", "ResourceSlice", False),
    _builtin("resource.k8s.io", "v1", "resourceclaims", "ResourceClaim", True, (), ("status",)),
    _builtin("rbac.authorization.k8s.io", "v1", "clusterroles", "ClusterRole", False),
    _builtin("rbac.authorization.k8s.io", "v1", "clusterrolebindings", "ClusterRoleBinding", False),
    _builtin("events.k8s.io", "v1", "events", "Event", True, ("ev",)),
    _builtin(
        "apiextensions.k8s.io",
        "v1",
        "customresourcedefinitions",
        "CustomResourceDefinition",
        False,
        ("crd", "crds"),
        ("status",),
    ),
)

CRD_GROUP = "apiextensions.k8s.io"
CRD_PLURAL = "customresourcedefinitions"


def crd_resource_types(crd: Raw) -> list[ResourceType]:
    """The resource types a (validated) CRD serves: one per served version."""
    spec = mapping(crd, "spec")
    names = mapping(spec, "names")
    result = []
    for version in spec.get("versions") or []:
        if not isinstance(version, dict) or not version.get("served", True):
            continue
        subresources = frozenset(mapping(version, "subresources"))
        result.append(
            ResourceType(
                group=str(spec.get("group", "")),
                version=str(version.get("name", "")),
                plural=str(names.get("plural", "")),
                kind=str(names.get("kind", "")),
                namespaced=spec.get("scope") == "Namespaced",
                singular=str(names.get("singular") or str(names.get("kind", "")).lower()),
                short_names=tuple(str(n) for n in names.get("shortNames") or ()),
                subresources=subresources & {"status"},
                custom=True,
            )
        )
    return result


class ResourceTable:
    """Served resources, looked up by path or by kind."""

    def __init__(self) -> None:
        self._by_path: dict[tuple[str, str, str], ResourceType] = {}
        for resource in BUILTIN:
            self.register(resource)

    def register(self, resource: ResourceType) -> None:
        self._by_path[(resource.group, resource.version, resource.plural)] = resource

    def unregister(self, group: str, plural: str) -> None:
        for path in [p for p in self._by_path if p[0] == group and p[2] == plural]:
            del self._by_path[path]

    def lookup(self, group: str, version: str, plural: str) -> ResourceType | None:
        return self._by_path.get((group, version, plural))

    def storage_types(self, key: StorageKey) -> list[ResourceType]:
        return [r for r in self._by_path.values() if r.key == key]

    def by_kind(self, kind: str, api_version: str | None = None) -> ResourceType | None:
        """The resource of ``kind`` (in ``api_version`` when given; core group first)."""
        matches = [
            r
            for r in self._by_path.values()
            if r.kind == kind and (api_version is None or r.api_version == api_version)
        ]
        matches.sort(key=lambda r: (r.group != "", r.group))
        return matches[0] if matches else None

    def in_group_version(self, group: str, version: str) -> list[ResourceType]:
        return [r for r in self._by_path.values() if r.group == group and r.version == version]

    def groups(self) -> dict[str, list[str]]:
        """Group name → served versions, in registration order ("" is the core group)."""
        result: dict[str, list[str]] = {}
        for group, version, _ in self._by_path:
            versions = result.setdefault(group, [])
            if version not in versions:
                versions.append(version)
        return result
