"""Finishing what a killed daemon left half done: the open intents of the binding journal.

Checked against what the API server says *now*. In a real cluster the PV controller
completes a prebind within a fraction of a second, even while we are down, so recovery
is mostly roll-forward: a claim that got bound keeps its PV and the pod will follow it.
Only a claimRef whose claim is still unbound is cleared (no PV stays prebound to a pod
that was never placed), and a selected-node annotation with no volume yet is removed.
The pod itself, if still pending, simply goes back through the queue.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from volsched.cache.errors import ApiError, NotFound
from volsched.daemon.binding import Binder, Intent, forget_assumed

log = logging.getLogger("volsched.recovery")


@dataclass(slots=True)
class RecoveryReport:
    """``finished``: intents whose pod got bound; ``released`` / ``kept``: PVs whose
    claimRef was cleared / kept because the PV controller had bound the claim."""

    finished: int = 0
    released: int = 0
    kept: int = 0
    failed: int = 0


def intent_from_json(data: dict[str, object]) -> Intent:
    def items(key: str) -> list[dict[str, object]]:
        value = data.get(key)
        return [dict(item) for item in value] if isinstance(value, list) else []

    return Intent(
        pod=str(data.get("pod", "")),
        pod_uid=str(data.get("podUID", "")),
        node=str(data.get("node", "")),
        prebinds=items("prebinds"),
        provisions=items("provisions"),
        replicas=items("replicas"),
    )


async def recover(binder: Binder) -> RecoveryReport:
    """Resolve every open intent; each is closed whatever happens, so a broken one
    cannot wedge the daemon on every start."""
    report = RecoveryReport()
    pending = await binder.journal.journal_pending()
    for entry in pending:
        try:
            intent = intent_from_json(entry.intent)
            if await _pod_is_bound(binder, intent):
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
        except Exception:
            # A malformed intent must not wedge every start: log it and drop it.
            log.exception("journal entry %s cannot be recovered; dropping it", entry.id)
            report.failed += 1
            await binder.journal.journal_close(entry.id)
            continue
        await binder.journal.journal_close(entry.id)
        forget_assumed(binder.journal, intent)
    if pending:
        log.info(
            "binding journal: %d intent(s) finished; %d PV prebind(s) released, %d kept "
            "(claim bound: rolled forward); %d left as found",
            report.finished,
            report.released,
            report.kept,
            report.failed,
        )
    return report


async def _pod_is_bound(binder: Binder, intent: Intent) -> bool:
    namespace, name = intent.pod.split("/", 1)
    try:
        pod = await binder.client.get("Pod", name, namespace)
    except NotFound:
        return False
    uid = (pod.get("metadata") or {}).get("uid")
    if intent.pod_uid and uid != intent.pod_uid:
        return False
    return bool((pod.get("spec") or {}).get("nodeName"))
