"""The fuzz suite reuses the integration tests' embedded cluster."""

from tests.integration.conftest import cluster, controllers, no_leaked_tasks

__all__ = ["cluster", "controllers", "no_leaked_tasks"]
