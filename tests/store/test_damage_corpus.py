"""The figures the reliability page gives for the damage corpus are the corpus's own."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

from .damage import DAMAGES, DISCARDED, DROPPED, LEFT_OUT, REBUILT, ROWS, SKIPPED

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reliability" / "store-damage.md"
# The start of the page's table row for each outcome.
ROW_STARTS = {
    REBUILT: "| the file, its schema",
    ROWS: "| a snapshot row or body",
    SKIPPED: "| a journal row",
    DISCARDED: "| a meta row",
    DROPPED: "| an assumed row",
    LEFT_OUT: "| an object row that decodes",
}


def test_every_damage_has_a_name_of_its_own() -> None:
    names = [damage.name for damage in DAMAGES]
    assert len(set(names)) == len(names)


def test_the_page_counts_the_kinds_of_each_outcome() -> None:
    page = PAGE.read_text(encoding="utf-8")
    counts = Counter(damage.outcome for damage in DAMAGES)
    stated = {}
    for line in page.splitlines():
        for outcome, start in ROW_STARTS.items():
            if line.startswith(start):
                stated[outcome] = int(line.rstrip(" |").rsplit("|", 1)[1])
    assert stated == dict(counts)
    total = len(DAMAGES)
    assert f"**{total} kinds of damage, {total} healed, 0 refused.**" in page
    assert re.search(rf"in each of the {total} ways", page)
