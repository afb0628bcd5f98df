"""What the API server's admission would have done to a pod written by hand.

A snapshot file's pods may never have been through an API server; the admission plugins
whose changes decide where a pod goes are applied here, so ``simulate`` decides as the
cluster would: RuntimeClass (overhead, node selector, tolerations) and Priority (the
class's preemption policy). Pods read from a live cluster were admitted already and
are left alone: those fields are set on them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

RUNTIME_CLASS = "RuntimeClass"
PRIORITY_CLASS = "PriorityClass"

Raw = Mapping[str, Any]


def _by_name(objects: Iterable[Raw], kind: str) -> dict[str, Raw]:
    return {
        str(raw["metadata"].get("name")): raw
        for raw in objects
        if raw.get("kind") == kind and isinstance(raw.get("metadata"), Mapping)
    }


@dataclass(frozen=True, slots=True)
class Admission:
    runtime_classes: Mapping[str, Raw]
    priority_classes: Mapping[str, Raw]

    @classmethod
    def of(cls, objects: Iterable[Raw]) -> Admission:
        listed = list(objects)
        return cls(_by_name(listed, RUNTIME_CLASS), _by_name(listed, PRIORITY_CLASS))

    def admit(self, raw: Raw) -> Raw:
        spec = raw.get("spec")
        if not isinstance(spec, Mapping):
            return raw
        admitted = self._runtime_class(dict(spec))
        admitted = self._priority(admitted)
        return raw if admitted == spec else {**raw, "spec": admitted}

    def _runtime_class(self, spec: dict[str, Any]) -> dict[str, Any]:
        """The class's ``overhead.podFixed`` as ``spec.overhead`` (unless set), its
        ``scheduling.nodeSelector`` merged in, its tolerations added."""
        runtime_class = self.runtime_classes.get(str(spec.get("runtimeClassName") or ""))
        if runtime_class is None:
            return spec
        overhead = runtime_class.get("overhead")
        if isinstance(overhead, Mapping) and overhead.get("podFixed") and not spec.get("overhead"):
            spec["overhead"] = overhead["podFixed"]
        scheduling = runtime_class.get("scheduling")
        if isinstance(scheduling, Mapping):
            selector = scheduling.get("nodeSelector")
            if isinstance(selector, Mapping) and selector:
                spec["nodeSelector"] = {**selector, **(spec.get("nodeSelector") or {})}
            tolerations = scheduling.get("tolerations")
            if isinstance(tolerations, list) and tolerations:
                spec["tolerations"] = [*(spec.get("tolerations") or []), *tolerations]
        return spec

    def _priority(self, spec: dict[str, Any]) -> dict[str, Any]:
        """The class's ``preemptionPolicy`` when the pod names none (Priority admission;
        the class's value is read from the class itself when the pod is scheduled)."""
        if spec.get("preemptionPolicy"):
            return spec
        name = spec.get("priorityClassName")
        chosen = self.priority_classes.get(str(name)) if name else None
        if chosen is None and not name:
            chosen = next(
                (pc for pc in self.priority_classes.values() if pc.get("globalDefault")), None
            )
        policy = chosen.get("preemptionPolicy") if chosen is not None else None
        if isinstance(policy, str) and policy:
            spec["preemptionPolicy"] = policy
        return spec
