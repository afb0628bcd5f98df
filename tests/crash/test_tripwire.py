"""The emulator's tripwire, which the crash suite kills daemons with: on the n-th matching
write, run an action just before the write (which is then not applied) or just after
it was applied, before the answer leaves; and a real process killed there."""

from __future__ import annotations

import asyncio
import json
import sys

from tests.crash.rounds import classify
from tests.emulator.support import Api, eventually, pv
from volsched.emulator import ApiServer, WriteRequest

PVS = "/api/v1/persistentvolumes"


def claim_ref_of(server: ApiServer, name: str) -> object:
    found = server.get("PersistentVolume", name)
    assert found is not None
    return found["spec"].get("claimRef")


def prebinding(write: WriteRequest) -> bool:
    return classify(write) == "prebind PV"


async def test_before_the_write_the_action_runs_and_the_write_is_not_applied(
    api: Api, server: ApiServer
) -> None:
    created = await api.ok("POST", PVS, pv("pv-1"))
    calls: list[tuple[str, int | None]] = []

    async def action(write: WriteRequest, status: int | None) -> None:
        calls.append((write.path, status))

    tripwire = server.faults.trip(prebinding, action, nth=2)
    # A release (no claimRef) does not match; a GET is not a write.
    assert (await api.put(f"{PVS}/pv-1", created))[0] == 200
    assert (await api.get(f"{PVS}/pv-1"))[0] == 200
    current = (await api.get(f"{PVS}/pv-1"))[1]
    current["spec"]["claimRef"] = {"namespace": "default", "name": "c1"}
    assert (await api.put(f"{PVS}/pv-1", current))[0] == 200  # the first prebind
    current = (await api.get(f"{PVS}/pv-1"))[1]
    current["spec"]["claimRef"] = {"namespace": "default", "name": "c2"}
    status, error = await api.put(f"{PVS}/pv-1", current)
    assert (status, error["reason"]) == (503, "ServiceUnavailable")
    assert calls == [(f"{PVS}/pv-1", None)]
    assert tripwire.fired and not server.faults.tripwires_armed()
    assert claim_ref_of(server, "pv-1") == {"namespace": "default", "name": "c1"}
    # Fired once: the same write now goes through.
    assert (await api.put(f"{PVS}/pv-1", current))[0] == 200
    assert server.faults.requests("PUT")[-2].status == 503


async def test_after_the_write_the_action_runs_before_the_answer_is_sent(
    api: Api, server: ApiServer
) -> None:
    created = await api.ok("POST", PVS, pv("pv-1"))
    created["spec"]["claimRef"] = {"namespace": "default", "name": "c1"}
    release = asyncio.Event()
    seen: list[int | None] = []

    async def action(write: WriteRequest, status: int | None) -> None:
        seen.append(status)
        await release.wait()

    server.faults.trip(prebinding, action, after=True)
    put = asyncio.create_task(api.put(f"{PVS}/pv-1", created))
    await eventually(lambda: seen, what="the tripwire firing")
    assert seen == [200]
    assert claim_ref_of(server, "pv-1") == {"namespace": "default", "name": "c1"}
    await asyncio.sleep(0.05)
    assert not put.done()  # applied, and the client still has no answer
    release.set()
    assert (await put)[0] == 200


async def test_disarm_and_reset_leave_writes_alone(api: Api, server: ApiServer) -> None:
    fired: list[str] = []

    async def action(write: WriteRequest, status: int | None) -> None:
        fired.append(write.path)

    tripwire = server.faults.trip(lambda write: True, action)
    server.faults.disarm(tripwire)
    server.faults.trip(lambda write: True, action)
    server.faults.reset()
    assert (await api.post(PVS, pv("pv-1")))[0] == 201
    assert fired == []


async def test_a_client_killed_by_the_tripwire_never_hears_back(server: ApiServer) -> None:
    """The crash suite's use: the action SIGKILLs the writing process after the write."""
    body = pv("pv-1")
    script = (
        "import json, sys, urllib.request\n"
        f"request = urllib.request.Request({server.url + PVS!r}, method='POST',"
        " data=sys.stdin.buffer.read(), headers={'Content-Type': 'application/json'})\n"
        "urllib.request.urlopen(request)\n"
        "print('answered')\n"
    )
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-c",
        script,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
    )
    killed = asyncio.Event()

    async def kill(write: WriteRequest, status: int | None) -> None:
        process.kill()
        killed.set()
        await process.wait()

    server.faults.trip(lambda write: write.method == "POST", kill, after=True)
    stdout, _ = await process.communicate(json.dumps(body).encode())
    assert killed.is_set() and process.returncode == -9
    assert stdout == b""
    assert server.get("PersistentVolume", "pv-1") is not None
