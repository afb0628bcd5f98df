"""A binding cycle's intent: what it is about to write, kept in the journal before the
first write and in an annotation on the objects it writes, so that a killed daemon — or
another replica — can finish or release it."""

from __future__ import annotations

import json
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol

from volsched.cache.errors import StoreError, StoreFull
from volsched.scheduling.framework.runner import Decision
from volsched.scheduling.plugins.volume_binding import assumed_volumes
from volsched.scheduling.storage_placement import ReplicaPlan


class Journal(Protocol):
    async def journal_open(self, pod: str, node: str, intent: Mapping[str, Any]) -> int: ...
    async def journal_close(self, entry_id: int) -> None: ...
    async def journal_pending(self) -> list[Any]: ...
    def put_assumed(self, kind: str, key: str, raw: Mapping[str, Any]) -> None: ...
    def delete_assumed(self, kind: str, key: str) -> None: ...


@dataclass(slots=True)
class UndoResult:
    """PVs whose claimRef was cleared, PVs kept because their claim got bound, and the
    objects that could not be undone now (an API error: recovery will try again)."""

    released: list[str] = field(default_factory=list)
    kept: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)


class BindingFailed(Exception):
    """The binding cycle cannot complete; the message is what the user sees."""


def journal_unwritable(error: StoreError) -> str:
    """What the user sees when a binding's intent cannot be recorded: nothing was
    written, and the pod is retried."""
    state = "is full" if isinstance(error, StoreFull) else "cannot be written"
    return (
        f"binding volumes: the scheduler's database {state}; no volume is bound until the "
        f"binding can be recorded ({error})"
    )


@dataclass(slots=True)
class Intent:
    """What a binding cycle is about to write; stored in the journal before any write."""

    pod: str
    pod_uid: str
    node: str
    prebinds: list[dict[str, Any]] = field(default_factory=list)
    provisions: list[dict[str, Any]] = field(default_factory=list)
    replicas: list[dict[str, Any]] = field(default_factory=list)
    # Which binding cycle wrote the annotations: a later cycle of the same pod on the
    # same node writes its own, which undoing this one must leave alone. Empty for an
    # intent recorded before cycles were named (it then matches any).
    cycle: str = field(default_factory=lambda: secrets.token_hex(6))

    @property
    def writes_volumes(self) -> bool:
        return bool(
            any(p.get("write", True) for p in self.prebinds) or self.provisions or self.replicas
        )

    def as_json(self) -> dict[str, Any]:
        return {
            "pod": self.pod,
            "podUID": self.pod_uid,
            "node": self.node,
            "prebinds": self.prebinds,
            "provisions": self.provisions,
            "replicas": self.replicas,
            "cycle": self.cycle,
        }


def forget_assumed(journal: Journal, intent: Intent) -> None:
    """Drop the intent's layer-2 records from the store (the cycle is over)."""
    journal.delete_assumed("Pod", intent.pod)
    for prebind in intent.prebinds:
        journal.delete_assumed("PersistentVolume", prebind["pv"])
    for provision in intent.provisions:
        journal.delete_assumed("PersistentVolumeClaim", provision["claim"])


# On a PV we prebind and a claim we ask to provision: which pod, on which node, and
# which binding cycle the write was for (JSON: pod, podUID, node, cycle).
ANN_BINDING_INTENT = "volsched.io/binding-intent"


def intent_annotation(intent: Intent) -> str:
    return json.dumps(
        {"pod": intent.pod, "podUID": intent.pod_uid, "node": intent.node, "cycle": intent.cycle},
        separators=(",", ":"),
    )


def written_by(annotations: Mapping[str, str], intent: Intent) -> bool:
    """Whether an object's binding-intent annotation is ``intent``'s own cycle's.

    An annotation naming another cycle is a later binding of the pod (perhaps on the
    same node) and is not ours to take back; one without a cycle, unreadable, or absent
    is treated as ours, as before cycles were named."""
    if not intent.cycle:
        return True
    try:
        data = json.loads(annotations.get(ANN_BINDING_INTENT) or "{}")
    except ValueError:
        return True
    cycle = data.get("cycle") if isinstance(data, dict) else None
    return not cycle or cycle == intent.cycle


def intent_for(decision: Decision) -> Intent:
    assert decision.node is not None
    pod = decision.pod
    intent = Intent(pod.meta.key, pod.meta.uid, decision.node)
    assumed = assumed_volumes(decision.state)
    if assumed is None:
        return intent
    for binding in assumed.bindings:
        claim = binding.claim
        intent.prebinds.append(
            {
                "pv": binding.pv.meta.name,
                "pvResourceVersion": binding.pv.meta.resource_version,
                "claim": claim.key,
                "claimUID": claim.meta.uid,
                # Nothing to write when the PV already names the claim with its uid.
                "write": binding.dirty,
                # Reserved for this claim by its author: never released on failure.
                "preexisting": binding.preexisting,
            }
        )
    for claim in assumed.provisions:
        intent.provisions.append(
            {"claim": claim.key, "claimResourceVersion": claim.meta.resource_version}
        )
        plan = assumed.plans.get(claim.key)
        if isinstance(plan, ReplicaPlan):
            volume = plan.placement.volume
            for index, placement in enumerate(plan.placement.placed):
                intent.replicas.append(
                    {
                        "name": f"{volume}-r-{secrets.token_hex(4)}",
                        "volume": volume,
                        "node": placement.node,
                        "disk": placement.disk,
                        "primary": placement.node == decision.node
                        or (
                            index == 0
                            and all(p.node != decision.node for p in plan.placement.placed)
                        ),
                    }
                )
    return intent
