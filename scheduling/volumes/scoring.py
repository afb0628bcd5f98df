"""Volume scores: utilization of the chosen storage mapped through a shape.

Both volsched's PrioritizeVolumes (tightest fit) and VolumeBinding's capacity score
(StorageCapacityScoring, emptiest fit by default) use upstream's arithmetic, integer for
integer: per StorageClass of the chosen PVs,
utilization = requested × 100 // capacity (100 when capacity is 0 or exceeded), mapped
through a broken-linear shape whose scores are scaled ×10 to 0..100, then averaged over
classes and rounded half away from zero. Go's division truncates toward zero, so the
shape arithmetic does too (Python's ``//`` floors, which differs on a falling shape).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from volsched.scheduling.framework.interfaces import MAX_NODE_SCORE
from volsched.scheduling.go_arithmetic import go_div, round_half_away

MAX_UTILIZATION = 100
MAX_CUSTOM_PRIORITY_SCORE = 10


@dataclass(frozen=True, slots=True)
class ShapePoint:
    utilization: int
    score: int


# PrioritizeVolumes: the fuller the chosen PVs, the better (less capacity stranded).
DEFAULT_SHAPE = (ShapePoint(0, 0), ShapePoint(100, 10))
# VolumeBinding's default under StorageCapacityScoring (upstream's defaults.go): the
# emptiest fit scores highest.
CAPACITY_SHAPE = (ShapePoint(0, 10), ShapePoint(100, 0))


def broken_linear(shape: Sequence[ShapePoint], utilization: int) -> int:
    """Upstream's BuildBrokenLinearFunction over an already scaled shape."""
    for index, point in enumerate(shape):
        if utilization <= point.utilization:
            if index == 0:
                return shape[0].score
            previous = shape[index - 1]
            return previous.score + go_div(
                (point.score - previous.score) * (utilization - previous.utilization),
                point.utilization - previous.utilization,
            )
    return shape[-1].score


def scale_shape(shape: Sequence[ShapePoint]) -> tuple[ShapePoint, ...]:
    factor = MAX_NODE_SCORE // MAX_CUSTOM_PRIORITY_SCORE
    return tuple(ShapePoint(p.utilization, p.score * factor) for p in shape)


def class_score(shape: Sequence[ShapePoint], requested: int, capacity: int) -> int:
    if capacity == 0 or requested > capacity:
        return broken_linear(shape, MAX_UTILIZATION)
    return broken_linear(shape, requested * MAX_UTILIZATION // capacity)


def volume_score(shape: Sequence[ShapePoint], by_class: dict[str, tuple[int, int]]) -> int:
    """Average of the per-class scores; ``by_class`` maps class → (requested, capacity)."""
    if not by_class:
        return 0
    total = sum(class_score(shape, req, cap) for req, cap in by_class.values())
    return round_half_away(total, len(by_class))
