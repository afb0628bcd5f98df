"""The documentation site: it builds strictly, and a broken link, a page left out, or a
reference page (or the part of it generated from the code) gone missing fails the build."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType

import pytest
from mkdocs.exceptions import PluginError

ROOT = Path(__file__).resolve().parents[2]
HOOK = ROOT / "docs" / "hooks" / "reference.py"


def build(root: Path, site: Path) -> subprocess.CompletedProcess[str]:
    # The theme prints a notice about its own future on every build; it is not ours.
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


@pytest.fixture
def copy(tmp_path: Path) -> Path:
    """The site's sources in a folder of their own, to break."""
    shutil.copy2(ROOT / "mkdocs.yml", tmp_path / "mkdocs.yml")
    shutil.copytree(ROOT / "docs", tmp_path / "docs", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "bench" / "results", tmp_path / "bench" / "results")
    return tmp_path


@pytest.fixture
def hook() -> Iterator[ModuleType]:
    """The build hook, imported as MkDocs imports it: from its file."""
    name = "docs_reference_hook"
    spec = importlib.util.spec_from_file_location(name, HOOK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # dataclasses look their module up while it loads
    try:
        spec.loader.exec_module(module)
        yield module
    finally:
        del sys.modules[name]


def test_the_site_builds_with_its_generated_pages(tmp_path: Path) -> None:
    site = tmp_path / "site"
    result = build(ROOT, site)
    assert result.returncode == 0, result.stdout + result.stderr
    pages = {
        "reference/cli": ["volsched simulate", "--leader-elect"],
        "reference/metrics": ["scheduler_schedule_attempts_total", "volsched_database_writable"],
        "reference/events": [
            "FailedScheduling",
            "node(s) didn't match PersistentVolume's node affinity",
            "Every 30 minutes",
        ],
        "reference/kubeschedulerconfiguration": ["DefaultPreemption", "ImageLocality"],
        "reference/policy": ["CheckVolumeBinding", "ServiceSpreadingPriority"],
        "performance": ["engine-wffc-scaling", "e2e-plain-throughput.png"],
    }
    for page, expected in pages.items():
        html = (site / page / "index.html").read_text(encoding="utf-8")
        assert "volsched-generated" not in html, page
        for text in expected:
            assert text in html, (page, text)
    assert (site / "performance" / "e2e-plain-throughput.png").is_file()


@pytest.mark.parametrize(
    ("page", "link", "message"),
    [
        ("concepts/volumes.md", "no-such-page.md", "no-such-page.md"),
        ("guides/longhorn.md", "helm.md#no-such-section", "no-such-section"),
    ],
)
def test_a_broken_link_fails_the_build(
    copy: Path, tmp_path: Path, page: str, link: str, message: str
) -> None:
    path = copy / "docs" / page
    path.write_text(path.read_text(encoding="utf-8") + f"\n[see]({link})\n", encoding="utf-8")
    result = build(copy, tmp_path / "site")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert page in output and message in output, output


def test_a_page_left_out_of_the_nav_fails_the_build(copy: Path, tmp_path: Path) -> None:
    (copy / "docs" / "orphan.md").write_text("# Orphan\n", encoding="utf-8")
    result = build(copy, tmp_path / "site")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "orphan.md" in output, output


def test_a_missing_reference_page_fails_the_build(copy: Path, tmp_path: Path) -> None:
    (copy / "docs" / "reference" / "metrics.md").unlink()
    result = build(copy, tmp_path / "site")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "reference/metrics.md" in output, output


def test_a_missing_generated_part_fails_the_build(copy: Path, tmp_path: Path) -> None:
    path = copy / "docs" / "reference" / "cli.md"
    text = path.read_text(encoding="utf-8")
    path.write_text(text.replace("<!-- volsched-generated: cli -->", ""), encoding="utf-8")
    result = build(copy, tmp_path / "site")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "reference/cli.md" in output and "'cli'" in output, output


def test_missing_benchmark_results_fail_the_build(copy: Path, tmp_path: Path) -> None:
    shutil.rmtree(copy / "bench" / "results")
    result = build(copy, tmp_path / "site")
    output = result.stdout + result.stderr
    assert result.returncode != 0, output
    assert "no benchmark results" in output, output


def test_code_that_moved_away_fails_the_build(hook: ModuleType) -> None:
    assert hook.import_module("json").__name__ == "json"
    with pytest.raises(hook.PluginError, match=re.escape("volsched.no_such_module")):
        hook.import_module("volsched.no_such_module")
    with pytest.raises(hook.PluginError, match="has no 'no_such_thing'"):
        hook.attribute(hook, "no_such_thing")


def test_a_module_that_fails_to_import_fails_the_build(hook: ModuleType, tmp_path: Path) -> None:
    (tmp_path / "broken_for_docs.py").write_text("import no_such_dependency_at_all\n")
    sys.path.insert(0, str(tmp_path))
    try:
        with pytest.raises(PluginError, match="broken_for_docs cannot be imported"):
            hook.import_module("broken_for_docs")
    finally:
        sys.path.remove(str(tmp_path))
        sys.modules.pop("broken_for_docs", None)
