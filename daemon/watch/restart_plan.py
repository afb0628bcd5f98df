"""How a warm start proves each resumed kind current: relist it, check it, or wait.

A stored kind is only a head start: before anything is decided, each kind must be shown
to hold the API server's state as of the start (the catch-up target). Three proofs:

- **relist** — list the kind and replace it: always right, costs the whole kind.
- **metadata check** — list the kind as ``PartialObjectMetadataList`` (names and
  resourceVersions, a fraction of the bytes) and compare with the cache. A
  resourceVersion names one write of one object, so when the cache holds exactly the
  listed keys at exactly the listed resourceVersions it holds the kind as of the list's
  resourceVersion, which is at or past the target: proven. Any difference (a change the
  watch has not yet brought) proves nothing, and the kind waits for its watch.
- **bookmark** — the resumed watch's events and then a bookmark at or past the target.
  Free, but kube-apiserver sends a 3 s catch-up watch its bookmark only when its cacher's
  one-second bucket is popped (within about 2.25 s), and not at all while that cacher's
  resourceVersion lags (a kind nobody writes, without progress notifications).

A list with ``limit=1`` returns the whole store's current resourceVersion (etcd's
revision, the same for every kind): it names the target, but says nothing about which
objects the kind holds, so it proves nothing on its own.

``proof_for`` picks per kind from its size and what is left of the bookmark's wait:
relist a kind that relists sooner than the bookmark can come, check one whose metadata
list is that quick, and otherwise wait — with the metadata check as the backstop when
the bookmark has not come by the end of its window. The proofs of all kinds share one
event loop, so ``plan_proofs`` charges each kind's proof to the time left for the next:
the smallest kinds first, until relisting or checking one more would outlast the wait.
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass


class Proof(enum.Enum):
    RELIST = "relist"
    METADATA = "metadata"
    BOOKMARK = "bookmark"


@dataclass(frozen=True, slots=True)
class ProofCosts:
    """What each proof costs this daemon, measured against the emulator over loopback
    (``python -m bench warm-restart``): a real control plane answers lists no faster."""

    # One list request's round trip, per page.
    request_seconds: float = 0.01
    # Fetching, parsing and applying one object of a full list.
    relist_seconds_per_object: float = 120e-6
    # Fetching and comparing one object's metadata.
    metadata_seconds_per_object: float = 20e-6
    page_size: int = 500
    metadata_page_size: int = 10_000
    # kube-apiserver's latest bookmark for a catch-up watch of CATCH_UP_WATCH_SECONDS
    # (3 s): due a second in, popped up to 1.25 s after that second's bucket opens.
    bookmark_window_seconds: float = 2.25

    def relist_seconds(self, objects: int) -> float:
        pages = max(1, math.ceil(objects / self.page_size))
        return pages * self.request_seconds + objects * self.relist_seconds_per_object

    def metadata_seconds(self, objects: int) -> float:
        pages = max(1, math.ceil(objects / self.metadata_page_size))
        return pages * self.request_seconds + objects * self.metadata_seconds_per_object


def bookmark_wait_left(costs: ProofCosts, waited_seconds: float) -> float:
    """How much longer the bookmark may take, the watch having been open this long."""
    return max(0.0, costs.bookmark_window_seconds - waited_seconds)


def proof_for(objects: int, waited_seconds: float, costs: ProofCosts) -> Proof:
    """The quickest proof for a resumed kind of ``objects`` objects whose catch-up watch
    has been open ``waited_seconds``."""
    left = bookmark_wait_left(costs, waited_seconds)
    if costs.relist_seconds(objects) <= left:
        return Proof.RELIST
    if costs.metadata_seconds(objects) <= left:
        return Proof.METADATA
    return Proof.BOOKMARK


def plan_proofs(
    objects_by_kind: Mapping[str, int], waited_seconds: float, costs: ProofCosts
) -> dict[str, Proof]:
    """``proof_for`` for every resumed kind at once, smallest first, each proof's cost
    taken from the time left for the kinds after it (they run on one event loop)."""
    plan: dict[str, Proof] = {}
    busy = 0.0
    for kind, objects in sorted(objects_by_kind.items(), key=lambda item: (item[1], item[0])):
        proof = proof_for(objects, waited_seconds + busy, costs)
        if proof is Proof.RELIST:
            busy += costs.relist_seconds(objects)
        elif proof is Proof.METADATA:
            busy += costs.metadata_seconds(objects)
        plan[kind] = proof
    return plan
