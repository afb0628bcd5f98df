"""SIGKILL at randomized points just before and after each API write of the binding cycle
and of recovery; restart (the same replica, another one, or a new one with an empty
database); at convergence, no PV prebound or bound to two claims, nothing written for a
pod that is not bound there, every pod bound with its volumes or pending with a reason.

CI hits a couple of dozen kill points. The full size, which prints the figures
(``VOLSCHED_CRASH_REPORT=FILE`` also writes them as JSON):

    VOLSCHED_CRASH_KILLS=1000 VOLSCHED_CRASH_PARALLEL=4 pytest tests/crash/test_crash_suite.py -q -s
"""

from __future__ import annotations

import asyncio
import itertools
import json
import time
from collections import Counter
from pathlib import Path
from random import Random

from tests.crash.rounds import POINTS, CrashRound, RoundResult
from tests.crash.sizes import KILLS, PARALLEL, REPORT, SEED


def figures(results: list[RoundResult], seconds: float) -> dict[str, object]:
    hits = [hit for result in results for hit in result.hits]
    by_label = Counter(hit.label for hit in hits)
    order = [
        f"{side} {point}{context}"
        for point in POINTS
        for side in ("before", "after")
        for context in ("", " (recovery)")
    ]
    return {
        "rounds": len(results),
        "pods": sum(r.pods for r in results),
        "kill_points_hit": len(hits),
        "kill_points_missed": sum(r.misses for r in results),
        "hits_by_point": {label: by_label[label] for label in order if by_label[label]},
        "after_a_refused_write": sum(1 for h in hits if h.after and (h.status or 0) >= 300),
        "restarts": dict(sum((r.restarts for r in results), Counter())),
        "violations": sum(len(r.violations) for r in results),
        "unconverged": sum(len(r.unconverged) for r in results),
        "problems": sum(len(r.problems) for r in results),
        "tracebacks_logged": sum(r.tracebacks for r in results),
        "wall_seconds": round(seconds, 1),
    }


def describe(result: RoundResult) -> str:
    lines = [f"round {result.index} (seed {result.seed}, kept in {result.workdir}):"]
    lines += [f"  hit: {hit.label}" for hit in result.hits]
    lines += [f"  VIOLATION: {v}" for v in result.violations]
    lines += [f"  not converged: {u}" for u in result.unconverged]
    lines += [f"  problem: {p}" for p in result.problems]
    return "\n".join(lines)


async def test_sigkill_at_binding_and_recovery_writes_leaves_nothing_half_done(
    tmp_path: Path,
) -> None:
    coverage: Counter[str] = Counter()
    results: list[RoundResult] = []
    indexes = itertools.count()
    planned = 0
    started = time.monotonic()

    def hit() -> int:
        return sum(len(result.hits) for result in results)

    async def worker() -> None:
        nonlocal planned
        while hit() + planned < KILLS:
            index = next(indexes)
            seed = SEED * 1_000_003 + index
            kills = min(Random(seed).randint(3, 8), KILLS - hit() - planned)
            planned += kills
            try:
                crash = CrashRound(index, seed, kills, tmp_path / f"round-{index}", coverage)
                results.append(await crash.run())
            finally:
                planned -= kills

    await asyncio.gather(*(worker() for _ in range(PARALLEL)))
    summary = figures(results, time.monotonic() - started)
    print("\ncrash suite:", json.dumps(summary, indent=2))
    if REPORT:
        Path(REPORT).write_text(json.dumps(summary, indent=2) + "\n")
    failed = [describe(result) for result in results if result.failed]
    assert not failed, "\n".join(failed)
    assert hit() >= KILLS
