"""Upstream's DefaultNormalizeScore, shared by the priorities that rescale raw scores."""

from __future__ import annotations


def default_normalize(scores: dict[str, int], max_priority: int, reverse: bool) -> None:
    """Scale ``scores`` in place from ``[0, max(scores)]`` to ``[0, max_priority]``.

    Integer arithmetic as upstream (raw scores are never negative, so ``//`` truncates the
    same way Go does). When every score is 0 they stay 0, or all become ``max_priority``
    with ``reverse`` (nothing to prefer against); ``reverse`` otherwise flips the scale so a
    lower raw score ranks higher.
    """
    highest = max(scores.values(), default=0)
    if highest == 0:
        if reverse:
            for name in scores:
                scores[name] = max_priority
        return
    for name, score in scores.items():
        scaled = max_priority * score // highest
        scores[name] = max_priority - scaled if reverse else scaled
