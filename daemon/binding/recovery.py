"""Finishing what a killed daemon left half done: the open intents of the binding journal.

Checked against what the API server says *now*. In a real cluster the PV controller
completes a prebind within a fraction of a second, even while we are down, so recovery
is mostly roll-forward: a claim that got bound keeps its PV and the pod will follow it.
Only a claimRef whose claim is still unbound is cleared (no PV stays prebound to a pod
that was never placed), and the selected-node annotation of a claim whose pod is not
on that node is removed (a claim already provisioned keeps its volume; one its pod can
reach from elsewhere must not name a node the pod is not on). The pod itself, if still
pending, simply goes back through the queue.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass

from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import ApiError
from volsched.daemon.binding.binder import Binder
from volsched.daemon.binding.intent import ANN_BINDING_INTENT, Intent, forget_assumed

log = logging.getLogger("volsched.recovery")


@dataclass(slots=True)
class RecoveryReport:
    """``finished``: intents whose pod got bound; ``released`` / ``kept``: PVs whose
    claimRef was cleared / kept because the PV controller had bound the claim."""

    finished: int = 0
    released: int = 0
    kept: int = 0
    failed: int = 0


class MalformedIntent(ValueError):
    """A journal intent that decodes but does not describe a binding cycle (a damaged
    or hand-edited row); the message names the field."""


# The fields undo reads from each written item, and so must be text.
_ITEM_FIELDS = {
    "prebinds": ("pv", "claim"),
    "provisions": ("claim",),
    "replicas": ("volume", "name"),
}


def intent_from_json(data: dict[str, object]) -> Intent:
    """The intent a journal entry records; ``MalformedIntent`` when it cannot be one."""

    def text(key: str) -> str:
        value = data.get(key) or ""
        if not isinstance(value, str):
            raise MalformedIntent(f"{key} is {type(value).__name__}, not text")
        return value

    def items(key: str) -> list[dict[str, object]]:
        value = data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise MalformedIntent(f"{key} is {type(value).__name__}, not a list")
        for index, item in enumerate(value):
            if not isinstance(item, dict):
                raise MalformedIntent(f"{key}[{index}] is {type(item).__name__}, not an object")
            for field in _ITEM_FIELDS[key]:
                if not isinstance(item.get(field), str):
                    raise MalformedIntent(f"{key}[{index}].{field} is missing or not text")
        return [dict(item) for item in value]

    return Intent(
        pod=text("pod"),
        pod_uid=text("podUID"),
        node=text("node"),
        prebinds=items("prebinds"),
        provisions=items("provisions"),
        replicas=items("replicas"),
        cycle=text("cycle"),
    )


def intents_in_the_api(cluster: ClusterCache, skip_pods: set[str]) -> list[Intent]:
    """Half-done bindings as the API objects record them (the intent annotation written
    with each prebind and selected-node write): what a leader with an empty journal —
    a standby after a failover — must finish or release. Only writes the PV controller
    has not completed count: a PV still waiting for its claim, a claim still without a
    volume — or provisioned for a pod that is (in the cache) pending or on another node:
    its annotations are released, the volume stays. Pods the local journal already
    covers are left to it."""
    by_pod: dict[tuple[str, str], Intent] = {}

    def intent_of(annotation: str, provisioned: bool = False) -> Intent | None:
        try:
            data = json.loads(annotation)
            pod, uid, node = str(data["pod"]), str(data["podUID"]), str(data["node"])
            cycle = str(data.get("cycle") or "")
        except (ValueError, KeyError, TypeError, AttributeError):
            return None
        if "/" not in pod or pod in skip_pods:
            return None
        if provisioned:
            # Only the same pod, still pending or placed on another node, leaves the
            # annotations of a provisioned claim to release.
            placed = cluster.pods.get(pod)
            if placed is None or placed.meta.uid != uid or placed.node_name == node:
                return None
        return by_pod.setdefault((pod, cycle), Intent(pod, uid, node, cycle=cycle))

    for pv in cluster.pvs.values():
        annotation = pv.meta.annotations.get(ANN_BINDING_INTENT)
        ref = pv.claim_ref
        if annotation is None or ref is None or pv.phase in ("Bound", "Released", "Failed"):
            continue
        intent = intent_of(annotation)
        if intent is not None:
            intent.prebinds.append(
                {"pv": pv.meta.name, "claim": f"{ref.namespace}/{ref.name}", "write": True}
            )
    for claim in cluster.pvcs.values():
        annotation = claim.meta.annotations.get(ANN_BINDING_INTENT)
        if annotation is None:
            continue
        intent = intent_of(annotation, provisioned=bool(claim.volume_name))
        if intent is not None:
            intent.provisions.append({"claim": claim.key})
    return list(by_pod.values())


async def recover(binder: Binder) -> RecoveryReport:
    """Resolve every open intent — the local journal's, and those only the API objects
    record — ; each is closed whatever happens, so a broken one cannot wedge the daemon
    on every start."""
    report = RecoveryReport()
    pending = await binder.journal.journal_pending()
    covered = {str(entry.intent.get("pod", "")) for entry in pending}
    for intent in intents_in_the_api(binder.cluster, covered):
        await _resolve_api_intent(binder, intent, report)
    for entry in pending:
        try:
            intent = intent_from_json(entry.intent)
            if await binder.undoer.pod_is_bound(intent):
                report.finished += 1
            else:
                undone = await binder.undo(intent)
                report.released += len(undone.released)
                report.kept += len(undone.kept)
                if undone.failed:
                    # Keep the intent: the next start (or leader) tries again.
                    report.failed += 1
                    continue
        except ApiError as exc:
            log.warning("recovery of journal entry %s left for later: %s", entry.id, exc)
            report.failed += 1
            continue
        except MalformedIntent as problem:
            # Damage, not a bug: one line, and the entry goes (what it wrote, if
            # anything, is recorded on the objects, where the API pass finds it).
            log.warning("journal entry %s: intent %s; dropping it", entry.id, problem)
            report.failed += 1
            await binder.journal.journal_close(entry.id)
            continue
        except Exception:
            # A malformed intent must not wedge every start: log it and drop it.
            log.exception("journal entry %s cannot be recovered; dropping it", entry.id)
            report.failed += 1
            await binder.journal.journal_close(entry.id)
            continue
        await binder.journal.journal_close(entry.id)
        forget_assumed(binder.journal, intent)
    if pending or report.released or report.kept or report.finished:
        log.info(
            "binding journal: %d intent(s) finished; %d PV prebind(s) released, %d kept "
            "(claim bound: rolled forward); %d left as found",
            report.finished,
            report.released,
            report.kept,
            report.failed,
        )
    return report


async def _resolve_api_intent(binder: Binder, intent: Intent, report: RecoveryReport) -> None:
    try:
        if await binder.undoer.pod_is_bound(intent):
            report.finished += 1
            return
        undone = await binder.undo(intent)
    except ApiError as exc:
        log.warning("recovery of %s's recorded binding left for later: %s", intent.pod, exc)
        report.failed += 1
        return
    report.released += len(undone.released)
    report.kept += len(undone.kept)
    report.failed += bool(undone.failed)
    log.info(
        "binding of %s to %s recorded in the API and never finished: %d released, %d kept",
        intent.pod,
        intent.node,
        len(undone.released),
        len(undone.kept),
    )
