"""PodDisruptionBudgets (policy/v1), reduced to what preemption weighs.

Preemption does not compute budgets itself: the disruption controller publishes
``status.disruptionsAllowed`` and the pods it has already counted as disrupted, and the
scheduler only spends that allowance, as kube-scheduler does.
"""

from __future__ import annotations

from dataclasses import dataclass

from volsched.cache.objects.fields import INT32, Fields, Raw
from volsched.cache.objects.meta import NamespacedView, ObjectMeta, parse_meta
from volsched.cache.objects.selectors import LabelSelector, parse_label_selector


@dataclass(frozen=True, slots=True)
class PodDisruptionBudget(NamespacedView):
    """``selector`` is None when the budget has none: it then protects no pod, and an
    empty selector protects none either (upstream treats both as matching nothing)."""

    meta: ObjectMeta
    selector: LabelSelector | None
    disruptions_allowed: int = 0
    disrupted_pods: frozenset[str] = frozenset()

    def protects(self, namespace: str, labels: dict[str, str]) -> bool:
        if namespace != self.meta.namespace or not labels:
            return False
        if self.selector is None or self.selector.is_empty():
            return False
        return self.selector.matches(labels)


def parse_pod_disruption_budget(raw: Raw) -> PodDisruptionBudget:
    meta = parse_meta(raw.get("metadata"), "PodDisruptionBudget", namespaced=True)
    spec = Fields(raw.get("spec"), "PodDisruptionBudget", meta.name, "spec")
    status = Fields(raw.get("status"), "PodDisruptionBudget", meta.name, "status")
    selector = parse_label_selector(spec.sub("selector")) if spec.has("selector") else None
    disrupted = status.raw("disruptedPods") or {}
    if not isinstance(disrupted, dict):
        raise status.fail("disruptedPods", "must be a mapping of pod names to times")
    allowed = status.int("disruptionsAllowed", bits=INT32)
    if allowed < 0:
        raise status.fail("disruptionsAllowed", "must not be negative")
    return PodDisruptionBudget(
        meta=meta,
        selector=selector,
        disruptions_allowed=allowed,
        disrupted_pods=frozenset(str(name) for name in disrupted),
    )
