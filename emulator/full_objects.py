"""Pods and nodes as kube-apiserver 1.36 returns them: every defaulted field filled.

A client that posts a three-line pod gets back a pod with a restart policy, a DNS
policy, a grace period, the not-ready/unreachable tolerations the DefaultTolerationSeconds
admission adds, each container's termination message path and image pull policy, the
service account token volume and its mounts, and a QoS class. A node as the kubelet
registers it carries its addresses, four conditions with heartbeats, the daemon
endpoint, the node info, the images it holds, capacity and allocatable with ephemeral
storage and huge pages. A scheduler reads a handful of these fields and decodes them
all; the realistic mode adds them so that what decoding costs is measured.

Every function here only fills what is missing: an object that states a field keeps
its value.
"""

from __future__ import annotations

import hashlib
from typing import Any

from volsched.emulator.raw import Raw, metadata, name_of

DEFAULT_GRACE_SECONDS = 30
# DefaultTolerationSeconds admission: five minutes on a not-ready or unreachable node.
DEFAULT_TOLERATION_SECONDS = 300
KUBELET_PORT = 10250
KUBELET_VERSION = "v1.36.0"
TOKEN_EXPIRATION_SECONDS = 3607
IMAGES_PER_NODE = 12


def _digest(seed: str, length: int = 32) -> str:
    return hashlib.sha256(seed.encode()).hexdigest()[:length]


def _default_tolerations() -> list[Raw]:
    return [
        {
            "key": f"node.kubernetes.io/{condition}",
            "operator": "Exists",
            "effect": "NoExecute",
            "tolerationSeconds": DEFAULT_TOLERATION_SECONDS,
        }
        for condition in ("not-ready", "unreachable")
    ]


def _token_volume(name: str) -> Raw:
    """The projected volume ServiceAccount admission adds (``kube-api-access-<5>``)."""
    return {
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {
                    "serviceAccountToken": {
                        "expirationSeconds": TOKEN_EXPIRATION_SECONDS,
                        "path": "token",
                    }
                },
                {
                    "configMap": {
                        "name": "kube-root-ca.crt",
                        "items": [{"key": "ca.crt", "path": "ca.crt"}],
                    }
                },
                {
                    "downwardAPI": {
                        "items": [
                            {
                                "path": "namespace",
                                "fieldRef": {
                                    "apiVersion": "v1",
                                    "fieldPath": "metadata.namespace",
                                },
                            }
                        ]
                    }
                },
            ],
        },
    }


def _complete_container(container: Raw, token_volume: str) -> None:
    container.setdefault("image", "registry.k8s.io/pause:3.10")
    container.setdefault("resources", {})
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    image = str(container.get("image") or "")
    latest = ":" not in image.rsplit("/", 1)[-1] or image.endswith(":latest")
    container.setdefault("imagePullPolicy", "Always" if latest else "IfNotPresent")
    mounts = container.setdefault("volumeMounts", [])
    if not any(m.get("name") == token_volume for m in mounts if isinstance(m, dict)):
        mounts.append(
            {
                "name": token_volume,
                "readOnly": True,
                "mountPath": "/var/run/secrets/kubernetes.io/serviceaccount",
            }
        )


def _qos_class(containers: list[Any]) -> str:
    requests = limits = False
    guaranteed = bool(containers)
    for container in containers:
        resources = container.get("resources") or {} if isinstance(container, dict) else {}
        wanted, capped = resources.get("requests") or {}, resources.get("limits") or {}
        requests, limits = requests or bool(wanted), limits or bool(capped)
        if not capped or any(capped.get(k) != v for k, v in wanted.items()):
            guaranteed = False
        if set(capped) < {"cpu", "memory"}:
            guaranteed = False
    if guaranteed:
        return "Guaranteed"
    return "Burstable" if requests or limits else "BestEffort"


def complete_pod(pod: Raw) -> None:
    spec = pod.setdefault("spec", {})
    meta = metadata(pod)
    token_volume = "kube-api-access-" + _digest(f"{meta.get('namespace')}/{name_of(pod)}", 5)
    volumes = spec.setdefault("volumes", [])
    if not any(str(v.get("name", "")).startswith("kube-api-access-") for v in volumes):
        volumes.append(_token_volume(token_volume))
    else:
        token_volume = next(
            str(v["name"]) for v in volumes if str(v.get("name", "")).startswith("kube-api-access-")
        )
    containers = spec.setdefault("containers", [])
    for container in containers:
        if isinstance(container, dict):
            _complete_container(container, token_volume)
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("terminationGracePeriodSeconds", DEFAULT_GRACE_SECONDS)
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("securityContext", {})
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("serviceAccountName", "default")
    spec.setdefault("serviceAccount", spec["serviceAccountName"])
    tolerations = spec.setdefault("tolerations", [])
    for default in _default_tolerations():
        if not any(t.get("key") == default["key"] for t in tolerations if isinstance(t, dict)):
            tolerations.append(default)
    spec.setdefault("priority", 0)
    spec.setdefault("enableServiceLinks", True)
    spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
    status = pod.setdefault("status", {})
    if isinstance(status, dict):
        status.setdefault("phase", "Pending")
        status.setdefault("qosClass", _qos_class(containers))


def _conditions(existing: list[Any], now: str) -> list[Raw]:
    """Ready and the three pressure conditions, with the kubelet's reasons."""
    wanted = {
        "MemoryPressure": (
            "False",
            "KubeletHasSufficientMemory",
            "kubelet has sufficient memory available",
        ),
        "DiskPressure": ("False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
        "PIDPressure": ("False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
        "Ready": ("True", "KubeletReady", "kubelet is posting ready status"),
    }
    given = {c.get("type"): c for c in existing if isinstance(c, dict)}
    conditions: list[Raw] = []
    for kind, (status, reason, message) in wanted.items():
        condition = dict(given.pop(kind, {"type": kind, "status": status}))
        if condition.get("status") == status:
            condition.setdefault("reason", reason)
            condition.setdefault("message", message)
        condition.setdefault("lastHeartbeatTime", now)
        condition.setdefault("lastTransitionTime", now)
        conditions.append(condition)
    conditions.extend(given.values())
    return conditions


def _images(node: str) -> list[Raw]:
    """What a node that has run a few workloads holds: digest and tag names, sizes."""
    images = []
    for index in range(IMAGES_PER_NODE):
        repository = f"registry.example.com/team-{index % 4}/service-{index}"
        digest = _digest(f"{repository}@{index}", 64)
        images.append(
            {
                "names": [f"{repository}@sha256:{digest}", f"{repository}:v1.{index}.0"],
                "sizeBytes": 20_000_000 + 7_340_033 * index,
            }
        )
    return images


def complete_node(node: Raw, now: str) -> None:
    name = name_of(node)
    meta = metadata(node)
    labels = meta.setdefault("labels", {})
    for key, value in (
        ("beta.kubernetes.io/arch", "amd64"),
        ("beta.kubernetes.io/os", "linux"),
        ("kubernetes.io/arch", "amd64"),
        ("kubernetes.io/hostname", name),
        ("kubernetes.io/os", "linux"),
    ):
        labels.setdefault(key, value)
    annotations = meta.setdefault("annotations", {})
    annotations.setdefault("node.alpha.kubernetes.io/ttl", "0")
    annotations.setdefault("volumes.kubernetes.io/controller-managed-attach-detach", "true")
    annotations.setdefault(
        "kubeadm.alpha.kubernetes.io/cri-socket", "unix:///var/run/containerd/containerd.sock"
    )
    number = int(_digest(name, 6), 16) % 65000
    spec = node.setdefault("spec", {})
    spec.setdefault("podCIDR", f"10.{number // 250 % 250}.{number % 250}.0/24")
    spec.setdefault("podCIDRs", [spec["podCIDR"]])
    spec.setdefault("providerID", f"kind://docker/cluster/{name}")
    status = node.setdefault("status", {})
    allocatable = status.setdefault("allocatable", {})
    for key, value in (
        ("ephemeral-storage", "95Gi"),
        ("hugepages-1Gi", "0"),
        ("hugepages-2Mi", "0"),
    ):
        allocatable.setdefault(key, value)
    capacity = status.setdefault("capacity", dict(allocatable))
    for key, value in allocatable.items():
        capacity.setdefault(key, value)
    status["conditions"] = _conditions(status.get("conditions") or [], now)
    status.setdefault(
        "addresses",
        [
            {"type": "InternalIP", "address": f"172.18.{number // 250 % 250}.{number % 250 + 2}"},
            {"type": "Hostname", "address": name},
        ],
    )
    status.setdefault("daemonEndpoints", {"kubeletEndpoint": {"Port": KUBELET_PORT}})
    status.setdefault(
        "nodeInfo",
        {
            "machineID": _digest("machine/" + name),
            "systemUUID": _uuid("system/" + name),
            "bootID": _uuid("boot/" + name),
            "kernelVersion": "6.8.0-48-generic",
            "osImage": "Debian GNU/Linux 12 (bookworm)",
            "containerRuntimeVersion": "containerd://2.1.3",
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": "",
            "operatingSystem": "linux",
            "architecture": "amd64",
            "swap": {"capacity": 0},
        },
    )
    status.setdefault("images", _images(name))
    status.setdefault(
        "runtimeHandlers",
        [
            {"name": "runc", "features": {"recursiveReadOnlyMounts": True, "userNamespaces": True}},
            {"name": "", "features": {"recursiveReadOnlyMounts": True, "userNamespaces": True}},
        ],
    )
    status.setdefault("features", {"supplementalGroupsPolicy": True})


def _uuid(seed: str) -> str:
    text = _digest(seed)
    return f"{text[:8]}-{text[8:12]}-{text[12:16]}-{text[16:20]}-{text[20:32]}"
