"""Go's integer division and math.Round, which upstream's scores are computed with."""

from __future__ import annotations

import pytest

from volsched.scheduling.go_arithmetic import go_div, round_half_away


@pytest.mark.parametrize(
    ("numerator", "denominator", "quotient"),
    [(7, 2, 3), (-7, 2, -3), (7, -2, -3), (-7, -2, 3), (0, 5, 0)],
)
def test_go_division_truncates_toward_zero(numerator: int, denominator: int, quotient: int) -> None:
    assert go_div(numerator, denominator) == quotient


@pytest.mark.parametrize(
    ("numerator", "denominator", "rounded"),
    [
        (5, 2, 3),
        (-5, 2, -3),
        (7, 3, 2),
        (8, 3, 3),
        (0, 4, 0),
        (2.5, 1, 3),
        (-2.5, 1, -3),
        (0.49999, 1, 0),
        (1.5, 3, 1),
    ],
)
def test_halves_round_away_from_zero_for_integers_and_floats(
    numerator: float, denominator: int, rounded: int
) -> None:
    assert round_half_away(numerator, denominator) == rounded
