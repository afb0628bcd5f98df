"""A ServiceMonitor checked against prometheus-operator's API as a typed model of its
CRD (the ``cloudcoil.models.prometheus_operator`` package, generated from the CRDs
prometheus-operator publishes), as kube-apiserver's strict field validation would:
every field declared, of its type, every required field present.

The model ignores fields it does not declare, so an unknown field is found by reading
the object back from the model and comparing: whatever did not come back was not a
field of the API. ``metadata`` is ObjectMeta, checked by the API server itself.
"""

from __future__ import annotations

from typing import Any

import pydantic
from cloudcoil.models.prometheus_operator import v1

Raw = dict[str, Any]


def _dropped(given: Any, kept: Any, path: str) -> list[str]:
    if isinstance(given, dict):
        kept = kept if isinstance(kept, dict) else {}
        problems = []
        for name, value in given.items():
            where = f"{path}.{name}" if path else name
            if name not in kept:
                problems.append(f"{where}: not a field")
            else:
                problems += _dropped(value, kept[name], where)
        return problems
    if isinstance(given, list):
        kept = kept if isinstance(kept, list) else []
        return [
            problem
            for index, value in enumerate(given)
            for problem in _dropped(
                value, kept[index] if index < len(kept) else None, f"{path}.{index}"
            )
        ]
    return []


def service_monitor_problems(monitor: Raw) -> list[str]:
    """What prometheus-operator's API refuses in ``monitor``, one line each."""
    try:
        model = v1.ServiceMonitor.model_validate(monitor)
    except pydantic.ValidationError as error:
        return [
            f"{'.'.join(str(part) for part in problem['loc'])}: {problem['msg']}"
            for problem in error.errors()
        ]
    kept = model.model_dump(by_alias=True, exclude_none=True, mode="json")
    return _dropped(monitor.get("spec"), kept.get("spec"), "spec")
