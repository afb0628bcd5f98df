"""``snapshot``, ``simulate`` and ``explain`` against an API server that answers badly:
endless or repeating ``continue`` tokens, a page far larger than any page, a body sent
a byte at a time, lists of the wrong shape. Each ends as one line naming the server and
the kind, exit status 2, in bounded time — where they used to loop for minutes, take
gigabytes or end in a traceback."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.integration.hostile_api import MIB, HostileApi, page
from volsched.cache.errors import ApiError
from volsched.daemon.cli import live
from volsched.daemon.cli.live_pages import ListLimits
from volsched.daemon.cli.main import main
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.kube.kubeconfig import connect
from volsched.emulator import write_kubeconfig


@pytest.fixture
async def api() -> AsyncIterator[HostileApi]:
    server = HostileApi()
    await server.start()
    try:
        yield server
    finally:
        await server.close()


async def cli(
    capsys: pytest.CaptureFixture[str], api: HostileApi, tmp_path: Path, *argv: str
) -> str:
    """The one line the command prints, having checked it is one line and status 2."""
    kubeconfig = str(write_kubeconfig(tmp_path / "kubeconfig", api.url))
    status = await asyncio.to_thread(main, [*argv, "--kubeconfig", kubeconfig])
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err
    return err.strip()


@pytest.mark.parametrize("command", [["snapshot"], ["simulate"], ["explain", "default/p"]])
async def test_an_endless_list_is_refused_after_the_page_limit(
    api: HostileApi,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: list[str],
) -> None:
    monkeypatch.setattr(live, "_limits", lambda args: ListLimits(max_pages=50))
    api.behaviour = "endless"
    line = await cli(capsys, api, tmp_path, *command)
    assert line == (
        f"volsched: {api.url}: cannot list nodes: still more pages after 50 of 500 objects "
        "(endless list?)"
    )
    assert api.requests == 50


async def test_a_repeated_continue_token_is_refused_at_once(
    api: HostileApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.behaviour = "repeating"
    line = await cli(capsys, api, tmp_path, "simulate")
    assert line == (
        f"volsched: {api.url}: cannot list nodes: the server sent a continue token it had "
        "sent before (a loop)"
    )
    assert api.requests == 2


async def test_a_body_sent_a_byte_at_a_time_ends_within_the_request_timeout(
    api: HostileApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    api.behaviour = "trickle"
    started = time.monotonic()
    line = await cli(capsys, api, tmp_path, "simulate", "--request-timeout", "1s")
    assert line == (
        f"volsched: {api.url}: cannot list nodes: no whole answer within 1s (--request-timeout)"
    )
    assert time.monotonic() - started < 3


async def test_a_page_larger_than_the_limit_is_not_read_further(
    api: HostileApi,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(live, "_limits", lambda args: ListLimits(max_page_bytes=MIB))
    api.behaviour = "huge"
    line = await cli(capsys, api, tmp_path, "snapshot")
    assert line == (
        f"volsched: {api.url}: cannot list nodes: a page of more than the 1.0 MiB allowed per "
        "page (4,096.0 MiB in all)"
    )


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b'{"items": "x"}', "items is a string, not a list"),
        (page(items=[1, 2]), "items[0] is a int, not an object"),
        (page(items=[{"metadata": "x"}]), "items[0].metadata is a string, not a mapping"),
        (page(metadata="x"), "metadata is a string, not a mapping"),
        (page(token=5), "metadata.continue is a int, not a string"),
        (b"[1, 2]", "the answer is a list, not a list object"),
        (b"[" * 2000 + b"]" * 2000, "the answer: the response is nested too deeply to read"),
        (b'{"items": [', "the answer: the response is not JSON that can be read"),
    ],
)
async def test_a_list_of_the_wrong_shape_is_one_line_naming_kind_and_field(
    api: HostileApi, tmp_path: Path, capsys: pytest.CaptureFixture[str], body: bytes, problem: str
) -> None:
    api.behaviour, api.body = "fixed", body
    line = await cli(capsys, api, tmp_path, "simulate")
    assert line.startswith(f"volsched: {api.url}: cannot list nodes: {problem}"), line


async def test_a_well_behaved_server_is_read(
    api: HostileApi, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kubeconfig = str(write_kubeconfig(tmp_path / "kubeconfig", api.url))
    status = await asyncio.to_thread(main, ["simulate", "--kubeconfig", kubeconfig, "-o", "json"])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert json.loads(captured.out) == {"pods": [], "volumes": []}


async def test_the_daemons_own_list_of_a_trickled_body_is_an_api_error(
    api: HostileApi, tmp_path: Path
) -> None:
    """The daemon's client (which the watches retry on ``ApiError``) used to raise the
    bare TimeoutError of a body still arriving at its request timeout."""
    api.behaviour = "trickle"
    kubeconfig = str(write_kubeconfig(tmp_path / "kubeconfig", api.url))
    client = KubeClient(await connect(kubeconfig), request_timeout_seconds=0.5)
    started = time.monotonic()
    try:
        with pytest.raises(ApiError, match="GET /api/v1/nodes: no whole answer in time"):
            await client.list("Node")
    finally:
        await client.close()
    assert time.monotonic() - started < 2
