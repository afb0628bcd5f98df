"""No dead code: vulture over the package directories reports nothing that
tests/dead_code_whitelist.py does not explain.

A function only tests call is dead too: the tests are not scanned, so such a name is
reported until the package uses it or it goes (with its tests).
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE_DIRS = ("cache", "daemon", "scheduling", "emulator", "migrations")
WHITELIST = ROOT / "tests" / "dead_code_whitelist.py"


def vulture(*extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "vulture", "--min-confidence", "60", *PACKAGE_DIRS, *extra],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )


def whitelisted_names() -> set[str]:
    body = WHITELIST.read_text(encoding="utf-8").split('"""', 2)[2]
    return {
        line.split("#", 1)[0].strip() for line in body.splitlines() if line.split("#", 1)[0].strip()
    }


def test_vulture_finds_nothing_unexplained() -> None:
    result = vulture(str(WHITELIST.relative_to(ROOT)))
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_whitelisted_name_is_still_needed() -> None:
    """An entry left behind after its code went would excuse the next dead code of
    that name."""
    reported = set(re.findall(r"unused \w+ '(\w+)'", vulture().stdout))
    assert whitelisted_names() - reported == set()


def test_every_whitelisted_name_says_why() -> None:
    """A bare name hides dead code as well as it explains a live one: each name has
    a comment of its own, or opens a group under a comment that says why."""
    text = WHITELIST.read_text(encoding="utf-8")
    body = text.split('"""', 2)[2]
    unexplained = []
    for group in body.strip().split("\n\n"):
        lines = group.splitlines()
        if lines[0].startswith("#"):
            continue
        unexplained += [line for line in lines if "#" not in line]
    assert unexplained == []
