"""DefaultNormalizeScore, with upstream's table (normalize_score_test.go)."""

from __future__ import annotations

import pytest

from volsched.scheduling.plugins.normalize import default_normalize, normalized


@pytest.mark.parametrize(
    ("reverse", "raw", "expected"),
    [
        (False, [1, 2, 3, 4], [25, 50, 75, 100]),
        (True, [1, 2, 3, 4], [75, 50, 25, 0]),
        (False, [1000, 10, 20, 30], [100, 1, 2, 3]),
        (True, [1000, 10, 20, 30], [0, 99, 98, 97]),
        (False, [1, 1, 1, 1], [100, 100, 100, 100]),
        (False, [0, 0, 0, 0], [0, 0, 0, 0]),
        (True, [0, 0, 0, 0], [100, 100, 100, 100]),
        (False, [], []),
        (True, [], []),
    ],
)
def test_default_normalize(reverse: bool, raw: list[int], expected: list[int]) -> None:
    scores = {f"n{i}": score for i, score in enumerate(raw)}
    default_normalize(scores, 100, reverse)
    assert list(scores.values()) == expected
    # The list shape the cycle uses gives the same, and leaves its input alone.
    given = list(raw)
    assert normalized(given, 100, reverse) == expected
    assert given == raw
