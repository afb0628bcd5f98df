"""Only the owner of a kind writes it, checked where every write leaves volsched: the API
client. A write outside its writer's table is refused before a request is sent, and no
client of volsched's writes a Longhorn object."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from tests.unit.longhorn.objects import longhorn_replica
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.kube.ownership import WRITES, NotOwned, Writer, check_write
from volsched.emulator import ApiServer, ControllerSettings, write_kubeconfig

# (writer, verb, target, allowed): the writes each part of volsched makes, and some it
# must not.
CASES = [
    (Writer.BINDING, "replace", "PersistentVolume", True),
    (Writer.BINDING, "patch", "PersistentVolumeClaim", True),
    (Writer.BINDING, "create", "Pod/binding", True),
    (Writer.BINDING, "patch", "Pod/status", True),
    (Writer.BINDING, "delete", "Pod", True),
    (Writer.BINDING, "create", "Event", True),
    (Writer.BINDING, "patch", "Event", True),
    (Writer.BINDING, "replace", "Event", False),
    (Writer.BINDING, "create", "Replica", True),
    (Writer.BINDING, "replace", "Pod", False),
    (Writer.BINDING, "delete", "PersistentVolume", False),
    (Writer.BINDING, "create", "Lease", False),
    (Writer.BINDING, "create", "LonghornReplica", False),
    (Writer.BINDING, "patch", "LonghornVolume", False),
    (Writer.LEADER_ELECTION, "replace", "Lease", True),
    (Writer.LEADER_ELECTION, "create", "Pod/binding", False),
    (Writer.AUTHENTICATION, "create", "TokenReview", True),
    (Writer.AUTHENTICATION, "create", "SubjectAccessReview", True),
    (Writer.AUTHENTICATION, "patch", "Pod/status", False),
    (Writer.AUTHENTICATION, "create", "Event", False),
]


@pytest.mark.parametrize(("writer", "verb", "target", "allowed"), CASES)
def test_each_writer_sends_only_its_own_writes(
    writer: Writer, verb: str, target: str, allowed: bool
) -> None:
    if allowed:
        check_write(writer, WRITES[writer], verb, target)
    else:
        with pytest.raises(NotOwned, match=f"{verb} {target}"):
            check_write(writer, WRITES[writer], verb, target)


@pytest.mark.parametrize("target", ["LonghornVolume", "LonghornReplica", "LonghornNode"])
def test_not_even_an_unscoped_client_writes_longhorn_objects(target: str) -> None:
    with pytest.raises(NotOwned, match=re.escape("volsched does not write longhorn.io objects")):
        check_write(None, None, "create", target)


def test_a_read_only_client_writes_nothing() -> None:
    with pytest.raises(NotOwned, match="a read-only client may not create Event"):
        check_write(None, frozenset(), "create", "Event")


@pytest.fixture
async def server() -> AsyncIterator[ApiServer]:
    emulator = ApiServer(ControllerSettings.none())
    await emulator.start()
    yield emulator
    await emulator.stop()


async def test_a_refused_write_never_reaches_the_api_server(
    server: ApiServer, tmp_path: Path
) -> None:
    client = await KubeClient.connect(str(write_kubeconfig(tmp_path / "kc", server.url)))
    try:
        binding = client.for_writer(Writer.BINDING)
        server.faults.reset()
        with pytest.raises(NotOwned):
            await binding.create(
                "LonghornReplica", longhorn_replica("r", "v", "n1"), "longhorn-system"
            )
        with pytest.raises(NotOwned):
            await client.read_only().delete("Pod", "p", "default")
        with pytest.raises(NotOwned):
            await client.for_writer(Writer.LEADER_ELECTION).bind_pod("default", "p", "u", "n1")
        assert server.faults.requests() == []
        # Reads go through whatever the scope.
        nodes, _ = await client.read_only().list("Node")
        assert nodes == []
        assert len(server.faults.requests("GET")) == 1
    finally:
        await client.close()
