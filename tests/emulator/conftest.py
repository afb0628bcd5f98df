from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import aiohttp
import pytest

from tests.emulator.support import Api
from volsched.emulator import ApiServer, ControllerSettings


@pytest.fixture(autouse=True)
async def no_leaked_tasks() -> AsyncIterator[None]:
    """Every test ends with no task of its own still pending (servers stopped, watches closed)."""
    yield
    await asyncio.sleep(0)
    current = asyncio.current_task()
    leaked = [t for t in asyncio.all_tasks() if t is not current and not t.done()]
    assert not leaked, f"tasks left running: {leaked}"


@pytest.fixture
def settings() -> ControllerSettings:
    """No controllers unless a test asks for them (override in a module or a test)."""
    return ControllerSettings.none()


@pytest.fixture
async def server(settings: ControllerSettings) -> AsyncIterator[ApiServer]:
    emulator = ApiServer(controllers=settings, bookmark_interval_seconds=0.1)
    await emulator.start()
    yield emulator
    await emulator.stop()


@pytest.fixture
async def api(server: ApiServer) -> AsyncIterator[Api]:
    async with aiohttp.ClientSession(server.url) as session:
        yield Api(session)
