"""DynamicResources: a pod with ResourceClaims is left pending with one reason; any
other pod is skipped by the plugin, as upstream's PreFilter skips it."""

from __future__ import annotations

from typing import Any

import pytest

from volsched.cache.cluster import ClusterCache
from volsched.cache.objects.core import parse_pod
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.status import Code
from volsched.scheduling.plugins.dynamic_resources import REASON, DynamicResources


def pod(spec: dict[str, Any]) -> Any:
    return parse_pod(
        {"kind": "Pod", "metadata": {"name": "p", "namespace": "ns", "uid": "u"}, "spec": spec}
    )


@pytest.mark.parametrize(
    ("spec", "code"),
    [
        ({"containers": [{"name": "c"}]}, Code.SKIP),
        ({"containers": [{"name": "c"}], "resourceClaims": []}, Code.SKIP),
        (
            {
                "containers": [{"name": "c", "resources": {"claims": [{"name": "gpu"}]}}],
                "resourceClaims": [{"name": "gpu", "resourceClaimName": "a-gpu"}],
            },
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ),
        (
            {
                "containers": [{"name": "c"}],
                "resourceClaims": [{"name": "t", "resourceClaimTemplateName": "gpu-template"}],
            },
            Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
        ),
    ],
    ids=["no claims", "an empty list", "a named claim", "a claim from a template"],
)
def test_only_pods_with_claims_are_turned_away(spec: dict[str, Any], code: Code) -> None:
    plugin = DynamicResources(ClusterCache())
    _, status = plugin.pre_filter(CycleState(), pod(spec))
    assert status.code is code
    if code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE:
        assert status.message == REASON
    assert plugin.events_to_register() == ()
