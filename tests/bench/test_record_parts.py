"""The recorder's reading of kube-scheduler's log for a pod a PreEnqueue plugin holds
(kube-scheduler writes nothing to the pod or its events then)."""

from __future__ import annotations

from bench.oracle.record import pre_enqueue_hold

LOG = (
    'I1128 23:42:20.797873   30897 framework.go:502] "the scheduler starts to work"\n'
    'I1128 23:42:20.854837   30897 scheduling_queue.go:654] "Status after running PreEnqueue '
    'plugin" pod="shop/gpu-job" plugin="DynamicResources" '
    'status="could not find ResourceClaim \\"shop/a-gpu\\""\n'
    'I1128 23:42:21.000000   30897 scheduling_queue.go:654] "Status after running PreEnqueue '
    'plugin" pod="shop/other" plugin="SchedulingGates" status="waiting for scheduling gates: '
    '[example.com/quota]"\n'
)


def test_the_hold_of_each_pod_is_read_with_its_quotes_unescaped() -> None:
    assert pre_enqueue_hold(LOG, "shop/gpu-job") == (
        "DynamicResources",
        'could not find ResourceClaim "shop/a-gpu"',
    )
    assert pre_enqueue_hold(LOG, "shop/other") == (
        "SchedulingGates",
        "waiting for scheduling gates: [example.com/quota]",
    )
    assert pre_enqueue_hold(LOG, "shop/absent") is None
