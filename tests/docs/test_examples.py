"""Every command README.md and docs/ show with their output is run, and its output must be
what the page shows: an example cannot drift from what volsched prints.

The convention (a ``console`` block, ``$ volsched …`` lines, an optional
``<!-- example: … -->`` line) is described in ``console_examples``. Commands run in
process through the ``volsched`` entry, in a scratch directory holding ``examples/``,
one block's commands in the same directory (so a snapshot written by one is read by the
next). A page changed on purpose is fixed by pasting the real output shown in the
failure.
"""

from __future__ import annotations

import asyncio
import difflib
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.docs.console_examples import ROOT, Example, ExampleError, all_examples, examples_in
from tests.integration.conftest import crds
from volsched.daemon.cli.main import main
from volsched.emulator import ApiServer, ControllerSettings
from volsched.emulator.kubeconfig import kubeconfig
from volsched.emulator.longhorn import longhorn_crds

EXAMPLES = all_examples()


@pytest.fixture
async def cluster(request: pytest.FixtureRequest) -> AsyncIterator[ApiServer | None]:
    """The live cluster an example reads, when it names one; no controllers, so it stays
    exactly as loaded while it is read."""
    example: Example = request.param
    source = example.options.get("cluster")
    if source is None:
        yield None
        return
    api = ApiServer(controllers=ControllerSettings.none())
    await api.start()
    try:
        objects = yaml.safe_load_all((ROOT / source).read_text())
        api.load([*crds(), *longhorn_crds(), *(o for o in objects if isinstance(o, dict))])
        yield api
    finally:
        await api.stop()


def write_kubeconfig(path: Path, api: ApiServer, example: Example) -> Path:
    config: dict[str, Any] = kubeconfig(api.url, example.options.get("namespace", "default"))
    name = example.options.get("context", "default")
    config["contexts"][0]["name"] = name
    config["current-context"] = name
    path.write_text(yaml.safe_dump(config, sort_keys=False))
    return path


async def run(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    # In a thread: a command that reads a live cluster runs its own loop, while the
    # embedded API server serves on this one.
    await asyncio.to_thread(main, argv)
    captured = capsys.readouterr()
    return captured.out + captured.err


def outside_paths(text: str, workdir: str, scratch: Path) -> str:
    return text.replace(workdir, str(scratch)) if workdir else text


@pytest.mark.parametrize("cluster", EXAMPLES, ids=[e.name for e in EXAMPLES], indirect=True)
async def test_the_example_prints_what_its_page_shows(
    cluster: ApiServer | None,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    example: Example = request.node.callspec.params["cluster"]
    scratch = tmp_path / "work"
    scratch.mkdir()
    (scratch / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(scratch)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    if cluster is not None:
        monkeypatch.setenv(
            "KUBECONFIG", str(write_kubeconfig(tmp_path / "kubeconfig", cluster, example))
        )
    workdir = example.options.get("workdir", "")
    for step in example.steps:
        argv = [outside_paths(word, workdir, scratch) for word in step.argv]
        printed = await run(capsys, argv)
        if workdir:
            printed = printed.replace(str(scratch), workdir)
        shown, real = example.normalised(step.expected), example.normalised(printed)
        if shown != real:
            diff = "\n".join(
                difflib.unified_diff(
                    shown.splitlines(), real.splitlines(), "page", "volsched", lineterm=""
                )
            )
            pytest.fail(
                f"{example.name}: `volsched {' '.join(step.argv)}` prints something else than the "
                f"page shows:\n{diff}\n\nwhat it prints:\n{printed}",
                pytrace=False,
            )


def test_the_pages_have_examples_to_run() -> None:
    # The convention is found where it is used: the pages with command output today.
    pages = {example.page for example in EXAMPLES}
    assert {"README.md", "docs/guides/longhorn.md", "docs/guides/simulate.md"} <= pages


def test_a_command_outside_a_console_block_is_refused(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "page.md"
    page.write_text("Text.\n\n```\n$ volsched simulate examples/cluster.yaml\nPOD\n```\n")
    with pytest.raises(ExampleError, match=r"page\.md:3: a command with a prompt"):
        examples_in(page, tmp_path)


def test_a_shown_output_that_differs_fails(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    page = tmp_path / "docs" / "page.md"
    page.write_text(
        "<!-- example: varies=durations -->\n```console\n$ volsched demo\nplaced in 3.1s\n```\n"
    )
    [example] = examples_in(page, tmp_path)
    assert example.normalised(example.steps[0].expected) == example.normalised("placed in 0.2s")
    assert example.normalised(example.steps[0].expected) != example.normalised("placed in 3.1 s")
