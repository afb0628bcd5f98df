"""Upstream's DefaultNormalizeScore, shared by the priorities that rescale raw scores."""

from __future__ import annotations


def normalized(values: list[int], max_priority: int, reverse: bool) -> list[int]:
    """``values`` scaled from ``[0, max(values)]`` to ``[0, max_priority]``.

    Integer arithmetic as upstream (raw scores are never negative, so ``//`` truncates the
    same way Go does). When every score is 0 they stay 0, or all become ``max_priority``
    with ``reverse`` (nothing to prefer against); ``reverse`` otherwise flips the scale so a
    lower raw score ranks higher.
    """
    highest = max(values, default=0)
    if highest == 0:
        return [max_priority] * len(values) if reverse else list(values)
    if reverse:
        return [max_priority - max_priority * score // highest for score in values]
    return [max_priority * score // highest for score in values]


def default_normalize(scores: dict[str, int], max_priority: int, reverse: bool) -> None:
    """``normalized``, in place on a mapping of node name to score."""
    scores.update(
        zip(scores, normalized(list(scores.values()), max_priority, reverse), strict=True)
    )
