"""The daemon stays walkable: a module over 400 lines, or a class over 250, usually holds
two ideas, and a newcomer looking for one of them has to read both."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MAX_MODULE_LINES = 400
MAX_CLASS_LINES = 250
# The decision core: a plugin is one class, so its limit is a little wider; the runner,
# the module a reader starts from, stays short enough to read in one sitting.
MAX_SCHEDULING_CLASS_LINES = 300
MAX_RUNNER_LINES = 300
# The state layer: a class holds one kind of state — the cache's parts (nodes, pod
# placement, volumes, plain kinds, storage systems) and the store's, split by what each
# owns.
MAX_CACHE_CLASS_LINES = 300


def daemon_modules() -> list[Path]:
    return sorted((ROOT / "daemon").rglob("*.py"))


def test_the_daemon_has_modules_to_measure() -> None:
    assert len(daemon_modules()) > 30


def test_no_daemon_module_is_over_the_limit() -> None:
    too_long = {
        str(path.relative_to(ROOT)): lines
        for path in daemon_modules()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }
    assert too_long == {}


def test_no_daemon_class_is_over_the_limit() -> None:
    too_long = {}
    for path in daemon_modules():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_CLASS_LINES:
                    too_long[f"{path.relative_to(ROOT)}:{node.name}"] = lines
    assert too_long == {}


def test_no_scheduling_class_is_over_the_limit() -> None:
    too_long = {}
    for path in sorted((ROOT / "scheduling").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_SCHEDULING_CLASS_LINES:
                    too_long[f"{path.relative_to(ROOT)}:{node.name}"] = lines
    assert too_long == {}


def test_no_cache_class_is_over_the_limit() -> None:
    too_long = {}
    for path in sorted((ROOT / "cache").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                lines = (node.end_lineno or node.lineno) - node.lineno + 1
                if lines > MAX_CACHE_CLASS_LINES:
                    too_long[f"{path.relative_to(ROOT)}:{node.name}"] = lines
    assert too_long == {}


def test_the_runner_reads_in_one_sitting() -> None:
    runner = ROOT / "scheduling" / "framework" / "runner.py"
    assert len(runner.read_text(encoding="utf-8").splitlines()) <= MAX_RUNNER_LINES
