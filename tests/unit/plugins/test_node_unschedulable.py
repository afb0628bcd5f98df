"""CheckNodeUnschedulable."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import cluster, node, parse, pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.status import Code
from volsched.scheduling.plugins.node_unschedulable import NodeUnschedulable

TOLERATES_UNSCHEDULABLE = {
    "key": "node.kubernetes.io/unschedulable",
    "operator": "Exists",
    "effect": "NoSchedule",
}


@pytest.mark.parametrize(
    ("unschedulable", "tolerations", "fits"),
    [
        pytest.param(False, [], True, id="schedulable node"),
        pytest.param(True, [], False, id="cordoned node"),
        pytest.param(True, [TOLERATES_UNSCHEDULABLE], True, id="pod tolerates the cordon"),
        pytest.param(True, [{"operator": "Exists"}], True, id="pod tolerates everything"),
        pytest.param(
            True,
            [
                {
                    "key": "node.kubernetes.io/unschedulable",
                    "operator": "Exists",
                    "effect": "NoExecute",
                }
            ],
            False,
            id="toleration for another effect",
        ),
        pytest.param(
            True,
            [{"key": "node.kubernetes.io/unschedulable", "value": "true", "effect": "NoSchedule"}],
            False,
            id="toleration expecting a value the taint does not have",
        ),
    ],
)
def test_node_unschedulable(
    unschedulable: bool, tolerations: list[dict[str, Any]], fits: bool
) -> None:
    cache = cluster(node("n1", unschedulable=unschedulable))
    incoming = parse(pod("p", spec={"tolerations": tolerations}))
    status = NodeUnschedulable(cache).filter(CycleState(), incoming, cache.nodes["n1"])
    if fits:
        assert status is None
    else:
        assert status is not None
        assert status.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
        assert status.reasons == ("node(s) were unschedulable",)
