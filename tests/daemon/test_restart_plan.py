"""Which proof a warm start uses for each resumed kind: relist it at once, check it by a
metadata list, or wait for its watch's bookmark — by the kind's size and how long its
catch-up watch has been open."""

from __future__ import annotations

import pytest

from volsched.daemon.watch.restart_plan import (
    Proof,
    ProofCosts,
    bookmark_wait_left,
    plan_proofs,
    proof_for,
)

COSTS = ProofCosts(
    request_seconds=0.01,
    relist_seconds_per_object=100e-6,
    metadata_seconds_per_object=20e-6,
    page_size=500,
    metadata_page_size=5000,
    bookmark_window_seconds=2.25,
)


@pytest.mark.parametrize(
    ("objects", "waited", "proof"),
    [
        # Empty and small kinds relist in a round trip or two: at once.
        (0, 0.0, Proof.RELIST),
        (3, 0.1, Proof.RELIST),
        (1000, 0.1, Proof.RELIST),  # 0.12 s against 2.15 s left
        # 20,000 objects: relisting (2.4 s) is slower than the whole window, the
        # metadata list (0.44 s) is not.
        (20_000, 0.1, Proof.METADATA),
        # A load that took 1.9 s leaves 0.35 s: too little for 20,000 objects' metadata.
        (20_000, 1.9, Proof.BOOKMARK),
        # but still enough to relist 1,000.
        (1000, 1.9, Proof.RELIST),
        # 200,000 objects: even their metadata (4.4 s) outlasts the window.
        (200_000, 0.0, Proof.BOOKMARK),
        # The window is over (a long load, or a bookmark that never came): wait no more
        # — the metadata check is the backstop (see proving).
        (5, 3.0, Proof.BOOKMARK),
    ],
)
def test_the_proof_each_resumed_kind_uses(objects: int, waited: float, proof: Proof) -> None:
    assert proof_for(objects, waited, COSTS) is proof


@pytest.mark.parametrize(
    ("objects", "relist", "metadata"),
    [
        (0, 0.01, 0.01),
        (500, 0.06, 0.02),
        (501, 0.0701, 0.02002),
        (10_000, 1.2, 0.22),
    ],
)
def test_what_each_proof_costs(objects: int, relist: float, metadata: float) -> None:
    assert COSTS.relist_seconds(objects) == pytest.approx(relist)
    assert COSTS.metadata_seconds(objects) == pytest.approx(metadata)


@pytest.mark.parametrize(("waited", "left"), [(0.0, 2.25), (1.0, 1.25), (2.25, 0.0), (9.0, 0.0)])
def test_what_is_left_of_the_bookmarks_window(waited: float, left: float) -> None:
    assert bookmark_wait_left(COSTS, waited) == pytest.approx(left)


@pytest.mark.parametrize(
    ("sizes", "waited", "plan"),
    [
        # Alone, each would relist in the window; after the class (0.01 s) and the nodes
        # (0.6 s), 1.64 s are left: too little to relist 20,000 pods (2.4 s), enough to
        # check them (0.44 s).
        (
            {"StorageClass": 3, "Node": 5000, "Pod": 20_000},
            0.0,
            {"StorageClass": Proof.RELIST, "Node": Proof.RELIST, "Pod": Proof.METADATA},
        ),
        # Ties in size are planned by name, so a plan is the same from run to run.
        (
            {"b": 12_000, "a": 12_000},
            0.0,
            {"a": Proof.RELIST, "b": Proof.METADATA},
        ),
        # 50,000 PVs after relisting 5,000 nodes and 5,000 pods (1.2 s of the 1.75 s
        # left): even their metadata (1.1 s) no longer fits; they wait.
        (
            {"Node": 5000, "Pod": 5000, "PersistentVolume": 50_000},
            0.5,
            {"Node": Proof.RELIST, "Pod": Proof.RELIST, "PersistentVolume": Proof.BOOKMARK},
        ),
        # Nothing left of the window: every kind waits (with the backstop).
        ({"Node": 3}, 2.5, {"Node": Proof.BOOKMARK}),
        ({}, 0.0, {}),
    ],
)
def test_the_proofs_of_all_resumed_kinds_share_the_wait(
    sizes: dict[str, int], waited: float, plan: dict[str, Proof]
) -> None:
    assert plan_proofs(sizes, waited, COSTS) == plan
