"""A pod shape's keys, the filters' first rejection, and the score rows kept per node.

When every filter a pod meets is node-local, the pod's keys name its shape, and what
the plugins said of a node is kept under them until the node changes
(docs/concepts/kept-verdicts.md says why and what never is).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

from volsched.cache.node_info import NodeInfo
from volsched.cache.objects.core import Pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.profile import Predicate, Profile, ScoreStep
from volsched.scheduling.framework.status import Status

FilterCall = Callable[[CycleState, Pod, NodeInfo], "Status | None"]
Check = tuple[FilterCall, Predicate]
# The first rejecting predicate and its status, or None when every filter passes.
Rejection = tuple[Predicate, Status] | None
# Distinct pod shapes whose memo keys are kept (process-wide, as the nodes' memos are
# shared by every profile). A key holds the plugin instances it was made for, so an
# instance a reload replaced is never mistaken for the one built after it.
TOKEN_LIMIT = 4096
_TOKENS: dict[tuple[Hashable, ...], _Token] = {}


def active_checks(profile: Profile, state: CycleState) -> list[Check]:
    """The filters this cycle runs, in order: those whose PreFilter did not skip."""
    skipped = state.skip_filter
    return [(p.plugin.filter, p) for p in profile.predicates if p.plugin.name not in skipped]


def filter_key(profile: Profile, state: CycleState, pod: Pod) -> Hashable | None:
    """The key the pod's combined verdict is kept under, or None when some filter it
    meets is not node-local (or declines for this pod)."""
    parts: list[Hashable] = ["Filter"]
    skipped = state.skip_filter
    for predicate, key_of in zip(profile.predicates, profile.filter_keys, strict=True):
        plugin = predicate.plugin
        if plugin.name in skipped:
            continue
        if key_of is None:
            return None
        key = _asked(key_of, state, pod)
        if key is None:
            return None
        # The plugin itself, not its name: two profiles' instances may be configured
        # apart (NodeAffinity's addedAffinity) and judge one pod differently.
        parts.append((plugin, key))
    return _token(tuple(parts))


def first_rejection(
    checks: Sequence[Check], state: CycleState, pod: Pod, node: NodeInfo
) -> Rejection:
    for check, predicate in checks:
        status = check(state, pod, node)
        if status is not None:
            return predicate, status
    return None


def score_key(steps: Sequence[ScoreStep], state: CycleState, pod: Pod) -> Hashable | None:
    """The key of the score rows of ``steps`` (each node-local), or None. The weights
    are part of it: a row holds the weighted sum of its plain scores."""
    parts: list[Hashable] = ["Score"]
    for step in steps:
        if step.score_key is None:
            return None
        key = _asked(step.score_key, state, pod)
        if key is None:
            return None
        parts.append((step.priority.plugin, step.priority.weight, key))
    return _token(tuple(parts))


def score_rows(
    key: Hashable,
    steps: Sequence[ScoreStep],
    state: CycleState,
    pod: Pod,
    nodes: list[NodeInfo],
    known: list[tuple[int, ...] | None] | None = None,
) -> list[tuple[int, ...]]:
    """Each node's row for ``steps``: first the weighted sum of the steps that are not
    normalized, then every step's raw score, in order. A node's row is computed only
    when its memo (or ``known``, the rows already read for ``nodes``) has none for
    ``key``."""
    rows = [node.memo.get(key) for node in nodes] if known is None else known
    # The few nodes that changed since, found by list.index (in C), not by a walk.
    index = -1
    while None in rows:
        index = rows.index(None, index + 1)
        node = nodes[index]
        rows[index] = node.remember(key, _row(steps, state, pod, node))
    return rows  # type: ignore[return-value]  # no None is left


def _row(
    steps: Sequence[ScoreStep], state: CycleState, pod: Pod, node: NodeInfo
) -> tuple[int, ...]:
    raw = [_one_score(step, state, pod, node) for step in steps]
    plain = sum(
        value * step.priority.weight
        for step, value in zip(steps, raw, strict=True)
        if step.normalize is None and step.normalize_list is None
    )
    return (plain, *raw)


def _one_score(step: ScoreStep, state: CycleState, pod: Pod, node: NodeInfo) -> int:
    if step.score_nodes is not None:
        return step.score_nodes(state, pod, [node])[0]
    return step.priority.plugin.score(state, pod, node)


def _token(key: tuple[Hashable, ...]) -> Hashable | None:
    """The memo key for ``key``: one object per distinct key, so that each of the
    cycle's node lookups hashes and compares by identity, where the tuple would hash
    its parts (dataclasses among them) on every lookup. A key holding something
    unhashable (a plugin's list) keeps nothing: the cycle asks the plugins, as it
    would without a memo."""
    try:
        token = _TOKENS.get(key)
    except TypeError:
        return None
    if token is None:
        if len(_TOKENS) >= TOKEN_LIMIT:
            # Forgotten keys only cost a recomputation: the nodes' memos are bounded.
            _TOKENS.clear()
        token = _TOKENS[key] = _Token(key[0])
    return token


class _Token:
    """Hashes and compares by identity (object's)."""

    __slots__ = ("kind",)

    def __init__(self, kind: Hashable) -> None:
        self.kind = kind

    def __repr__(self) -> str:
        return f"<{self.kind} memo key>"


def _asked(
    key_of: Callable[[CycleState, Pod], Hashable | None], state: CycleState, pod: Pod
) -> Hashable | None:
    """A pod the plugin cannot read gets no memo: its filter or score then fails node by
    node, as it does without one, and says so in the decision."""
    try:
        return key_of(state, pod)
    except Exception:
        return None
