"""Objects read for spreading and priority: Services, ReplicaSets, StatefulSets and
PriorityClasses."""

from __future__ import annotations

from dataclasses import dataclass, field

from volsched.cache.objects.fields import INT32, Fields, Raw
from volsched.cache.objects.meta import ObjectMeta, parse_meta
from volsched.cache.objects.selectors import LabelSelector, parse_label_selector


@dataclass(frozen=True, slots=True)
class Service:
    meta: ObjectMeta
    selector: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class WorkloadSet:
    """A ReplicaSet or StatefulSet: only its kind and selector matter for spreading."""

    meta: ObjectMeta
    kind: str
    selector: LabelSelector | None


@dataclass(frozen=True, slots=True)
class PriorityClass:
    meta: ObjectMeta
    value: int
    global_default: bool = False


@dataclass(frozen=True, slots=True)
class Namespace:
    """A namespace's labels: what pod affinity's ``namespaceSelector`` matches."""

    meta: ObjectMeta

    @property
    def labels(self) -> dict[str, str]:
        return self.meta.labels


def parse_namespace(raw: Raw) -> Namespace:
    return Namespace(meta=parse_meta(raw.get("metadata"), "Namespace", namespaced=False))


def parse_service(raw: Raw) -> Service:
    meta = parse_meta(raw.get("metadata"), "Service", namespaced=True)
    spec = Fields(raw.get("spec"), "Service", meta.name, "spec")
    return Service(meta=meta, selector=spec.str_map("selector"))


def _workload_set(raw: Raw, kind: str) -> WorkloadSet:
    meta = parse_meta(raw.get("metadata"), kind, namespaced=True)
    spec = Fields(raw.get("spec"), kind, meta.name, "spec")
    selector = parse_label_selector(spec.sub("selector")) if spec.has("selector") else None
    return WorkloadSet(meta=meta, kind=kind, selector=selector)


def parse_replica_set(raw: Raw) -> WorkloadSet:
    return _workload_set(raw, "ReplicaSet")


def parse_stateful_set(raw: Raw) -> WorkloadSet:
    return _workload_set(raw, "StatefulSet")


def parse_priority_class(raw: Raw) -> PriorityClass:
    meta = parse_meta(raw.get("metadata"), "PriorityClass", namespaced=False)
    body = Fields(raw, "PriorityClass", meta.name)
    if not body.has("value"):
        raise body.fail("value", "is required")
    return PriorityClass(
        meta=meta, value=body.int("value", bits=INT32), global_default=body.bool("globalDefault")
    )
