"""Choosing one disk among the candidates of a tier.

``balanced`` (longhorn-manager ≥ 1.11) picks the node, then the disk, that leaves usable
space most even, imbalance being ``(max − min) / mean`` of the usable bytes after the
replica is taken.  ``most-usable`` (≤ 1.10) picks the disk with the most available minus
reserved bytes.  Ties go to the lowest node name, then disk name.

Imbalances are compared exactly.  Every position of one comparison takes the same
``size`` from the same total, so the mean afterwards is the same for all of them and
``(max − min) / mean`` orders exactly like the integer ``max − min``: no float rounding
can flip a decision.
"""

from __future__ import annotations

from collections.abc import Sequence

from volsched.scheduling.replicas.disks import Group
from volsched.scheduling.replicas.settings import DISK_SELECTION_MOST_USABLE


def most_even(values: Sequence[int], size: int, must_fit: bool) -> int | None:
    """The position whose value, less ``size``, leaves ``values`` most even.

    Positions with ``must_fit`` and a value below ``size`` are skipped, and so are those
    after which nothing usable is left (a mean of zero: undefined, never chosen).  None
    when no position qualifies.  O(n): the maximum of "the others" is the overall
    maximum unless the position holds the only copy of it, then the runner-up; the new
    minimum is always min(overall minimum, value − size).
    """
    count = len(values)
    if count == 0:
        return None
    total = 0
    top = second = None
    top_count = 0
    low = None
    for value in values:
        total += value
        if top is None or value > top:
            second = top
            top = value
            top_count = 1
        elif value == top:
            top_count += 1
        elif second is None or value > second:
            second = value
        if low is None or value < low:
            low = value
    assert top is not None and low is not None
    remaining = total - size
    if remaining <= 0:
        return None
    best = None
    best_spread = 0
    for position, value in enumerate(values):
        if must_fit and value < size:
            continue
        after = value - size
        if value != top or top_count > 1:
            others_max = top
        elif second is not None:
            others_max = second
        else:
            others_max = after
        new_max = after if after > others_max else others_max
        new_min = after if after < low else low
        spread = new_max - new_min
        if best is None or spread < best_spread:
            best = position
            best_spread = spread
    return best


def most_usable(groups: Sequence[Group]) -> tuple[int, str]:
    """The disk with the most available − reserved bytes; first in name order on ties."""
    best_node = -1
    best_disk = ""
    best_room = 0
    for node, _name, disks, _total in groups:
        for disk, _usable, room, _headroom in disks:
            if best_node < 0 or room > best_room:
                best_node, best_disk, best_room = node, disk, room
    return best_node, best_disk


def balanced(groups: Sequence[Group], size: int) -> tuple[int, str]:
    """Node first (aggregated usable bytes), then disk within it; see the module doc."""
    chosen = most_even([group[3] for group in groups], size, must_fit=True)
    if chosen is None:
        return most_usable(groups)
    node, _name, disks, _total = groups[chosen]
    if len(disks) == 1:
        return node, disks[0][0]
    disk = most_even([candidate[1] for candidate in disks], size, must_fit=False)
    if disk is None:
        return most_usable([groups[chosen]])
    return node, disks[disk][0]


def select(groups: Sequence[Group], size: int, strategy: str) -> tuple[int, str]:
    """The (node index, disk name) for one replica; ``groups`` must not be empty."""
    if strategy == DISK_SELECTION_MOST_USABLE:
        return most_usable(groups)
    return balanced(groups, size)
