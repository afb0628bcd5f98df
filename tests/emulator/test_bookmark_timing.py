"""kube-apiserver's bookmark timing, as the emulator's "apiserver" cadence reproduces it:
the due time of a watcher's next bookmark, its one-second bucket, and the jittered timer
that pops the buckets."""

from __future__ import annotations

import asyncio
import random

import aiohttp
import pytest

from tests.emulator.support import Api
from volsched.emulator import ApiServer, ControllerSettings
from volsched.emulator.bookmark_timing import (
    AT_ONCE,
    ApiserverBookmarks,
    ResourceTicks,
    bookmark_bucket,
    next_bookmark_time,
)

PODS = "/api/v1/pods"


@pytest.mark.parametrize(
    ("now", "deadline", "pending", "due"),
    [
        # A watch of 3 s from t=100: two seconds before its deadline.
        (100.0, 103.0, False, 101.0),
        # A 5-minute watch: a minute from now comes first.
        (100.0, 400.0, False, 160.0),
        # Exactly a minute plus two seconds: both rules agree.
        (100.0, 162.0, False, 160.0),
        # No deadline (the server set none): once a minute.
        (100.0, None, False, 160.0),
        # A 1 s watch: its pre-timeout moment has already passed, no bookmark at all.
        (100.0, 101.0, False, None),
        # Re-filed after an early pop at 100.4 of a watch due at 101: still due at 101.
        (100.4, 103.0, False, 101.0),
        # Re-filed after the pre-timeout bookmark went out at 101.2: nothing more is due.
        (101.2, 103.0, False, None),
        # Exactly at the pre-timeout moment: still due (not before now).
        (101.0, 103.0, False, 101.0),
        # A sendInitialEvents watch that owes the initial-events-end bookmark: at once.
        (100.0, 103.0, True, AT_ONCE),
    ],
)
def test_when_a_watcher_is_next_due_a_bookmark(
    now: float, deadline: float | None, pending: bool, due: float | None
) -> None:
    assert next_bookmark_time(now, deadline, 60.0, pending) == due


@pytest.mark.parametrize(
    ("due", "created", "bucket"),
    [
        (101.0, 100.0, 1),
        (101.99, 100.0, 1),
        (102.0, 100.0, 2),
        (160.5, 100.25, 60),
        # Before the cacher existed: Go's division truncates toward zero.
        (99.5, 100.0, 0),
    ],
)
def test_the_one_second_bucket_a_due_time_is_filed_in(
    due: float, created: float, bucket: int
) -> None:
    assert bookmark_bucket(due, created) == bucket


class FixedTicks(ResourceTicks):
    """A timer firing at given moments (the real one draws 1–1.25 s between firings)."""

    def __init__(self, created: float, moments: list[float]) -> None:
        super().__init__(created, random.Random(0))
        self._ticks = list(moments)
        self._last = moments[-1]

    def _extend_past(self, moment: float) -> None:
        assert moment < self._last, "the table's timer ran out of firings"


TIMER = [1.1, 2.3, 3.4, 4.6, 5.7, 6.8, 8.0, 9.2, 10.3, 11.5]


@pytest.mark.parametrize(
    ("due", "now", "delivered"),
    [
        # Due at 3.0 (bucket 3): the firing at 3.4 pops it.
        (3.0, 0.5, 3.4),
        # Due at 3.9, still bucket 3: popped at 3.4, half a second early.
        (3.9, 0.5, 3.4),
        # Due at 4.0 (bucket 4): the firing at 4.6.
        (4.0, 0.5, 4.6),
        # Filed after its bucket's firing (at 3.5 for bucket 3): the next firing.
        (3.2, 3.5, 4.6),
        # At once: the next firing after now.
        (AT_ONCE, 6.0, 6.8),
        # A firing at exactly ``now`` has happened already.
        (2.0, 2.3, 3.4),
    ],
)
def test_the_timer_firing_that_pops_a_watchers_bucket(
    due: float, now: float, delivered: float
) -> None:
    assert FixedTicks(0.0, TIMER).delivery(due, now) == delivered


def test_a_resources_timer_fires_every_second_plus_up_to_a_quarter() -> None:
    ticks = ResourceTicks(0.0, random.Random(7))
    moment = ticks.delivery(AT_ONCE, 0.0)
    assert 1.0 <= moment <= 1.25
    for _ in range(500):
        following = ticks.delivery(AT_ONCE, moment)
        assert 1.0 <= following - moment <= 1.25
        moment = following


def test_a_three_second_watch_is_bookmarked_within_the_second_after_its_due_time() -> None:
    """Over many start moments, a 3 s watch's first bookmark comes between its start
    and 2.25 s after it: due at +1 s, popped anywhere in that second's bucket."""
    bookmarks = ApiserverBookmarks(0.0, random.Random(3))
    delays = []
    for step in range(400):
        start = step * 0.137
        first = bookmarks.next_delivery("pods", start, start + 3)
        assert first is not None
        delays.append(first - start)
    assert 0 < min(delays) < 0.5
    assert 1.9 < max(delays) <= 2.25


async def test_the_apiserver_cadence_bookmarks_a_short_watch_as_kube_apiserver_does() -> None:
    """Over real HTTP: a resumed 3 s watch gets its bookmark within 2.25 s, only once
    something moved past where it started."""
    emulator = ApiServer(
        controllers=ControllerSettings.none(), bookmark_cadence="apiserver", bookmark_seed=1
    )
    await emulator.start()
    loop = asyncio.get_running_loop()
    try:
        async with aiohttp.ClientSession(emulator.url) as session:
            api = Api(session)
            start_at = emulator.store.revision
            emulator.ensure_namespace("moved-on")
            started = loop.time()
            watch = await api.watch(
                PODS,
                resourceVersion=str(start_at),
                allowWatchBookmarks="true",
                timeoutSeconds="3",
            )
            try:
                event = await watch.next(2.5)
                assert event["type"] == "BOOKMARK"
                assert int(event["object"]["metadata"]["resourceVersion"]) > start_at
                assert loop.time() - started <= 2.3
            finally:
                watch.response.close()
    finally:
        await emulator.stop()


def test_an_unknown_cadence_is_one_clear_error() -> None:
    with pytest.raises(ValueError, match="bookmark_cadence: 'kube'"):
        ApiServer(bookmark_cadence="kube")
