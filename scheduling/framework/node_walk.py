"""The Filter phase's walk over the nodes: upstream's findNodesThatPassFilters.

The walk starts where the last one stopped and ends once enough nodes fit
(``num_feasible_nodes_to_find``) or every node was asked. It goes in batches of as many
nodes as feasible ones are still wanted, so it stops after the same node a walk node
by node would. For each batch it reads what is kept (``KeptVerdicts``), asks the filters
only of the nodes with nothing kept, in walk order, and keeps what they said: one path,
whether a verdict comes from a node's memo, the shape's column or the plugins.

Given a ``Screen``, a node outside it is not asked at all: it is certainly rejected, and
only which filter rejects it first is left unknown (``SCREENED``). The walk stops after
the same node and finds the same feasible nodes; only the rejected nodes' reasons are
missing, which the caller asks for again when it needs them (``Scheduler.find_feasible``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from volsched.cache.node_info import UNKNOWN, NodeInfo
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.decision import Decision
from volsched.scheduling.framework.extension_points import Framework, Screen
from volsched.scheduling.framework.kept_results import KeptResults, KeptVerdicts
from volsched.scheduling.framework.node_verdicts import Check, filter_key
from volsched.scheduling.framework.shape_columns import window
from volsched.scheduling.framework.status import Code

# The verdict of a node the screen ruled out: rejected, by a filter not asked which.
SCREENED = object()


@dataclass(slots=True)
class Walk:
    """Where the walk over ``nodes`` starts, and how many feasible nodes end it."""

    nodes: list[NodeInfo]
    start: int
    wanted: int


def find_nodes_that_pass_filters(
    framework: Framework,
    kept: KeptResults,
    decision: Decision,
    walk: Walk,
    screen: Screen | None = None,
) -> tuple[int, int]:
    """Fill ``decision.feasible`` (in walk order) and the reasons of the rejected nodes
    the filters were asked about; returns how many nodes were looked at, and how many
    of them ``screen`` ruled out unasked. A filter's error ends the walk at its node,
    with the decision's error set and no feasible node."""
    state, pod, nodes = decision.state, decision.pod, walk.nodes
    count = len(nodes)
    if count == 0:
        return 0, 0
    checks = framework.active_checks(state)
    memory = kept.verdicts(
        filter_key(framework.profile, state, pod), nodes, framework.crowded_nodes()
    )
    feasible: list[NodeInfo] = []
    # The feasible nodes are one window of the node list while every node walked fits.
    whole = memory.columnar
    processed = screened = 0
    while processed < count and len(feasible) < walk.wanted:
        size = min(walk.wanted - len(feasible), count - processed)
        begin = walk.start + processed
        batch = window(nodes, begin, size)
        verdicts = memory.read(begin, size)
        erred_at = _judge_unknown(framework, memory, checks, state, pod, batch, verdicts, screen)
        if erred_at is not None:
            _record(decision, batch[:erred_at], verdicts[:erred_at], [])
            predicate, status = verdicts[erred_at]
            decision.fail(f'running "{predicate.plugin.name}" filter plugin: {status.message}')
            decision.evaluated_nodes.extend(window(nodes, walk.start, processed + erred_at + 1))
            return processed + erred_at + 1, screened
        ruled_out = verdicts.count(SCREENED) if screen is not None else 0
        if ruled_out:
            screened += ruled_out
            memory.keep(begin, [UNKNOWN if v is SCREENED else v for v in verdicts])
        else:
            memory.keep(begin, verdicts)
        processed += size
        if verdicts.count(None) == size:
            feasible.extend(batch)
        else:
            whole = False
            _record(decision, batch, verdicts, feasible)
    decision.evaluated_nodes.extend(window(nodes, walk.start, processed))
    decision.feasible = feasible
    if whole:
        decision.feasible_window = (nodes, feasible, walk.start)
    return processed, screened


def _judge_unknown(
    framework: Framework,
    memory: KeptVerdicts,
    checks: list[Check],
    state: CycleState,
    pod: Pod,
    batch: list[NodeInfo],
    verdicts: list[Any],
    screen: Screen | None,
) -> int | None:
    """Fill in the batch's UNKNOWN verdicts in walk order: a rejection, None for a fit,
    or the exception a node could not be read with (a damaged stored object: passed
    over, named in the decision, and the walk goes on). The nodes with a kept verdict
    are found by list.index (in C), never walked in Python. Returns the index of the
    first node whose filter erred (the walk ends there), else None."""
    if screen is not None:
        verdicts[:] = [
            SCREENED if verdict is UNKNOWN and info.name not in screen else verdict
            for verdict, info in zip(verdicts, batch, strict=True)
        ]
    index = -1
    while True:
        try:
            index = verdicts.index(UNKNOWN, index + 1)
        except ValueError:
            return None
        info = batch[index]
        try:
            verdict: Any = framework.run_filter_plugins_with_nominated_pods(
                checks, state, pod, info
            )
        except Exception as exc:
            verdict = exc
        verdicts[index] = verdict
        memory.judged(info, verdict)
        if isinstance(verdict, tuple) and verdict[1].code is Code.ERROR:
            return index


def _record(
    decision: Decision, batch: list[NodeInfo], verdicts: list[Any], feasible: list[NodeInfo]
) -> None:
    """The judged batch into the decision, in walk order: fits into ``feasible``,
    rejections and unreadable nodes as the reasons of each."""
    for info, verdict in zip(batch, verdicts, strict=True):
        if verdict is None:
            feasible.append(info)
        elif verdict is SCREENED:
            continue
        elif isinstance(verdict, Exception):
            decision.pass_over(info.name, verdict)
        else:
            decision.reject(info.name, *verdict)
