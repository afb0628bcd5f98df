"""Record what the real kube-scheduler decides for scenario files.

A scenario is a recording (``tests/oracle/kube-scheduler-*/*.yaml``) without ``expect`` and
without the comment block: ``name``, ``config`` (a KubeSchedulerConfiguration) and ``objects``.
For each scenario this starts a fresh control plane, creates the objects the way the
recordings' README describes, runs kube-scheduler at ``-v=10`` with the scenario's config,
and writes the scenario back to ``--out`` with the comment block (every plugin's weighted
score per node, as logged) and ``expect`` (node / node_in / scores / message / preemption /
nominated / victims) filled in from kube-scheduler's log and the FailedScheduling events.

Why the log and not only the API: the per-plugin and total scores exist nowhere else, and
they are what volsched's replay (``tests/oracle/test_recordings.py``) compares.

Usage: ``python -m bench.oracle.record SCENARIO.yaml... --out DIR``.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import re
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from bench.oracle.controlplane import ControlPlane, assets_dir

KUBE_VERSION = "v1.36.2"
WEIGHT_NOTE = (
    "TaintToleration x3, NodeAffinity x2, PodTopologySpread x2, InterPodAffinity x2,\n"
    "# DynamicResources x2, others x1; a plugin whose PreScore skipped is absent"
)
POD_TIMEOUT = 60.0

# (apiVersion, kind) -> (plural, namespaced); anything else falls back to a guessed plural.
_RESOURCES: dict[tuple[str, str], tuple[str, bool]] = {
    ("v1", "Namespace"): ("namespaces", False),
    ("v1", "Node"): ("nodes", False),
    ("v1", "Pod"): ("pods", True),
    ("v1", "Service"): ("services", True),
    ("v1", "ConfigMap"): ("configmaps", True),
    ("v1", "PersistentVolume"): ("persistentvolumes", False),
    ("v1", "PersistentVolumeClaim"): ("persistentvolumeclaims", True),
    ("storage.k8s.io/v1", "StorageClass"): ("storageclasses", False),
    ("storage.k8s.io/v1", "CSINode"): ("csinodes", False),
    ("storage.k8s.io/v1", "CSIDriver"): ("csidrivers", False),
    ("storage.k8s.io/v1", "CSIStorageCapacity"): ("csistoragecapacities", True),
    ("scheduling.k8s.io/v1", "PriorityClass"): ("priorityclasses", False),
    ("resource.k8s.io/v1", "DeviceClass"): ("deviceclasses", False),
    ("resource.k8s.io/v1", "ResourceSlice"): ("resourceslices", False),
    ("resource.k8s.io/v1", "ResourceClaim"): ("resourceclaims", True),
    ("apps/v1", "ReplicaSet"): ("replicasets", True),
    ("apps/v1", "StatefulSet"): ("statefulsets", True),
    ("apps/v1", "Deployment"): ("deployments", True),
    ("policy/v1", "PodDisruptionBudget"): ("poddisruptionbudgets", True),
}
# Fields the API server owns; a scenario copied from a recording may still carry them.
_SERVER_METADATA = ("uid", "resourceVersion", "creationTimestamp", "managedFields", "generation")


def collection_path(obj: dict[str, Any]) -> str:
    """The REST collection URL path for ``obj`` (``/api/v1/namespaces/ns/pods`` ...)."""
    api_version: str = obj["apiVersion"]
    kind: str = obj["kind"]
    plural, namespaced = _RESOURCES.get(
        (api_version, kind),
        (
            kind.lower() + ("es" if kind.lower().endswith("s") else "s"),
            "namespace" in obj["metadata"],
        ),
    )
    prefix = "/api/v1" if api_version == "v1" else f"/apis/{api_version}"
    if namespaced:
        return f"{prefix}/namespaces/{obj['metadata'].get('namespace', 'default')}/{plural}"
    return f"{prefix}/{plural}"


def object_path(obj: dict[str, Any]) -> str:
    return f"{collection_path(obj)}/{obj['metadata']['name']}"


def creatable(obj: dict[str, Any]) -> dict[str, Any]:
    """``obj`` without status and server-owned metadata, ready to POST.

    A PV's ``claimRef`` loses its ``uid``/``resourceVersion``: the claim gets a new uid here,
    and a stale one would make the PV binder treat the PV as released.
    """
    body = {key: value for key, value in obj.items() if key != "status"}
    body["metadata"] = {
        key: value for key, value in obj["metadata"].items() if key not in _SERVER_METADATA
    }
    if obj["kind"] == "PersistentVolume" and "claimRef" in obj.get("spec", {}):
        spec = dict(obj["spec"])
        spec["claimRef"] = {
            key: value
            for key, value in spec["claimRef"].items()
            if key not in ("uid", "resourceVersion")
        }
        body["spec"] = spec
    return body


def is_pending_pod(obj: dict[str, Any]) -> bool:
    return obj["kind"] == "Pod" and not obj.get("spec", {}).get("nodeName")


def pod_key(obj: dict[str, Any]) -> str:
    return f"{obj['metadata'].get('namespace', 'default')}/{obj['metadata']['name']}"


MERGE = "application/merge-patch+json"


def create_object(cp: ControlPlane, obj: dict[str, Any]) -> None:
    """Create one object as the README says (Node status + exact taints, Running pods, SAs)."""
    cp.request("POST", collection_path(obj), creatable(obj))
    kind = obj["kind"]
    if kind == "Namespace":
        # No serviceaccount controller runs, and pod admission needs the default SA.
        cp.request(
            "POST",
            f"/api/v1/namespaces/{obj['metadata']['name']}/serviceaccounts",
            {"metadata": {"name": "default"}},
        )
    elif kind == "Node":
        if "status" in obj:
            cp.request(
                "PATCH", object_path(obj) + "/status", {"status": obj["status"]}, content_type=MERGE
            )
        # Admission added node.kubernetes.io/not-ready; nothing here would ever remove it.
        taints = obj.get("spec", {}).get("taints") or None
        cp.request("PATCH", object_path(obj), {"spec": {"taints": taints}}, content_type=MERGE)
    elif kind == "Pod" and "status" in obj:
        status = {"phase": obj["status"].get("phase", "Running")}
        cp.request("PATCH", object_path(obj) + "/status", {"status": status}, content_type=MERGE)


def wait_for_prebound_claims(
    cp: ControlPlane, objects: Sequence[dict[str, Any]], timeout: float = 20.0
) -> None:
    """Give the PV binder time to settle the volumes before any pending pod is created:
    pre-bound claims bound, and every PV out of the Pending phase it is created in
    (Available or Bound), as kube-scheduler then reads them."""
    settling = [
        (o, ("Bound",))
        for o in objects
        if o["kind"] == "PersistentVolumeClaim" and o.get("spec", {}).get("volumeName")
    ] + [(o, ("Available", "Bound")) for o in objects if o["kind"] == "PersistentVolume"]
    deadline = time.monotonic() + timeout
    for obj, phases in settling:
        while time.monotonic() < deadline:
            phase = cp.get(object_path(obj)).get("status", {}).get("phase")
            if phase in phases:
                break
            time.sleep(0.2)


def record_volume_state(cp: ControlPlane, objects: Sequence[dict[str, Any]]) -> None:
    """Write the volumes and claims down as kube-scheduler saw them: the PV binder
    completed the pre-bound claims (status, the bind annotations), so a replay of the
    recording reads them bound too, as the README promises."""
    for obj in objects:
        if obj["kind"] not in ("PersistentVolume", "PersistentVolumeClaim"):
            continue
        live = cp.get(object_path(obj))
        if live.get("status"):
            obj["status"] = live["status"]
        annotations = {
            key: value
            for key, value in (live["metadata"].get("annotations") or {}).items()
            if key.startswith("pv.kubernetes.io/")
        }
        if annotations:
            obj["metadata"].setdefault("annotations", {}).update(annotations)


# --------------------------------------------------------------------------- the log

# klog's text format: `I1128 12:50:47.448540    5169 schedule_one.go:982] "msg" key="value" key=1`
_LINE = re.compile(r'^[IWEF]\d{4} [\d:.]+\s+\d+ [^ ]+\] "(?P<msg>(?:[^"\\]|\\.)*)"(?P<rest>.*)$')
_KV = re.compile(r'(\w+)=(?:"((?:[^"\\]|\\.)*)"|(\S+))')


def _fields(rest: str) -> dict[str, str]:
    found: dict[str, str] = {}
    for key, quoted, bare in _KV.findall(rest):
        found.setdefault(key, quoted.replace('\\"', '"') if quoted or not bare else bare)
    return found


@dataclass
class Attempt:
    """What kube-scheduler logged for one pod; scores are from its latest scheduling cycle."""

    plugins: dict[str, dict[str, int]] = field(default_factory=dict)
    totals: dict[str, int] = field(default_factory=dict)
    bound: str | None = None
    feasible: int | None = None
    first_failure: str | None = None
    nominated: str | None = None
    victims: list[str] = field(default_factory=list)


def parse_scheduler_log(text: str) -> dict[str, Attempt]:
    """pod key -> :class:`Attempt`, from kube-scheduler's ``-v=10`` log.

    The lines used (checked against kube-scheduler v1.36.2): "Attempting to schedule pod",
    "Plugin scored node for pod", "Calculated node's final score for pod", "Unable to schedule
    pod; no fit; waiting", "Updating pod condition and nominated node name", "Preemptor Pod
    preempted victim Pod" and "Successfully bound pod to node".
    """
    pods: dict[str, Attempt] = {}
    for line in text.splitlines():
        match = _LINE.match(line)
        if match is None:
            continue
        msg = match.group("msg")
        if msg not in _MESSAGES:
            continue
        kv = _fields(match.group("rest"))
        pod = kv.get("pod") or kv.get("preemptor")
        if not pod:
            continue
        attempt = pods.setdefault(pod, Attempt())
        if msg == "Attempting to schedule pod":
            attempt.plugins, attempt.totals = {}, {}
        elif msg == "Plugin scored node for pod":
            attempt.plugins.setdefault(kv["node"], {})[kv["plugin"]] = int(kv["score"])
        elif msg == "Calculated node's final score for pod":
            attempt.totals[kv["node"]] = int(kv["score"])
        elif msg == "Unable to schedule pod; no fit; waiting":
            if attempt.first_failure is None:
                attempt.first_failure = kv.get("err", "")
        elif msg == "Updating pod condition and nominated node name":
            if kv.get("nominatedNodeName"):
                attempt.nominated = kv["nominatedNodeName"]
        elif msg == "Preemptor Pod preempted victim Pod":
            attempt.victims.append(kv["victim"])
        elif msg == "Successfully bound pod to node":
            attempt.bound = kv["node"]
            attempt.feasible = int(kv["feasibleNodes"]) if "feasibleNodes" in kv else None
    return pods


_MESSAGES = {
    "Attempting to schedule pod",
    "Plugin scored node for pod",
    "Calculated node's final score for pod",
    "Unable to schedule pod; no fit; waiting",
    "Updating pod condition and nominated node name",
    "Preemptor Pod preempted victim Pod",
    "Successfully bound pod to node",
}


# --------------------------------------------------------------------------- running


@dataclass
class Outcome:
    """How one pending pod ended: bound to ``node``, or pending with ``condition``/``event``."""

    node: str | None
    reason: str = ""
    message: str = ""
    # The PreEnqueue plugin that holds the pod (reason PRE_ENQUEUE).
    held_by: str = ""


# An Outcome's reason for a pod a PreEnqueue plugin other than SchedulingGates holds.
PRE_ENQUEUE = "PreEnqueue"


def _failed_scheduling(cp: ControlPlane, namespace: str, name: str) -> str | None:
    selector = f"involvedObject.name={name},reason=FailedScheduling"
    events = cp.get(f"/api/v1/namespaces/{namespace}/events?fieldSelector={selector}")["items"]
    if not events:
        return None
    events.sort(key=lambda e: e.get("lastTimestamp") or e.get("eventTime") or "")
    message: str = events[-1].get("message", "")
    return message


# kube-scheduler's -v=4 line for a pod a PreEnqueue plugin holds (it writes nothing to the
# pod or its events): the pod, the plugin and its status, as klog quotes them.
_HELD = re.compile(
    r'"Status after running PreEnqueue plugin" pod="(?P<pod>[^"]+)" '
    r'plugin="(?P<plugin>[^"]+)" status=(?P<status>"(?:[^"\\]|\\.)*")'
)


def pre_enqueue_hold(log: str, pod: str) -> tuple[str, str] | None:
    """(plugin, message) of the last PreEnqueue hold kube-scheduler logged for ``pod``."""
    found = None
    for match in _HELD.finditer(log):
        if match["pod"] == pod:
            found = (match["plugin"], str(json.loads(match["status"])))
    return found


def wait_for_pod(cp: ControlPlane, obj: dict[str, Any], timeout: float = POD_TIMEOUT) -> Outcome:
    """Wait until the pod is bound, is rejected (FailedScheduling), stays scheduling-gated
    or is held by another PreEnqueue plugin (seen in kube-scheduler's log).

    A rejected pod that got a nominated node is preempting: keep waiting for its binding.
    """
    namespace = obj["metadata"].get("namespace", "default")
    name = obj["metadata"]["name"]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pod = cp.get(object_path(obj))
        if pod["spec"].get("nodeName"):
            return Outcome(pod["spec"]["nodeName"])
        selected = selected_node(cp, namespace, pod)
        if selected is not None:
            return Outcome(selected)
        status = pod.get("status", {})
        condition: dict[str, Any] = next(
            (c for c in status.get("conditions", []) if c.get("type") == "PodScheduled"), {}
        )
        if condition.get("reason") == "SchedulingGated":
            return Outcome(None, "SchedulingGated", condition.get("message", ""))
        message = _failed_scheduling(cp, namespace, name)
        if message is not None and not status.get("nominatedNodeName"):
            time.sleep(1.0)  # the nominated node name is written just after the event
            pod = cp.get(object_path(obj))
            if pod["spec"].get("nodeName"):
                return Outcome(pod["spec"]["nodeName"])
            if not pod.get("status", {}).get("nominatedNodeName"):
                return Outcome(None, condition.get("reason", "Unschedulable"), message)
        log = cp.log_path("kube-scheduler").read_text(errors="replace")
        held = pre_enqueue_hold(log, f"{namespace}/{name}")
        if held is not None and message is None:
            return Outcome(None, PRE_ENQUEUE, held[1], held[0])
        time.sleep(0.2)
    raise TimeoutError(f"pod {namespace}/{name} neither bound nor rejected in {timeout:.0f} s")


def selected_node(cp: ControlPlane, namespace: str, pod: dict[str, Any]) -> str | None:
    """The node kube-scheduler chose for a pod whose claims it sent to provisioning: no
    provisioner runs on the oracle's control plane, so PreBind would wait out its
    timeout; the claims' ``selected-node`` annotation is the decision (one node for all
    of them, or None)."""
    names = [
        volume["persistentVolumeClaim"]["claimName"]
        for volume in pod["spec"].get("volumes") or []
        if "persistentVolumeClaim" in volume
    ]
    chosen = set()
    for claim in names:
        path = f"/api/v1/namespaces/{namespace}/persistentvolumeclaims/{claim}"
        annotations = cp.get(path)["metadata"].get("annotations") or {}
        if "volume.kubernetes.io/selected-node" in annotations:
            chosen.add(annotations["volume.kubernetes.io/selected-node"])
    return chosen.pop() if len(chosen) == 1 else None


def run_scenario(
    scenario: dict[str, Any], assets: Path, workdir: Path | None = None
) -> tuple[dict[str, Outcome], dict[str, Attempt]]:
    """Run one scenario on a fresh control plane; return outcomes and the parsed log.

    kube-scheduler starts only after every non-pending object exists, so its first LIST sees
    the whole cluster and no informer ordering race can change a decision.
    """
    objects: list[dict[str, Any]] = scenario["objects"]
    outcomes: dict[str, Outcome] = {}
    with ControlPlane(assets, workdir) as cp:
        for obj in objects:
            if not is_pending_pod(obj):
                create_object(cp, obj)
        wait_for_prebound_claims(cp, objects)
        record_volume_state(cp, objects)
        cp.start_scheduler(scenario["config"], verbosity=10)
        for obj in objects:
            if is_pending_pod(obj):
                cp.request("POST", collection_path(obj), creatable(obj))
                outcomes[pod_key(obj)] = wait_for_pod(cp, obj)
        # Read before the control plane stops: a temporary work dir goes with it.
        log = cp.log_path("kube-scheduler").read_text(errors="replace")
    return outcomes, parse_scheduler_log(log)


# --------------------------------------------------------------------------- writing


def split_message(text: str) -> tuple[str, str | None]:
    """Filter part (through the first sentence's period) and the PostFilter rest, if any."""
    index = text.find(". ")
    if index < 0:
        return text, None
    return text[: index + 1], text[index + 2 :]


def expectation(outcome: Outcome, attempt: Attempt) -> dict[str, Any]:
    """One pod's ``expect`` entry in the recordings' format."""
    entry: dict[str, Any] = {}
    if outcome.node is None:
        entry["node"] = None
        if outcome.reason == "SchedulingGated":
            entry["message"] = outcome.message
        elif outcome.reason == PRE_ENQUEUE:
            entry["message"] = outcome.message
            entry["held_by"] = outcome.held_by
        else:
            message, preemption = split_message(outcome.message)
            entry["message"] = message
            if preemption is not None:
                entry["preemption"] = preemption
        return entry
    totals = attempt.totals
    top = max(totals.values()) if totals else None
    tied = [node for node, score in totals.items() if score == top]
    if len(tied) > 1:
        entry["node_in"] = sorted(tied)
    else:
        entry["node"] = outcome.node
    if totals:
        entry["scores"] = dict(sorted(totals.items()))
    if preempted(attempt):
        entry["nominated"] = attempt.nominated
        entry["victims"] = list(attempt.victims)
    return entry


def preempted(attempt: Attempt) -> bool:
    """A nomination after a failed attempt is preemption's. kube-scheduler 1.36 also
    writes ``nominatedNodeName`` while a pod's binding waits (PreBind with volumes to
    bind), which is not a preemption."""
    return bool(attempt.nominated) and attempt.first_failure is not None


def comment_block(
    stem: str, name: str, outcomes: dict[str, Outcome], log: dict[str, Attempt]
) -> str:
    """The ``#`` header: every plugin's weighted score per node as logged, per pod."""
    lines = [
        f"# {stem}: {name}",
        f"# kube-scheduler {KUBE_VERSION} -v=10, per-plugin scores as logged (already weighted:",
        f"# {WEIGHT_NOTE}):",
    ]
    for pod, outcome in outcomes.items():
        attempt = log.get(pod, Attempt())
        lines.append(f"#   pod {pod}:")
        if outcome.node is None:
            if outcome.reason == "SchedulingGated":
                lines.append(
                    f"#     not attempted (condition PodScheduled=False, SchedulingGated): {outcome.message}"
                )
            elif outcome.reason == PRE_ENQUEUE:
                lines.append(
                    f"#     not attempted (held by {outcome.held_by}'s PreEnqueue, nothing written): "
                    f"{outcome.message}"
                )
            else:
                lines.append(f"#     unschedulable ({outcome.reason}): {outcome.message}")
            continue
        if not attempt.totals:
            lines.append("#     (only one feasible node: kube-scheduler skipped scoring)")
        for node, total in sorted(attempt.totals.items()):  # logged in parallel order
            plugins = " ".join(f"{k}={v}" for k, v in attempt.plugins.get(node, {}).items())
            lines.append(f"#     {node}: {plugins}  => total {total}")
        lines.append(f"#     chosen: {outcome.node}")
        if attempt.first_failure is not None:
            lines.append(f"#     first attempt failed: {attempt.first_failure}")
        if preempted(attempt):
            lines.append(f"#     nominated: {attempt.nominated}, victims: {attempt.victims!r}")
    return "\n".join(lines) + "\n"


def render(
    stem: str, scenario: dict[str, Any], outcomes: dict[str, Outcome], log: dict[str, Attempt]
) -> str:
    """The whole recording file: comment block, then the YAML as the recordings dump it."""
    today = dt.datetime.now(dt.UTC).date().isoformat()
    data: dict[str, Any] = {
        "name": scenario.get("name", stem),
        "source": (
            f"recorded from kube-scheduler {KUBE_VERSION} -v=10 on a real kube-apiserver "
            f"{KUBE_VERSION[1:]} (+ kube-controller-manager PV binder), {today}"
        ),
        "config": scenario["config"],
        "objects": scenario["objects"],
        "expect": {
            "pods": {pod: expectation(o, log.get(pod, Attempt())) for pod, o in outcomes.items()}
        },
    }
    # width=110 with leaf collections in flow style is how the committed recordings are dumped.
    body = yaml.safe_dump(data, sort_keys=False, default_flow_style=None, width=110)
    return comment_block(stem, data["name"], outcomes, log) + body


def load_scenario(path: Path) -> dict[str, Any]:
    """A scenario file; a full recording also works (its ``expect`` is ignored)."""
    data: dict[str, Any] = yaml.safe_load(path.read_text())
    data.pop("expect", None)
    return data


def record(
    scenarios: Sequence[Path], out: Path, assets: Path, keep_logs: Path | None = None
) -> list[Path]:
    """Record every scenario into ``out/<file name>``; returns the files written."""
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for path in scenarios:
        scenario = load_scenario(path)
        workdir = keep_logs / path.stem if keep_logs else None
        outcomes, log = run_scenario(scenario, assets, workdir)
        target = out / path.name
        target.write_text(render(path.stem, scenario, outcomes, log))
        written.append(target)
    return written


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench.oracle.record",
        description="Record the real kube-scheduler's decisions for scenario files.",
    )
    parser.add_argument("scenarios", nargs="+", type=Path, help="scenario YAML files")
    parser.add_argument("--out", required=True, type=Path, help="directory for the recordings")
    parser.add_argument(
        "--keep-logs", type=Path, default=None, help="keep each control plane's work dir here"
    )
    args = parser.parse_args(argv)
    assets = assets_dir()
    if assets is None:
        print(
            "set VOLSCHED_KUBE_ASSETS to a directory holding etcd, kube-apiserver, "
            "kube-controller-manager and kube-scheduler",
            file=sys.stderr,
        )
        return 2
    for target in record(args.scenarios, args.out, assets, args.keep_logs):
        print(target)
    return 0


if __name__ == "__main__":
    sys.exit(main())
