"""The write-behind queue's bookkeeping, without a database."""

from __future__ import annotations

from volsched.cache.store.pending import PendingWrites


def test_the_latest_write_per_key_is_kept_and_counted_once() -> None:
    pending = PendingWrites()
    pending.set_object("Pod", "ns/a", "1")
    pending.set_object("Pod", "ns/a", "2")
    pending.set_object("Pod", "ns/b", None)
    pending.set_assumed("Pod", "ns/a", "x")
    pending.set_resume_point("Pod", "5")
    pending.set_resume_point("Pod", "6")
    assert len(pending) == 4
    assert pending.objects == {"Pod": {"ns/a": "2", "ns/b": None}}
    assert pending.resume_points == {"Pod": "6"}


def test_a_relist_supersedes_queued_writes_of_its_kind_only() -> None:
    pending = PendingWrites()
    pending.set_object("Node", "n1", "old")
    pending.set_object("Pod", "ns/a", "kept")
    pending.replace_kind("Node", {"n2": {}, "n3": {}}, "9")
    assert pending.objects == {"Pod": {"ns/a": "kept"}}
    assert len(pending) == 1 + 2 + 1
    pending.replace_kind("Node", {"n4": {}}, "10")
    assert len(pending) == 1 + 1 + 1
    assert pending.resume_points == {"Node": "10"}


def test_take_leaves_the_queue_empty() -> None:
    pending = PendingWrites()
    pending.set_object("Pod", "ns/a", "1")
    pending.replace_kind("Node", {"n": {}}, "1")
    batch = pending.take()
    assert len(batch) == 3 and len(pending) == 0
    assert not pending.objects and not pending.replaced and not pending.resume_points


def test_a_failed_batch_goes_back_beneath_newer_writes() -> None:
    pending = PendingWrites()
    pending.set_object("Pod", "ns/a", "old a")
    pending.set_object("Pod", "ns/b", "old b")
    pending.set_assumed("PersistentVolume", "pv", "assumed")
    pending.replace_kind("Node", {"n1": {}}, "3")
    pending.set_object("Node", "n2", "after relist")
    pending.set_resume_point("Pod", "10")
    batch = pending.take()

    pending.set_object("Pod", "ns/a", None)
    pending.set_resume_point("Pod", "11")
    pending.restore(batch)

    assert pending.objects == {
        "Pod": {"ns/a": None, "ns/b": "old b"},
        "Node": {"n2": "after relist"},
    }
    assert pending.assumed == {"PersistentVolume": {"pv": "assumed"}}
    assert pending.replaced == {"Node": {"n1": {}}}
    assert pending.resume_points == {"Pod": "11", "Node": "3"}
    assert len(pending) == 2 + 1 + 1 + 1 + 2


def test_a_newer_relist_wins_over_a_failed_batch_of_its_kind() -> None:
    pending = PendingWrites()
    pending.replace_kind("Node", {"old": {}}, "3")
    pending.set_object("Node", "n9", "written after the old relist")
    batch = pending.take()

    pending.replace_kind("Node", {"new": {}}, "4")
    pending.restore(batch)

    assert pending.replaced == {"Node": {"new": {}}}
    assert pending.objects == {}
    assert pending.resume_points == {"Node": "4"}
    assert len(pending) == 2
