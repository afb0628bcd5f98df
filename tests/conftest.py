"""Fixtures shared across test packages."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.deploy.helm_binary import helm_binary


@pytest.fixture(scope="module")
def helm() -> Path:
    """The Helm binary (the chart's tests and its dry run on a real API server), or the
    test skipped with why there is none."""
    binary, why = helm_binary()
    if binary is None:
        pytest.skip(why)
    return binary
