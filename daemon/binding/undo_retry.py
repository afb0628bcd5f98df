"""Trying again to undo a failed binding cycle until its claims and its pod agree.

A cycle that fails and cannot undo its writes at once (the API server refused the
claim's patch too) would leave a claim naming a node its pod is not on — and a
provisioner serving that node — until the next start's recovery. Instead the undo is
retried in the background with backoff until it is complete, or until the pod is bound
on the cycle's node after all (then the writes are right as they are). Each retry leaves
alone what a later cycle of the same pod wrote (see ``written_by``), so a pod placed
again on the same node keeps its new annotations. The journal entry stays open until
then: leadership lost or a shutdown stops the retries and leaves the entry to recovery.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping

from volsched.cache.errors import ApiError, StoreError
from volsched.daemon.binding.intent import Intent, Journal, UndoResult, forget_assumed

log = logging.getLogger("volsched.binding")

FIRST_RETRY_SECONDS = 0.5
LONGEST_RETRY_SECONDS = 30.0


class UndoRetries:
    def __init__(
        self,
        undo: Callable[[Intent, Mapping[str, list[str]] | None], Awaitable[UndoResult]],
        pod_is_bound: Callable[[Intent], Awaitable[bool]],
        journal: Journal,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self._undo = undo
        self._pod_is_bound = pod_is_bound
        self._journal = journal
        self._sleep = sleep
        self._tasks: set[asyncio.Task[None]] = set()

    def __len__(self) -> int:
        return len(self._tasks)

    def start(
        self, entry: int | None, intent: Intent, done: Mapping[str, list[str]], failed: list[str]
    ) -> None:
        log.warning(
            "binding %s: could not undo %s now; trying again in the background",
            intent.pod,
            ", ".join(failed),
        )
        task = asyncio.get_running_loop().create_task(
            self._retry(entry, intent, done), name=f"undo {intent.pod}"
        )
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def stop(self) -> None:
        """Stop retrying (leadership lost, shutdown): open intents are recovery's."""
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _retry(
        self, entry: int | None, intent: Intent, done: Mapping[str, list[str]]
    ) -> None:
        delay = FIRST_RETRY_SECONDS
        attempts = 0
        while True:
            await self._sleep(delay)
            attempts += 1
            try:
                if await self._pod_is_bound(intent):
                    outcome = "its pod is bound there after all"
                    break
                undone = await self._undo(intent, done)
            except ApiError as exc:
                failed = [str(exc)]
            else:
                if not undone.failed:
                    outcome = "undone"
                    break
                failed = undone.failed
            log.debug("binding %s: undo attempt %d failed: %s", intent.pod, attempts, failed)
            delay = min(delay * 2, LONGEST_RETRY_SECONDS)
        log.info(
            "binding %s to %s: %s after %d more attempt(s)",
            intent.pod,
            intent.node,
            outcome,
            attempts,
        )
        try:
            if entry is not None:
                await self._journal.journal_close(entry)
            forget_assumed(self._journal, intent)
        except StoreError as exc:
            log.warning("binding %s: journal not closed: %s", intent.pod, exc)
