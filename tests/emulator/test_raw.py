"""``clone``: every write's copy of a stored object shares nothing mutable with it."""

from __future__ import annotations

from volsched.emulator.raw import clone


def test_a_clone_shares_no_dict_or_list_with_its_original() -> None:
    original = {
        "metadata": {"name": "p", "labels": {"app": "db"}},
        "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 80}]}]},
        "status": {"replicas": 1, "ready": True, "ratio": 0.5, "phase": None},
    }
    copied = clone(original)
    assert copied == original
    copied["metadata"]["labels"]["app"] = "web"
    copied["spec"]["containers"][0]["ports"].append({"containerPort": 443})
    assert original["metadata"]["labels"] == {"app": "db"}
    assert original["spec"]["containers"][0]["ports"] == [{"containerPort": 80}]


def test_what_is_not_json_is_still_copied_deeply() -> None:
    nested = {"set": {1, 2}}
    copied = clone({"odd": (nested,)})
    assert copied == {"odd": (nested,)}
    assert copied["odd"][0] is not nested
