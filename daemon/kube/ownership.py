"""Who in volsched may write what: each kind has one owner, checked at the API client.

volsched writes its own ``volsched.io`` objects and the fields of core objects that
binding needs; leader election writes its Lease; authentication asks the API server
about callers. Nothing else writes, and nothing in volsched writes another system's
objects (Longhorn's ``longhorn.io`` kinds are longhorn-manager's alone). The daemon hands
each part a client scoped to its writer (``KubeClient.for_writer``), or a read-only one,
so a write outside the table is refused before any request is sent — a bug found by the
tests, not by an operator's etcd.

The writes of decisions are the leader's alone: the binding writer's client is also
given the elector's word, and once the lease is lost it sends nothing more — no binding,
eviction, event or undo of the old leader's reaches the API server after a standby may
have taken over (kube-scheduler exits instead; what the old leader left half done is
finished by the new leader's recovery, from the intents written into the objects).

A client that is not scoped (``KubeClient.connect``) belongs to a person's tools — the
demo's arrivals, the benchmarks — and may write anything but another system's objects.

Shadow mode (``volsched run --shadow``) decides pods beside another scheduler and writes
nothing: its root client (``KubeClient.shadow``) hands every writer a read-only client,
so a part that would bind, patch, report, evict, take the lease or place replicas is
refused before a request leaves. The one exception is ``SHADOW_WRITERS``: the reviews
that authenticate a caller of ``/metrics`` and ``/shadow/report``. A TokenReview or a
SubjectAccessReview is a question to the API server, answered and never stored; it
changes no cluster state (kube-scheduler, metrics-server and every component with
delegated authentication send them, through the built-in ``system:auth-delegator``
role). With ``http.authentication.enabled: false`` the shadow sends no POST at all.
"""

from __future__ import annotations

from enum import StrEnum

from volsched.cache.errors import ApiError
from volsched.cache.objects.registry import KINDS


class Writer(StrEnum):
    BINDING = "binding"
    LEADER_ELECTION = "leader election"
    AUTHENTICATION = "authentication"


# (verb, kind or kind/subresource) each writer may send.
WRITES: dict[Writer, frozenset[tuple[str, str]]] = {
    # Decisions made real and taken back: PV claimRefs and claim annotations (prebind,
    # provisioning, undo, recovery), the pod's binding and its status (PodScheduled,
    # nominatedNodeName, a victim's DisruptionTarget), preemption's victims, events (and
    # the patch that writes an event series' count), and volsched's own Replicas.
    Writer.BINDING: frozenset(
        {
            ("replace", "PersistentVolume"),
            ("replace", "PersistentVolumeClaim"),
            ("patch", "PersistentVolumeClaim"),
            ("create", "Pod/binding"),
            ("patch", "Pod/status"),
            ("delete", "Pod"),
            ("create", "Event"),
            ("patch", "Event"),
            ("create", "Replica"),
            ("patch", "Replica"),
            ("delete", "Replica"),
        }
    ),
    Writer.LEADER_ELECTION: frozenset({("create", "Lease"), ("replace", "Lease")}),
    Writer.AUTHENTICATION: frozenset(
        {("create", "TokenReview"), ("create", "SubjectAccessReview")}
    ),
}

# The writers whose writes a shadow keeps: reviews of its own callers, never cluster state.
SHADOW_WRITERS = frozenset({Writer.AUTHENTICATION})

# API groups whose objects volsched reads and never writes.
READ_ONLY_GROUPS = frozenset({"longhorn.io"})


class NotOwned(ApiError):
    """A write volsched does not make: refused before it was sent."""

    def __init__(self, message: str) -> None:
        super().__init__(403, message)


class NotLeader(NotOwned):
    """A write of the leader's, asked for after the lease was lost: refused unsent."""


def api_group(kind: str) -> str:
    info = KINDS.get(kind)
    if info is None or "/" not in info.api_version:
        return ""
    return info.api_version.split("/")[0]


def check_write(
    writer: Writer | None, allowed: frozenset[tuple[str, str]] | None, verb: str, target: str
) -> None:
    """Raise ``NotOwned`` unless ``writer`` may send ``verb`` to ``target``.

    ``allowed`` is None for an unscoped client, empty for a read-only one.
    """
    kind = target.split("/", 1)[0]
    group = api_group(kind)
    if group in READ_ONLY_GROUPS:
        raise NotOwned(f"volsched does not write {group} objects ({verb} {target})")
    if allowed is None or (verb, target) in allowed:
        return
    who = f"volsched's {writer}" if writer is not None else "a read-only client"
    raise NotOwned(f"{who} may not {verb} {target}")
