"""Nodes and pods, reduced to what placement needs and computed once at ingestion.

A pod's effective requests (init-container max rule, sidecars, overhead, limits standing
in for missing requests) and its host ports are worked out here, once, so that the
scheduler's per-node checks are dictionary look-ups.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from fractions import Fraction

from volsched.cache.objects.fields import INT32, Fields, Raw
from volsched.cache.objects.meta import NamespacedView, ObjectMeta, parse_meta
from volsched.cache.objects.pod_constraints import (
    PodAffinity,
    SpreadConstraint,
    parse_pod_affinity,
    parse_scheduling_gates,
    parse_spread_constraints,
)
from volsched.cache.objects.selectors import NodeSelector, PreferredTerm, parse_node_affinity
from volsched.cache.quantity import ceil_milli_value, ceil_value

CPU = "cpu"
MEMORY = "memory"
EPHEMERAL_STORAGE = "ephemeral-storage"
PODS = "pods"

# kube-scheduler scores pods without cpu/memory requests as if they asked for these.
DEFAULT_MILLI_CPU_REQUEST = 100
DEFAULT_MEMORY_REQUEST = 200 * 1024 * 1024

TAINT_EFFECT_NO_SCHEDULE = "NoSchedule"
TAINT_EFFECT_PREFER_NO_SCHEDULE = "PreferNoSchedule"
TAINT_EFFECT_NO_EXECUTE = "NoExecute"
TAINT_EFFECTS = (TAINT_EFFECT_NO_SCHEDULE, TAINT_EFFECT_PREFER_NO_SCHEDULE, TAINT_EFFECT_NO_EXECUTE)

# kube-scheduler's name (v1.DefaultSchedulerName): the scheduler of a pod that names none.
DEFAULT_SCHEDULER = "default-scheduler"

# Kubernetes' well-known node labels (k8s.io/api/core/v1 well_known_labels.go); the beta
# failure-domain keys are still read where upstream still reads them.
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_TOPOLOGY_ZONE = "topology.kubernetes.io/zone"
LABEL_TOPOLOGY_REGION = "topology.kubernetes.io/region"
LABEL_FAILURE_DOMAIN_BETA_ZONE = "failure-domain.beta.kubernetes.io/zone"
LABEL_FAILURE_DOMAIN_BETA_REGION = "failure-domain.beta.kubernetes.io/region"


def resource_amount(name: str, quantity: Fraction) -> int:
    """cpu in millicores, everything else in whole units, rounded up as upstream."""
    return ceil_milli_value(quantity) if name == CPU else ceil_value(quantity)


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str
    operator: str
    value: str
    effect: str

    def tolerates(self, taint: Taint) -> bool:
        if self.effect and self.effect != taint.effect:
            return False
        if self.key and self.key != taint.key:
            return False
        if self.operator in ("", "Equal"):
            return self.value == taint.value
        return self.operator == "Exists"


@dataclass(frozen=True, slots=True)
class Node:
    meta: ObjectMeta
    allocatable: dict[str, int]
    unschedulable: bool = False
    taints: tuple[Taint, ...] = ()
    ready: bool = True
    # status.images, only what ImageLocality reads: each name of each image → its size
    # in bytes (a node lists an image under several names: tags and digests).
    images: dict[str, int] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.meta.name

    @property
    def labels(self) -> dict[str, str]:
        return self.meta.labels


@dataclass(frozen=True, slots=True)
class HostPort:
    ip: str
    protocol: str
    port: int


@dataclass(frozen=True, slots=True)
class PodResourceClaim:
    """One entry of ``spec.resourceClaims``: a ResourceClaim named outright, or one the
    resource claim controller makes from a template and names in the pod's
    ``status.resourceClaimStatuses``."""

    name: str
    claim_name: str | None = None
    template_name: str | None = None


@dataclass(frozen=True, slots=True)
class PodVolume:
    """One entry of ``spec.volumes``.

    ``claim_name`` is set for persistentVolumeClaim volumes and for generic ephemeral
    volumes (whose claim is ``<pod>-<volume>``).  ``disk`` identifies the in-tree disks the
    NoDiskConflict rule compares: ``(kind, identity..., read_only)``.
    """

    name: str
    claim_name: str = ""
    ephemeral: bool = False
    read_only: bool = False
    disk: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Pod(NamespacedView):
    meta: ObjectMeta
    scheduler_name: str = DEFAULT_SCHEDULER
    node_name: str = ""
    priority: int | None = None
    priority_class_name: str = ""
    phase: str = "Pending"
    requests: dict[str, int] = field(default_factory=dict)
    nonzero_cpu: int = DEFAULT_MILLI_CPU_REQUEST
    nonzero_memory: int = DEFAULT_MEMORY_REQUEST
    # With pod-level resources: the containers' own non-zero cpu and memory, which
    # NodeResourcesFit's scorer reads for the incoming pod (see _pod_requests).
    containers_nonzero: tuple[int, int] | None = None

    @property
    def fit_score_nonzero(self) -> tuple[int, int]:
        """The cpu and memory NodeResourcesFit's scorer asks for on the pod's behalf."""
        if self.containers_nonzero is not None:
            return self.containers_nonzero
        return self.nonzero_cpu, self.nonzero_memory

    host_ports: tuple[HostPort, ...] = ()
    volumes: tuple[PodVolume, ...] = ()
    node_selector: dict[str, str] = field(default_factory=dict)
    required_affinity: NodeSelector | None = None
    preferred_affinity: tuple[PreferredTerm, ...] = ()
    tolerations: tuple[Toleration, ...] = ()
    pod_affinity: PodAffinity | None = None
    spread_constraints: tuple[SpreadConstraint, ...] = ()
    scheduling_gates: tuple[str, ...] = ()
    # The reason and message of the pod's PodScheduled condition, when it has one: a
    # failed attempt that would write the same two patches nothing (as upstream).
    scheduled_reason: str = ""
    scheduled_message: str = ""
    # Preemption: spec.preemptionPolicy, status.nominatedNodeName, status.startTime, and
    # the reason of a DisruptionTarget condition ("PreemptionByScheduler" once preempted).
    preemption_policy: str = "PreemptLowerPriority"
    nominated_node_name: str = ""
    start_time: float | None = None
    disruption_reason: str = ""
    # The images of spec.initContainers then spec.containers (ImageLocality).
    images: tuple[str, ...] = ()
    # The references of spec.volumes[].image: ImageLocality counts them as images, though
    # not as containers.
    image_volumes: tuple[str, ...] = ()
    # spec.resourceClaims, and the claim made for each templated one (None: the
    # controller decided the pod needs none) from status.resourceClaimStatuses.
    resource_claims: tuple[PodResourceClaim, ...] = ()
    resource_claim_statuses: dict[str, str | None] = field(default_factory=dict)

    @property
    def labels(self) -> dict[str, str]:
        return self.meta.labels

    @property
    def terminal(self) -> bool:
        """Succeeded and Failed pods hold no resources (the scheduler never sees them)."""
        return self.phase in ("Succeeded", "Failed")

    def claim_names(self) -> list[str]:
        return [volume.claim_name for volume in self.volumes if volume.claim_name]


def _taint(item: Fields) -> Taint:
    effect = item.str("effect")
    if effect not in TAINT_EFFECTS:
        raise item.fail("effect", f"{effect!r} is not one of {', '.join(TAINT_EFFECTS)}")
    key = item.str("key")
    if not key:
        raise item.fail("key", "is required")
    return Taint(key, item.str("value"), effect)


def parse_node(raw: Raw) -> Node:
    meta = parse_meta(raw.get("metadata"), "Node", namespaced=False)
    spec = Fields(raw.get("spec"), "Node", meta.name, "spec")
    status = Fields(raw.get("status"), "Node", meta.name, "status")
    source = "allocatable" if status.has("allocatable") else "capacity"
    allocatable = _amounts(status, source)
    ready = True
    conditions = status.items("conditions")
    for condition in conditions:
        if condition.str("type") == "Ready":
            ready = condition.str("status") == "True"
    return Node(
        meta=meta,
        allocatable=allocatable,
        unschedulable=spec.bool("unschedulable"),
        taints=tuple(_taint(item) for item in spec.items("taints")),
        ready=ready,
        images=_node_images(status),
    )


def _node_images(status: Fields) -> dict[str, int]:
    """Names → size of ``status.images``; the first listing of a name wins, as in
    kube-scheduler's image state cache."""
    images: dict[str, int] = {}
    for image in status.items("images"):
        size = image.int("sizeBytes")
        for image_name in image.str_list("names"):
            images.setdefault(image_name, size)
    return images


def _non_negative(fields: Fields, key: str) -> dict[str, Fraction]:
    amounts = fields.quantity_map(key)
    for name, amount in amounts.items():
        if amount < 0:
            # The API server's ValidateResourceQuantityValue rejects these.
            raise fields.fail(f"{key}.{name}", "must be greater than or equal to 0")
    return amounts


def _amounts(fields: Fields, key: str) -> dict[str, int]:
    """A resource list (node allocatable, pod overhead) in scheduler units."""
    return {
        name: resource_amount(name, amount) for name, amount in _non_negative(fields, key).items()
    }


def _container_requests(container: Fields) -> dict[str, int]:
    resources = container.sub("resources")
    limits = _non_negative(resources, "limits")
    requests = _non_negative(resources, "requests")
    # The API server defaults a missing request to its limit.
    merged = {**limits, **requests}
    return {name: resource_amount(name, amount) for name, amount in merged.items()}


def _add(total: dict[str, int], extra: dict[str, int]) -> None:
    for name, amount in extra.items():
        total[name] = total.get(name, 0) + amount


def _max_into(total: dict[str, int], other: dict[str, int]) -> None:
    for name, amount in other.items():
        if amount > total.get(name, 0):
            total[name] = amount


def _aggregate(
    containers: list[dict[str, int]],
    init_containers: list[tuple[dict[str, int], bool]],
    overhead: dict[str, int],
) -> dict[str, int]:
    """Upstream's PodRequests: containers summed, sidecars (restartable init containers)
    added, the largest init step as a floor, overhead on top."""
    requests: dict[str, int] = {}
    for own in containers:
        _add(requests, own)
    sidecars: dict[str, int] = {}
    init_peak: dict[str, int] = {}
    for own, restartable in init_containers:
        if restartable:
            _add(requests, own)
            _add(sidecars, own)
            _max_into(init_peak, dict(sidecars))
        else:
            step = dict(own)
            _add(step, sidecars)
            _max_into(init_peak, step)
    _max_into(requests, init_peak)
    _add(requests, overhead)
    return requests


def _with_defaults(own: dict[str, int], missing: tuple[str, ...] = (CPU, MEMORY)) -> dict[str, int]:
    """The container's requests with cpu and memory defaulted only when absent."""
    filled = dict(own)
    if CPU in missing:
        filled.setdefault(CPU, DEFAULT_MILLI_CPU_REQUEST)
    if MEMORY in missing:
        filled.setdefault(MEMORY, DEFAULT_MEMORY_REQUEST)
    return filled


def _pod_level_requests(spec: Fields) -> dict[str, int]:
    """``spec.resources`` (PodLevelResources, on by default): cpu, memory and hugepages
    given for the whole pod replace the containers' sum; a missing request is defaulted
    to its limit, as the API server does."""
    pod_level = _container_requests(spec)
    return {
        name: amount
        for name, amount in pod_level.items()
        if name in (CPU, MEMORY) or name.startswith("hugepages-")
    }


def _pod_requests(
    spec: Fields,
) -> tuple[dict[str, int], int, int, tuple[int, int] | None]:
    """Effective requests, the non-zero cpu/memory a placed pod counts for on its node,
    and — when pod-level resources are set — the containers' own non-zero cpu/memory.

    kube-scheduler 1.36 is not uniform here: a placed pod's non-zero figures and
    BalancedAllocation read the pod-level resources, but NodeResourcesFit's scorer
    (LeastAllocated, MostAllocated, RequestedToCapacityRatio) is built without the
    PodLevelResources switch and sums the incoming pod's containers, defaults for the
    missing ones included. The recordings of the real binary show both."""
    containers = [_container_requests(c) for c in spec.items("containers")]
    inits = [
        (_container_requests(c), c.str("restartPolicy") == "Always")
        for c in spec.items("initContainers")
    ]
    overhead = _amounts(spec, "overhead")
    pod_level = _pod_level_requests(spec)

    def nonzero_of(missing: tuple[str, ...]) -> dict[str, int]:
        return _aggregate(
            [_with_defaults(own, missing) for own in containers],
            [(_with_defaults(own, missing), restartable) for own, restartable in inits],
            {},
        )

    requests = _aggregate(containers, inits, {})
    containers_only: tuple[int, int] | None = None
    if pod_level:
        plain = nonzero_of((CPU, MEMORY))
        _add(plain, overhead)
        containers_only = (plain.get(CPU, 0), plain.get(MEMORY, 0))
        requests.update(pod_level)
        # Upstream defaults a missing cpu or memory only when neither the pod nor any
        # container names it.
        nonzero = nonzero_of(tuple(name for name in (CPU, MEMORY) if name not in requests))
        nonzero.update(pod_level)
    else:
        nonzero = nonzero_of((CPU, MEMORY))
    for totals in (requests, nonzero):
        _add(totals, overhead)
    return (
        {k: v for k, v in requests.items() if v},
        nonzero.get(CPU, 0),
        nonzero.get(MEMORY, 0),
        containers_only,
    )


def _host_ports(spec: Fields) -> tuple[HostPort, ...]:
    ports: list[HostPort] = []
    containers = spec.items("containers") + [
        c for c in spec.items("initContainers") if c.str("restartPolicy") == "Always"
    ]
    # The API server defaults a hostNetwork pod's hostPort to its containerPort; a pod
    # from a snapshot file may not have been through it.
    host_network = spec.bool("hostNetwork")
    for container in containers:
        for port in container.items("ports"):
            host_port = port.int("hostPort", bits=INT32)
            if host_port == 0 and host_network:
                host_port = port.int("containerPort", bits=INT32)
            if host_port == 0:
                continue
            if not 1 <= host_port <= 65535:
                raise port.fail("hostPort", f"must be between 1 and 65535, not {host_port}")
            protocol = port.str("protocol") or "TCP"
            if protocol not in ("TCP", "UDP", "SCTP"):
                raise port.fail("protocol", f"{protocol!r} is not TCP, UDP or SCTP")
            ports.append(HostPort(port.str("hostIP") or "0.0.0.0", protocol, host_port))
    return tuple(ports)


def _disk_identity(volume: Fields) -> tuple[str, ...]:
    if volume.has("gcePersistentDisk"):
        disk = volume.sub("gcePersistentDisk")
        return ("gce", disk.str("pdName"), "ro" if disk.bool("readOnly") else "rw")
    if volume.has("awsElasticBlockStore"):
        return ("aws", volume.sub("awsElasticBlockStore").str("volumeID"))
    if volume.has("iscsi"):
        disk = volume.sub("iscsi")
        return ("iscsi", disk.str("iqn"), "ro" if disk.bool("readOnly") else "rw")
    if volume.has("rbd"):
        disk = volume.sub("rbd")
        monitors = ",".join(sorted(disk.str_list("monitors")))
        pool = disk.str("pool", "rbd")
        return ("rbd", monitors, pool, disk.str("image"), "ro" if disk.bool("readOnly") else "rw")
    return ()


def _volumes(spec: Fields, pod_name: str) -> tuple[PodVolume, ...]:
    volumes = []
    for volume in spec.items("volumes"):
        name = volume.str("name")
        if volume.has("persistentVolumeClaim"):
            claim = volume.sub("persistentVolumeClaim")
            claim_name = claim.str("claimName")
            if not claim_name:
                raise claim.fail("claimName", "is required")
            volumes.append(PodVolume(name, claim_name, False, claim.bool("readOnly")))
        elif volume.has("ephemeral"):
            volumes.append(PodVolume(name, f"{pod_name}-{name}", True))
        else:
            volumes.append(PodVolume(name, disk=_disk_identity(volume)))
    return tuple(volumes)


def _tolerations(spec: Fields) -> tuple[Toleration, ...]:
    tolerations = []
    for item in spec.items("tolerations"):
        operator = item.str("operator")
        if operator not in ("", "Equal", "Exists"):
            raise item.fail("operator", f"{operator!r} is not Equal or Exists")
        effect = item.str("effect")
        if effect and effect not in TAINT_EFFECTS:
            raise item.fail("effect", f"{effect!r} is not one of {', '.join(TAINT_EFFECTS)}")
        tolerations.append(Toleration(item.str("key"), operator, item.str("value"), effect))
    return tuple(tolerations)


def _scheduled_condition(status: Fields) -> tuple[str, str]:
    for condition in status.items("conditions"):
        if condition.str("type") == "PodScheduled":
            return condition.str("reason"), condition.str("message")
    return "", ""


PREEMPTION_POLICIES = ("PreemptLowerPriority", "Never")


def _preemption_policy(spec: Fields) -> str:
    policy = spec.str("preemptionPolicy") or "PreemptLowerPriority"
    if policy not in PREEMPTION_POLICIES:
        raise spec.fail("preemptionPolicy", f"{policy!r} is not PreemptLowerPriority or Never")
    return policy


def _disruption_reason(status: Fields) -> str:
    for condition in status.items("conditions"):
        if condition.str("type") == "DisruptionTarget" and condition.str("status") == "True":
            return condition.str("reason")
    return ""


def parse_pod(raw: Raw) -> Pod:
    meta = parse_meta(raw.get("metadata"), "Pod", namespaced=True)
    spec = Fields(raw.get("spec"), "Pod", meta.name, "spec")
    status = Fields(raw.get("status"), "Pod", meta.name, "status")
    requests, nonzero_cpu, nonzero_memory, containers_nonzero = _pod_requests(spec)
    required, preferred = parse_node_affinity(spec.sub("affinity").sub("nodeAffinity"))
    labels = meta.labels
    scheduled = _scheduled_condition(status)
    return Pod(
        meta=meta,
        scheduler_name=spec.str("schedulerName", DEFAULT_SCHEDULER) or DEFAULT_SCHEDULER,
        node_name=spec.str("nodeName"),
        priority=spec.opt_int("priority", bits=INT32),
        priority_class_name=spec.str("priorityClassName"),
        phase=status.str("phase", "Pending") or "Pending",
        requests=requests,
        nonzero_cpu=nonzero_cpu,
        nonzero_memory=nonzero_memory,
        containers_nonzero=containers_nonzero,
        host_ports=_host_ports(spec),
        volumes=_volumes(spec, meta.name),
        node_selector=spec.str_map("nodeSelector"),
        required_affinity=required,
        preferred_affinity=preferred,
        tolerations=_tolerations(spec),
        pod_affinity=parse_pod_affinity(spec.sub("affinity"), meta.namespace, labels),
        spread_constraints=parse_spread_constraints(spec, labels),
        scheduling_gates=parse_scheduling_gates(spec),
        scheduled_reason=scheduled[0],
        scheduled_message=scheduled[1],
        preemption_policy=_preemption_policy(spec),
        nominated_node_name=status.str("nominatedNodeName"),
        start_time=status.timestamp("startTime"),
        disruption_reason=_disruption_reason(status),
        images=tuple(
            container.str("image")
            for key in ("initContainers", "containers")
            for container in spec.items(key)
        ),
        image_volumes=tuple(
            reference
            for volume in spec.items("volumes")
            if (reference := volume.sub("image").str("reference"))
        ),
        resource_claims=_resource_claims(spec),
        resource_claim_statuses=_resource_claim_statuses(status),
    )


def _resource_claims(spec: Fields) -> tuple[PodResourceClaim, ...]:
    claims = []
    for item in spec.items("resourceClaims"):
        name = item.str("name")
        if not name:
            raise item.fail("name", "is required")
        claim_name = item.opt_str("resourceClaimName")
        template_name = item.opt_str("resourceClaimTemplateName")
        if (claim_name is None) == (template_name is None):
            raise item.fail(
                "", "must have exactly one of resourceClaimName and resourceClaimTemplateName"
            )
        claims.append(PodResourceClaim(name, claim_name, template_name))
    return tuple(claims)


def _resource_claim_statuses(status: Fields) -> dict[str, str | None]:
    return {
        item.str("name"): item.opt_str("resourceClaimName")
        for item in status.items("resourceClaimStatuses")
    }


def parse_pod_after(raw: Raw, previous: Pod, previous_spec: object) -> Pod:
    """``parse_pod(raw)``, reading only metadata and status when ``raw`` is ``previous``
    changed no further than its ``spec.nodeName``, its metadata apart from labels, and
    its status — the MODIFIED event of every pod the scheduler binds. ``previous_spec``
    is the spec ``previous`` was parsed from. Everything a pod's spec and labels decide
    (requests, affinity, spread, tolerations, volumes) is taken from ``previous``; any
    other difference parses the whole pod."""
    spec = raw.get("spec")
    if (
        not isinstance(spec, dict)
        or not isinstance(previous_spec, dict)
        or _without_node_name(spec) != _without_node_name(previous_spec)
    ):
        return parse_pod(raw)
    meta = parse_meta(raw.get("metadata"), "Pod", namespaced=True)
    if meta.labels != previous.meta.labels or meta.namespace != previous.meta.namespace:
        return parse_pod(raw)
    status = Fields(raw.get("status"), "Pod", meta.name, "status")
    scheduled = _scheduled_condition(status)
    return replace(
        previous,
        meta=meta,
        node_name=Fields(spec, "Pod", meta.name, "spec").str("nodeName"),
        phase=status.str("phase", "Pending") or "Pending",
        scheduled_reason=scheduled[0],
        scheduled_message=scheduled[1],
        nominated_node_name=status.str("nominatedNodeName"),
        start_time=status.timestamp("startTime"),
        disruption_reason=_disruption_reason(status),
        resource_claim_statuses=_resource_claim_statuses(status),
    )


def _without_node_name(spec: dict[str, object]) -> dict[str, object]:
    if "nodeName" not in spec:
        return spec
    return {key: value for key, value in spec.items() if key != "nodeName"}
