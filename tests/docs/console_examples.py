"""The examples of README.md and docs/ that run: how they are written and found.

An example is a fenced block whose info string is ``console``. Each line starting with
``$ volsched`` is a command; the lines after it, up to the next command or the end of the
block, are what it prints (stdout, then stderr). An HTML comment on the line before the
fence, never shown on the page, says what the example needs:

    <!-- example: cluster=examples/cluster.yaml context=prod namespace=shop varies=uids -->

- ``cluster=FILE``: the commands read a live cluster, the embedded API server loaded with
  FILE, through ``KUBECONFIG`` (``context`` and ``namespace`` name its one context);
- ``workdir=PATH``: the example's scratch directory appears as PATH in its commands and
  output (a path under /var/lib reads better than a temporary folder);
- ``varies=…``: what truly changes from run to run and is therefore not compared:
  ``durations`` (``3.1s``), ``ports`` (``127.0.0.1:40703``), ``uids`` (generated
  ``pvc-…`` names), ``order`` (the order of the lines, e.g. of pods bound at nearly the
  same moment by concurrent binding cycles: every line is still compared).

Anything else in a console block, or a ``$ `` line in any other block, is refused, so an
example cannot silently stop being run.
"""

from __future__ import annotations

import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
FENCE = re.compile(r"^(?P<indent>\s*)(?P<fence>`{3,})(?P<info>[^`\s]*)\s*$")
DIRECTIVE = re.compile(r"^\s*<!--\s*example:(?P<options>.*?)-->\s*$")
PROMPT = "$ "

# Each varying thing, the pattern that finds it and what it is compared as.
VARYING: dict[str, tuple[re.Pattern[str], str]] = {
    "durations": (re.compile(r"\b\d+\.\ds\b"), "<duration>"),
    "ports": (re.compile(r"\b127\.0\.0\.1:\d+\b"), "127.0.0.1:<port>"),
    "uids": (
        re.compile(r"\bpvc-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\b"),
        "pvc-<uid>",
    ),
}


class ExampleError(Exception):
    """A block that breaks the convention: named by page and line."""


@dataclass(frozen=True)
class Step:
    """One ``$ volsched …`` line and the output shown under it."""

    argv: tuple[str, ...]
    expected: str


@dataclass(frozen=True)
class Example:
    page: str
    line: int
    steps: tuple[Step, ...]
    options: dict[str, str] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return f"{self.page}:{self.line}"

    @property
    def varies(self) -> tuple[str, ...]:
        return tuple(v for v in self.options.get("varies", "").split(",") if v)

    def normalised(self, text: str) -> str:
        """The text as compared: trailing spaces and blank lines dropped, what varies
        replaced by its placeholder."""
        for what in self.varies:
            if what in VARYING:
                pattern, placeholder = VARYING[what]
                text = pattern.sub(placeholder, text)
        lines = [line.rstrip() for line in text.strip("\n").splitlines()]
        return "\n".join(sorted(lines) if "order" in self.varies else lines)


def pages(root: Path = ROOT) -> list[Path]:
    return [root / "README.md", *sorted((root / "docs").rglob("*.md"))]


def _options(where: str, text: str) -> dict[str, str]:
    options: dict[str, str] = {}
    for word in text.split():
        key, sep, value = word.partition("=")
        if not sep or key not in {"cluster", "context", "namespace", "workdir", "varies"}:
            raise ExampleError(f"{where}: unknown example option {word!r}")
        options[key] = value
    for what in options.get("varies", "").split(","):
        if what and what not in (*VARYING, "order"):
            raise ExampleError(f"{where}: varies={what!r} is none of {[*VARYING, 'order']}")
    return options


def _steps(where: str, body: list[str]) -> tuple[Step, ...]:
    steps: list[Step] = []
    command: list[str] | None = None
    output: list[str] = []
    for line in body:
        if line.startswith(PROMPT):
            if command is not None:
                steps.append(Step(tuple(command), "\n".join(output)))
            words = shlex.split(line[len(PROMPT) :])
            if words[:1] != ["volsched"]:
                raise ExampleError(f"{where}: only volsched commands run, not {line!r}")
            command, output = words[1:], []
        elif command is None:
            raise ExampleError(f"{where}: output before the first command: {line!r}")
        else:
            output.append(line)
    if command is None:
        raise ExampleError(f"{where}: a console block without a command")
    steps.append(Step(tuple(command), "\n".join(output)))
    return tuple(steps)


def _closes(line: str, fence: str) -> bool:
    stripped = line.strip()
    return stripped.startswith(fence) and set(stripped) == {"`"}


def examples_in(path: Path, root: Path = ROOT) -> list[Example]:
    page = str(path.relative_to(root))
    lines = path.read_text().splitlines()
    found: list[Example] = []
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        indent, info, start = opening["indent"], opening["info"], index
        fence = opening["fence"]
        body: list[str] = []
        index += 1
        # A block closes with a fence at least as long as its own, so a longer fence can
        # show a console block without running it.
        while index < len(lines) and not _closes(lines[index], fence):
            body.append(
                lines[index][len(indent) :] if lines[index].startswith(indent) else lines[index]
            )
            index += 1
        index += 1
        where = f"{page}:{start + 1}"
        if info != "console":
            # A markdown block shows page source (this convention itself), not a command.
            if info != "markdown" and any(line.startswith(PROMPT) for line in body):
                raise ExampleError(
                    f"{where}: a command with a prompt in a {info or 'plain'} block; make it a console block"
                )
            continue
        directive = DIRECTIVE.match(lines[start - 1]) if start else None
        options = _options(where, directive["options"]) if directive else {}
        found.append(Example(page, start + 1, _steps(where, body), options))
    return found


def all_examples(root: Path = ROOT) -> list[Example]:
    return [example for path in pages(root) for example in examples_in(path, root)]
