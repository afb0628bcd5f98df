"""The crash suite's tripwire tests use the emulator tests' server, its regression tests
the integration tests' embedded cluster; every test checks that it leaves no task
running."""

from tests.emulator.conftest import api, server, settings
from tests.integration.conftest import cluster, controllers, no_leaked_tasks

__all__ = ["api", "cluster", "controllers", "no_leaked_tasks", "server", "settings"]
