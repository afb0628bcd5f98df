"""The Score phase of one cycle (upstream's RunScorePlugins and selectHost): every
priority's scores of the feasible nodes, weighted and summed, and the best node.

Laid out for the common case, a repeat of a pod shape: the node-local priorities' rows
are kept (``node_verdicts.score_rows``), and each priority's own part of the totals is
worked out only when someone reads it (docs/concepts/kept-verdicts.md).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass
from itertools import repeat
from operator import add, mul

from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.node_verdicts import score_key, score_rows
from volsched.scheduling.framework.profile import ScoreStep
from volsched.scheduling.framework.shape_columns import ShapeColumns, put_window, window
from volsched.scheduling.framework.status import Code


@dataclass(slots=True)
class Scored:
    """The totals of the feasible nodes, in their order, and how to name each
    priority's part of them."""

    feasible: list[NodeInfo]
    totals: list[int]
    by_priority: Callable[[], dict[str, list[int]]]

    def names(self) -> list[str]:
        return [info.name for info in self.feasible]

    def best(self, rng: random.Random) -> str:
        """``best`` of these totals, naming only the node it picks."""
        return self.feasible[best_index(self.totals, rng)].name


# The columns of the node list ``feasible`` is a window of, that list, and where the
# window starts (``Decision.feasible_window``).
Aligned = tuple[ShapeColumns, list[NodeInfo], int]


def score(
    steps: list[ScoreStep],
    state: CycleState,
    pod: Pod,
    feasible: list[NodeInfo],
    aligned: Aligned | None = None,
) -> Scored:
    count = len(feasible)
    skipped: set[int] = set()
    for step in steps:
        if step.pre_score is not None:
            status = step.pre_score(state, pod, feasible)
            if status.code is Code.SKIP:
                skipped.add(id(step))
    running = [step for step in steps if id(step) not in skipped]
    local = [step for step in running if step.score_key is not None]
    key = score_key(local, state, pod) if local else None
    rows: list[tuple[int, ...]] = []
    if key is None:
        local = []
        totals = [0] * count
    elif aligned is None:
        rows = score_rows(key, local, state, pod, feasible)
        totals = [row[0] for row in rows]
    else:
        columns, nodes, begin = aligned
        kept = columns.column(key, nodes, None)
        rows = score_rows(key, local, state, pod, feasible, window(kept, begin, count))
        put_window(kept, begin, rows)
        totals = [row[0] for row in rows]
    # The local steps' columns of the rows: the plain ones are summed into each row's
    # first value already; the others are read here and normalized below.
    plain = {id(step): column for column, step in enumerate(local, 1) if not _normalizes(step)}
    raw = {
        id(step): [row[column] for row in rows]
        for column, step in enumerate(local, 1)
        if id(step) not in plain
    }
    # Each priority's normalized scores, by id of its step.
    normalized: dict[int, list[int]] = {}
    for step in running:
        if id(step) in plain:
            continue
        values = raw.get(id(step))
        if values is None:
            values = _ask(step, state, pod, feasible)
        values = _normalize(step, state, pod, feasible, values)
        if len(values) != count:
            raise ValueError(f"{step.priority.policy_name} scored {len(values)} of {count} nodes")
        normalized[id(step)] = values
        weight = step.priority.weight
        if weight != 1:
            values = list(map(mul, values, repeat(weight, count)))
        # map over operator's functions: the sums run in C, not a comprehension.
        totals = list(map(add, totals, values))

    def by_priority() -> dict[str, list[int]]:
        parts: dict[str, list[int]] = {}
        for step in steps:
            name = step.priority.policy_name
            if id(step) in skipped:
                parts[name] = [0] * count
            elif id(step) in plain:
                column = plain[id(step)]
                parts[name] = [row[column] for row in rows]
            else:
                parts[name] = normalized[id(step)]
        return parts

    return Scored(feasible, totals, by_priority)


def best(names: list[str], totals: list[int], rng: random.Random) -> str:
    """The node of the highest total (``best_index``)."""
    return names[best_index(totals, rng)]


def best_index(totals: list[int], rng: random.Random) -> int:
    """Where the highest total is; among equals, one at random (upstream's selectHost
    samples its ties the same way: each equally likely). A single highest total draws
    nothing from ``rng``, so a decision without ties leaves the sequence untouched."""
    top = max(totals)
    if totals.count(top) == 1:
        return totals.index(top)
    return rng.choice([index for index, total in enumerate(totals) if total == top])


def _normalizes(step: ScoreStep) -> bool:
    return step.normalize_list is not None or step.normalize is not None


def _ask(step: ScoreStep, state: CycleState, pod: Pod, feasible: list[NodeInfo]) -> list[int]:
    if step.score_nodes is not None:
        return step.score_nodes(state, pod, feasible)
    plugin_score = step.priority.plugin.score
    return [plugin_score(state, pod, info) for info in feasible]


def _normalize(
    step: ScoreStep, state: CycleState, pod: Pod, feasible: list[NodeInfo], values: list[int]
) -> list[int]:
    if step.normalize_list is not None:
        return step.normalize_list(state, pod, values)
    if step.normalize is not None:
        # Normalizers rewrite the values of the mapping in place, keys unchanged.
        scores = dict(zip((info.name for info in feasible), values, strict=True))
        step.normalize(state, pod, scores)
        return list(scores.values())
    return values
