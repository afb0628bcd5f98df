"""HostName."""

from __future__ import annotations

import pytest

from tests.support import cluster, node, parse, pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.status import Code
from volsched.scheduling.plugins.node_name import NodeName


@pytest.mark.parametrize(
    ("node_name", "fits"),
    [
        pytest.param(None, True, id="no node name"),
        pytest.param("n1", True, id="this node"),
        pytest.param("n2", False, id="another node"),
    ],
)
def test_node_name(node_name: str | None, fits: bool) -> None:
    cache = cluster(node("n1"), node("n2"))
    # Parsed directly: a pod with spec.nodeName is already placed in the cache.
    incoming = parse(pod("p", node_name=node_name))
    status = NodeName(cache).filter(CycleState(), incoming, cache.nodes["n1"])
    if fits:
        assert status is None
    else:
        assert status is not None
        assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == ("node(s) didn't match the requested node name",)
