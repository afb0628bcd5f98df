"""Go's integer division and math.Round, where upstream's scores depend on them.

Python's ``//`` floors and its ``round`` sends halves to the even neighbour; Go's ``/``
truncates toward zero and math.Round sends halves away from zero. A score computed the
Python way differs from kube-scheduler's on a falling shape or at an exact half.
"""

from __future__ import annotations

import math


def go_div(numerator: int, denominator: int) -> int:
    """Integer division truncating toward zero, as Go's ``/`` on integers."""
    quotient = abs(numerator) // abs(denominator)
    return quotient if (numerator >= 0) == (denominator > 0) else -quotient


def round_half_away(numerator: float, denominator: int = 1) -> int:
    """Go's math.Round of ``numerator / denominator``: halves away from zero. A ratio of
    integers is rounded exactly, without a float division; a float (PodTopologySpread's
    logarithmic weights) as Go rounds its float64."""
    if isinstance(numerator, int):
        magnitude = (2 * abs(numerator) + denominator) // (2 * denominator)
    else:
        magnitude = math.floor(abs(numerator) / denominator + 0.5)
    return magnitude if numerator >= 0 else -magnitude
