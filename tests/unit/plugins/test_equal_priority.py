"""EqualPriority."""

from __future__ import annotations

from tests.support import cluster, node, parse, pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.plugins.equal_priority import EqualPriority


def test_every_node_scores_one() -> None:
    cache = cluster(node("n1"), node("n2", cpu="64", labels={"fast": "yes"}))
    plugin = EqualPriority(cache)
    incoming = parse(pod("p", cpu="1"))
    assert [plugin.score(CycleState(), incoming, info) for info in cache.nodes.values()] == [1, 1]
