"""The assume layer follows kube-scheduler's AssumeCache rules."""

from __future__ import annotations

import dataclasses

import pytest

from tests.support import parse, pv
from volsched.cache.assumed import AssumeCache, AssumeError
from volsched.cache.objects.storage import PersistentVolume


def version(obj: PersistentVolume, rv: int) -> PersistentVolume:
    return dataclasses.replace(obj, meta=dataclasses.replace(obj.meta, resource_version=rv))


def make(rv: int, phase: str = "Available") -> PersistentVolume:
    return version(parse(pv("pv-1", "1Gi", phase=phase)), rv)


def test_assume_on_top_of_the_informer_copy_and_restore() -> None:
    cache: AssumeCache[PersistentVolume] = AssumeCache("PersistentVolume")
    cache.informer_upsert("pv-1", make(5))
    cache.assume("pv-1", make(5, "Bound"))
    assert cache.get("pv-1").phase == "Bound"  # type: ignore[union-attr]
    assert cache.is_assumed("pv-1")
    cache.restore("pv-1")
    assert cache.get("pv-1").phase == "Available"  # type: ignore[union-attr]
    assert not cache.is_assumed("pv-1")


def test_assume_rejects_unknown_and_older() -> None:
    cache: AssumeCache[PersistentVolume] = AssumeCache("PersistentVolume")
    with pytest.raises(AssumeError, match="not found"):
        cache.assume("pv-1", make(1))
    cache.informer_upsert("pv-1", make(5))
    with pytest.raises(AssumeError, match=r"out of sync \(stored: 5, assume: 4\)"):
        cache.assume("pv-1", make(4))
    cache.assume("pv-1", make(6, "Bound"))


@pytest.mark.parametrize(("informer_rv", "replaced"), [(5, False), (4, False), (6, True)])
def test_informer_update_replaces_only_when_strictly_newer(
    informer_rv: int, replaced: bool
) -> None:
    cache: AssumeCache[PersistentVolume] = AssumeCache("PersistentVolume")
    cache.informer_upsert("pv-1", make(5))
    cache.assume("pv-1", make(5, "Bound"))
    cache.informer_upsert("pv-1", make(informer_rv, "Released"))
    expected = "Released" if replaced else "Bound"
    assert cache.get("pv-1").phase == expected  # type: ignore[union-attr]


def test_restore_unknown_key_is_a_no_op() -> None:
    cache: AssumeCache[PersistentVolume] = AssumeCache("PersistentVolume")
    cache.restore("missing")
    assert len(cache) == 0


def test_delete_removes_both_copies() -> None:
    cache: AssumeCache[PersistentVolume] = AssumeCache("PersistentVolume")
    cache.informer_upsert("pv-1", make(5))
    cache.assume("pv-1", make(5, "Bound"))
    cache.informer_delete("pv-1")
    assert cache.get("pv-1") is None and cache.get_api("pv-1") is None


def test_assumed_pods_expire_when_their_binding_is_never_confirmed() -> None:
    from tests.support import cluster, node, pod

    cache = cluster(node("n1"), pod("p", cpu="1"))
    view = cache.pending["default/p"]
    cache.assume_pod(view, "n1")
    cache.finish_binding("default/p", expires_at=100.0)
    assert cache.expire_assumed(99.0) == []
    assert "default/p" in cache.nodes["n1"].pods
    assert cache.expire_assumed(100.0) == [("default/p", "n1")]
    assert "default/p" not in cache.nodes["n1"].pods
    assert "default/p" in cache.pending


def test_a_confirmed_binding_does_not_expire() -> None:
    import dataclasses

    from tests.support import cluster, node, pod

    cache = cluster(node("n1"), pod("p", cpu="1"))
    view = cache.pending["default/p"]
    cache.assume_pod(view, "n1")
    cache.finish_binding("default/p", expires_at=100.0)
    cache.upsert("Pod", dataclasses.replace(view, node_name="n1"))
    assert cache.expire_assumed(1000.0) == []
    assert "default/p" in cache.nodes["n1"].pods
