"""The package installs cleanly: one top-level import name, and a working command.

The wheel is built from the checkout and installed into an empty virtual environment (its
dependencies come from the package index, as for any user), outside the checkout, so
nothing from the source tree can stand in for what the wheel failed to carry.
"""

from __future__ import annotations

import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run(*command: str | Path, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(part) for part in command], cwd=cwd, capture_output=True, text=True, check=False
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    built = run(
        sys.executable, "-m", "pip", "wheel", "--no-deps", "--wheel-dir", out, ROOT, cwd=out
    )
    assert built.returncode == 0, built.stdout + built.stderr
    (found,) = out.glob("volsched-*.whl")
    return found


def test_the_wheel_holds_one_top_level_package(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    top_level = {
        name.split("/")[0] for name in names if not name.split("/")[0].endswith(".dist-info")
    }
    assert top_level == {"volsched"}
    for subpackage in ("cache", "scheduling", "daemon", "emulator", "migrations"):
        assert f"volsched/{subpackage}/__init__.py" in names
    # alembic needs the migration scripts and their template at run time.
    assert "volsched/migrations/script.py.mako" in names
    # The decisions page renders its templates from the package.
    for page in ("base", "index", "pod", "not_found"):
        assert f"volsched/daemon/http/templates/decisions/{page}.html" in names
    assert any(name.startswith("volsched/migrations/versions/0001_") for name in names)


def test_the_wheel_installs_into_an_empty_virtual_environment(wheel: Path, tmp_path: Path) -> None:
    environment = tmp_path / "venv"
    venv.create(environment, with_pip=True)
    python = environment / "bin" / "python"
    installed = run(python, "-m", "pip", "install", "--quiet", wheel, cwd=tmp_path)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    for command in (
        [environment / "bin" / "volsched", "--help"],
        [python, "-m", "volsched", "--help"],
    ):
        result = run(*command, cwd=tmp_path)
        assert result.returncode == 0, result.stderr
        assert "usage: volsched" in result.stdout
        for verb in ("run", "demo", "simulate", "explain", "migrate"):
            assert verb in result.stdout

    # The installed names are volsched's alone: no top-level daemon, cache or scheduling.
    probe = run(
        python,
        "-c",
        "import importlib.util as u; import volsched.cache.store.migrating as m;"
        "print(m.head_revision());"
        "print([n for n in ('daemon','cache','scheduling','emulator','migrations') if u.find_spec(n)])",
        cwd=tmp_path,
    )
    assert probe.returncode == 0, probe.stderr
    head, shadowed = probe.stdout.splitlines()
    assert head
    assert shadowed == "[]"
