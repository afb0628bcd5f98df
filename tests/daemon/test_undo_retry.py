"""The background undo of a failed binding cycle: which annotations are its own, when it
stops trying, and that stopping leaves the journal entry to recovery."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from typing import Any

import pytest

from volsched.cache.errors import ApiError
from volsched.daemon.binding.intent import (
    ANN_BINDING_INTENT,
    Intent,
    UndoResult,
    intent_annotation,
    written_by,
)
from volsched.daemon.binding.undo_retry import LONGEST_RETRY_SECONDS, UndoRetries

CYCLE = Intent("ns/app", "uid-1", "node-1", cycle="c1")
ANNOTATED = {ANN_BINDING_INTENT: intent_annotation(CYCLE)}


@pytest.mark.parametrize(
    ("annotations", "intent", "ours"),
    [
        (ANNOTATED, CYCLE, True),
        ({ANN_BINDING_INTENT: json.dumps({"pod": "ns/app", "cycle": "c2"})}, CYCLE, False),
        ({}, CYCLE, True),
        ({ANN_BINDING_INTENT: "{not json"}, CYCLE, True),
        ({ANN_BINDING_INTENT: json.dumps({"pod": "ns/app", "node": "node-1"})}, CYCLE, True),
        ({ANN_BINDING_INTENT: json.dumps(["c2"])}, CYCLE, True),
        # An intent recorded before cycles were named matches any annotation.
        (
            {ANN_BINDING_INTENT: json.dumps({"cycle": "c2"})},
            Intent("ns/app", "u", "n", cycle=""),
            True,
        ),
    ],
    ids=[
        "same cycle",
        "later cycle",
        "none",
        "unreadable",
        "no cycle",
        "not an object",
        "old intent",
    ],
)
def test_which_annotations_a_cycle_may_take_back(
    annotations: Mapping[str, str], intent: Intent, ours: bool
) -> None:
    assert written_by(annotations, intent) is ours


class FakeJournal:
    """Only what the retries touch: closing the entry and forgetting assumed records."""

    def __init__(self) -> None:
        self.closed: list[int] = []
        self.forgotten: list[tuple[str, str]] = []

    async def journal_close(self, entry_id: int) -> None:
        self.closed.append(entry_id)

    def delete_assumed(self, kind: str, key: str) -> None:
        self.forgotten.append((kind, key))


class Script:
    """An API server as the undo sees it: a list of outcomes, one per attempt."""

    def __init__(self, outcomes: list[str]) -> None:
        self.outcomes = outcomes
        self.delays: list[float] = []

    async def sleep(self, seconds: float) -> None:
        self.delays.append(seconds)
        await asyncio.sleep(0)

    async def pod_is_bound(self, intent: Intent) -> bool:
        return self.outcomes[0] == "bound"

    async def undo(self, intent: Intent, done: Mapping[str, list[str]] | None) -> UndoResult:
        outcome = self.outcomes.pop(0)
        if outcome == "error":
            raise ApiError(500, "etcd is away")
        return UndoResult(failed=["PersistentVolumeClaim ns/data"] if outcome == "fail" else [])


@pytest.mark.parametrize(
    ("outcomes", "attempts"),
    [
        (["fail", "error", "done"], 3),
        (["fail", "bound"], 2),
        (["fail"] * 8 + ["done"], 9),
    ],
    ids=["undone on the third try", "pod bound after all", "backoff is capped"],
)
async def test_retries_back_off_until_undone_or_agreed(outcomes: list[str], attempts: int) -> None:
    script = Script(list(outcomes))
    journal: Any = FakeJournal()
    retries = UndoRetries(script.undo, script.pod_is_bound, journal, script.sleep)
    retries.start(7, CYCLE, {"prebinds": [], "provisions": [], "replicas": []}, ["claim"])
    for _ in range(100):
        if not len(retries):
            break
        await asyncio.sleep(0)
    assert len(retries) == 0
    assert journal.closed == [7]
    assert ("Pod", "ns/app") in journal.forgotten
    assert len(script.delays) == attempts
    assert script.delays == sorted(script.delays)
    assert max(script.delays) <= LONGEST_RETRY_SECONDS


async def test_stopping_leaves_the_entry_open_for_recovery() -> None:
    never = asyncio.Event()

    async def sleep(seconds: float) -> None:
        await never.wait()

    script = Script(["fail"])
    journal: Any = FakeJournal()
    retries = UndoRetries(script.undo, script.pod_is_bound, journal, sleep)
    retries.start(3, CYCLE, {}, ["claim"])
    await asyncio.sleep(0)
    await retries.stop()
    assert len(retries) == 0
    assert journal.closed == []
