"""Resource versions compared as the cache and the watches compare them: as integers,
an unknown one never older and nothing older than it."""

from __future__ import annotations

import pytest

from volsched.cache.objects.meta import is_older_version


@pytest.mark.parametrize(
    ("version", "than", "older"),
    [
        (5, 9, True),
        (9, 5, False),
        (7, 7, False),
        (0, 9, False),
        (9, 0, False),
        ("5", "10", True),
        ("10", "5", False),
        ("", "10", False),
        ("5", "", False),
        ("abc", "10", False),
        ("5", 10, True),
    ],
)
def test_older_versions(version: int | str, than: int | str, older: bool) -> None:
    assert is_older_version(version, than) is older
