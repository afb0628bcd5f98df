"""NoDiskConflict (VolumeRestrictions), with upstream's disk tables
(volume_restrictions_test.go) and its ReadWriteOncePod checks."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support import cluster, node, parse, pod, pvc
from volsched.scheduling.framework.cycle_state import CycleState
from volsched.scheduling.framework.status import Code, Status
from volsched.scheduling.plugins.volume_restrictions import VolumeRestrictions

Raw = dict[str, Any]
DISK_REASON = "node(s) had no available disk"
RWOP_REASON = (
    "node(s) unavailable due to PersistentVolumeClaim with ReadWriteOncePod access mode"
    " already in-use by another pod"
)


def gce(name: str, read_only: bool = False) -> Raw:
    return {"name": "v", "gcePersistentDisk": {"pdName": name, "readOnly": read_only}}


def aws(volume_id: str, read_only: bool = False) -> Raw:
    return {"name": "v", "awsElasticBlockStore": {"volumeID": volume_id, "readOnly": read_only}}


def iscsi(iqn: str, read_only: bool = False) -> Raw:
    return {
        "name": "v",
        "iscsi": {"targetPortal": "127.0.0.1:3260", "iqn": iqn, "lun": 0, "readOnly": read_only},
    }


def rbd(monitors: list[str], image: str, pool: str | None = None, read_only: bool = False) -> Raw:
    source: Raw = {"monitors": monitors, "image": image, "readOnly": read_only}
    if pool is not None:
        source["pool"] = pool
    return {"name": "v", "rbd": source}


def with_volumes(*volumes: Raw) -> Raw:
    return {"volumes": [{**volume, "name": f"v{index}"} for index, volume in enumerate(volumes)]}


def run(objects: list[Raw], incoming: Raw, node_name: str = "n1") -> tuple[Status, Status | None]:
    cache = cluster(node("n1"), node("n2"), *objects)
    plugin = VolumeRestrictions(cache)
    state = CycleState()
    _, pre = plugin.pre_filter(state, parse(incoming))
    if pre.code is not Code.SUCCESS:
        return pre, None
    return pre, plugin.filter(state, parse(incoming), cache.nodes[node_name])


@pytest.mark.parametrize(
    ("existing", "wanted", "fits"),
    [
        pytest.param([gce("foo")], [gce("foo")], False, id="gce: same disk"),
        pytest.param([gce("foo")], [gce("bar")], True, id="gce: other disk"),
        pytest.param([gce("foo", True)], [gce("foo", True)], True, id="gce: both read-only"),
        pytest.param([gce("foo", True)], [gce("foo")], False, id="gce: one read-write"),
        pytest.param([aws("foo")], [aws("foo")], False, id="aws: same volume"),
        pytest.param([aws("foo", True)], [aws("foo", True)], False, id="aws: read-only too"),
        pytest.param([aws("foo")], [aws("bar")], True, id="aws: other volume"),
        pytest.param([iscsi("iqn.a")], [iscsi("iqn.a")], False, id="iscsi: same iqn"),
        pytest.param([iscsi("iqn.a")], [iscsi("iqn.b")], True, id="iscsi: other iqn"),
        pytest.param(
            [iscsi("iqn.a", True)], [iscsi("iqn.a", True)], True, id="iscsi: both read-only"
        ),
        pytest.param(
            [rbd(["a", "b"], "foo")], [rbd(["b", "c"], "foo")], False, id="rbd: a monitor in common"
        ),
        pytest.param(
            [rbd(["a", "b"], "foo")], [rbd(["c", "d"], "foo")], True, id="rbd: no monitor in common"
        ),
        pytest.param(
            [rbd(["a"], "foo", pool="p1")],
            [rbd(["a"], "foo", pool="p2")],
            True,
            id="rbd: other pool",
        ),
        pytest.param(
            [rbd(["a"], "foo", pool="rbd")], [rbd(["a"], "foo")], False, id="rbd: default pool"
        ),
        pytest.param([rbd(["a"], "foo")], [rbd(["a"], "bar")], True, id="rbd: other image"),
        pytest.param(
            [rbd(["a"], "foo", read_only=True)],
            [rbd(["a"], "foo", read_only=True)],
            True,
            id="rbd: both read-only",
        ),
        pytest.param([rbd([], "foo")], [rbd([], "foo")], True, id="rbd: no monitors at all"),
        pytest.param([gce("foo")], [aws("foo")], True, id="different kinds never conflict"),
        pytest.param(
            [gce("x"), aws("y")], [iscsi("iqn.z"), aws("y")], False, id="any volume conflicts"
        ),
    ],
)
def test_disk_conflicts(existing: list[Raw], wanted: list[Raw], fits: bool) -> None:
    placed = pod("e0", node_name="n1", spec=with_volumes(*existing))
    pre, status = run([placed], pod("p", spec=with_volumes(*wanted)))
    assert pre.code is Code.SUCCESS
    if fits:
        assert status is None
    else:
        assert status is not None
        assert status.code is Code.UNSCHEDULABLE
        assert status.reasons == (DISK_REASON,)


def test_disks_on_other_nodes_do_not_conflict() -> None:
    placed = pod("e0", node_name="n2", spec=with_volumes(gce("foo")))
    pre, status = run([placed], pod("p", spec=with_volumes(gce("foo"))))
    assert pre.code is Code.SUCCESS
    assert status is None


def test_filter_without_pre_filter() -> None:
    cache = cluster(node("n1"), pod("e0", node_name="n1", spec=with_volumes(aws("vol"))))
    incoming = parse(pod("p", spec=with_volumes(aws("vol"))))
    status = VolumeRestrictions(cache).filter(CycleState(), incoming, cache.nodes["n1"])
    assert status is not None
    assert status.reasons == (DISK_REASON,)


def test_pod_without_disks_or_exclusive_claims_skips() -> None:
    objects = [pvc("data", access_modes=("ReadWriteOnce",))]
    pre, _ = run(objects, pod("p", claims=["data"]))
    assert pre.code is Code.SKIP


@pytest.mark.parametrize(
    ("users", "node_name", "fits"),
    [
        pytest.param([], "n1", None, id="claim unused: skip"),
        pytest.param(["n1"], "n1", False, id="claim used on this node"),
        pytest.param(["n2"], "n1", False, id="claim used on another node"),
    ],
)
def test_read_write_once_pod(users: list[str], node_name: str, fits: bool | None) -> None:
    objects = [pvc("data", access_modes=("ReadWriteOncePod",))]
    objects += [pod(f"u{i}", node_name=where, claims=["data"]) for i, where in enumerate(users)]
    pre, status = run(objects, pod("p", claims=["data"]), node_name)
    if fits is None:
        assert pre.code is Code.SKIP
        return
    assert pre.code is Code.SUCCESS
    assert status is not None
    assert status.code is Code.UNSCHEDULABLE
    assert status.reasons == (RWOP_REASON,)


def test_read_write_once_pod_claim_of_another_namespace_is_not_in_use() -> None:
    objects = [
        pvc("data", access_modes=("ReadWriteOncePod",)),
        pvc("data", namespace="other", access_modes=("ReadWriteOncePod",)),
        pod("u0", namespace="other", node_name="n1", claims=["data"]),
    ]
    pre, _ = run(objects, pod("p", claims=["data"]))
    assert pre.code is Code.SKIP


def test_missing_claim_is_unresolvable() -> None:
    pre, _ = run([], pod("p", claims=["ghost"]))
    assert pre.code is Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert pre.reasons == ('persistentvolumeclaim "ghost" not found',)


def test_generic_ephemeral_volumes_are_not_read() -> None:
    spec = {"volumes": [{"name": "scratch", "ephemeral": {"volumeClaimTemplate": {"spec": {}}}}]}
    pre, _ = run([], pod("p", spec=spec))
    assert pre.code is Code.SKIP
