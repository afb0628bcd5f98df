"""What an admission needs and the webhook's caches do not hold yet, read from the API server.

A StatefulSet creates a pod's claim and then, as soon as the API server has answered,
the pod: the AdmissionReview for the pod can arrive before the webhook's own watch has
delivered the claim — the more likely the busier the API server. A claim the cache does
not know is therefore read (GET, as the webhook's read-only client) before the routing
decision, and what a read brings goes into the cache, the watch's copy replacing it
when it arrives (the ingest keeps the newer revision). Reading a claim can lead to its
PV or its StorageClass; each round reads what the last one made known.

A name no object can have (a ``claimName`` of ``x?watch=true``, ``a/b``, ``..``) is
never read: it cannot exist, so it cannot be found, and the lookup records it as such
without a request (``names``).

All of it runs within a deadline well inside the API server's timeout for the webhook:
an answer that comes too late is no answer (``failurePolicy: Ignore`` then creates the
pod unchanged), so the webhook rather decides with what it has, and says so.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from volsched.cache.errors import ApiError, NotFound
from volsched.cache.objects.names import name_problem
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.watch.ingest import Ingest
from volsched.scheduling.routing import ObjectRef

# Rounds of reads: a claim, then its PV or class, then a PV's class.
MAX_ROUNDS = 3


@dataclass(slots=True)
class Lookup:
    """What one admission's lookup read, found missing, or could not finish."""

    read: list[ObjectRef] = field(default_factory=list)
    absent: list[ObjectRef] = field(default_factory=list)
    # Names no object can have, each with why: never asked for.
    invalid: list[tuple[ObjectRef, str]] = field(default_factory=list)
    # Why the lookup stopped short (a timeout, an API error); empty when it finished.
    failure: str = ""


async def _read(client: KubeClient, ref: ObjectRef) -> dict[str, Any]:
    return await client.get(ref.kind, ref.name, ref.namespace or None)


def invalid_name(ref: ObjectRef) -> str | None:
    """Why no object can be ``ref`` (its name, or its namespace), or None."""
    if ref.namespace:
        problem = name_problem("Namespace", ref.namespace)
        if problem is not None:
            return f"namespace {problem}"
    return name_problem(ref.kind, ref.name)


async def look_up(
    client: KubeClient,
    ingest: Ingest,
    wanted: Callable[[], list[ObjectRef]],
    deadline_seconds: float,
) -> Lookup:
    """Read what ``wanted()`` names (asked again after each round) into the cache, within
    ``deadline_seconds``; every object at most once."""
    lookup = Lookup()
    tried: set[ObjectRef] = set()
    try:
        async with asyncio.timeout(deadline_seconds):
            for _ in range(MAX_ROUNDS):
                batch = [ref for ref in wanted() if ref not in tried]
                if not batch:
                    break
                tried.update(batch)
                problems = {ref: invalid_name(ref) for ref in batch}
                lookup.invalid += [(ref, why) for ref, why in problems.items() if why]
                batch = [ref for ref in batch if not problems[ref]]
                answers = await asyncio.gather(
                    *(_read(client, ref) for ref in batch), return_exceptions=True
                )
                for ref, answer in zip(batch, answers, strict=True):
                    if isinstance(answer, NotFound):
                        lookup.absent.append(ref)
                    elif isinstance(answer, ApiError):
                        lookup.failure = lookup.failure or f"reading {ref} failed: {answer}"
                    elif isinstance(answer, BaseException):
                        raise answer
                    else:
                        answer.setdefault("kind", ref.kind)
                        ingest.upsert(ref.kind, answer)
                        lookup.read.append(ref)
                if lookup.failure:
                    break
    except TimeoutError:
        done = {*lookup.read, *lookup.absent, *(ref for ref, _ in lookup.invalid)}
        pending = [ref for ref in tried if ref not in done]
        what = ", ".join(sorted(str(ref) for ref in pending)) or "the API server"
        lookup.failure = f"reading {what} timed out after {deadline_seconds:g}s"
    return lookup
