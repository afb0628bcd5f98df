"""Shadow mode's no-write guarantee, where it is enforced: a shadow's root client hands
every writer a read-only client, so each write of the ownership table is refused before
a request is sent — except the reviews that authenticate the shadow's own callers."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from volsched.daemon.kube.client import KubeClient
from volsched.daemon.kube.ownership import SHADOW_WRITERS, WRITES, NotOwned, Writer
from volsched.emulator import ApiServer, ControllerSettings, write_kubeconfig

WRITES_OF_EACH = [
    (writer, verb, target) for writer in Writer for verb, target in sorted(WRITES[writer])
]


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[tuple[KubeClient, ApiServer]]:
    server = ApiServer(ControllerSettings.none())
    await server.start()
    connected = await KubeClient.connect(str(write_kubeconfig(tmp_path / "kc", server.url)))
    try:
        yield connected, server
    finally:
        await connected.close()
        await server.stop()


def test_reviews_are_the_only_writes_a_shadow_keeps() -> None:
    assert {Writer.AUTHENTICATION} == SHADOW_WRITERS
    assert WRITES[Writer.AUTHENTICATION] == {
        ("create", "TokenReview"),
        ("create", "SubjectAccessReview"),
    }


@pytest.mark.parametrize(("writer", "verb", "target"), WRITES_OF_EACH)
async def test_a_shadow_refuses_every_write_but_its_reviews(
    client: tuple[KubeClient, ApiServer], writer: Writer, verb: str, target: str
) -> None:
    root, server = client
    shadow = root.shadowed()
    scoped = shadow.for_writer(writer)
    # Scoped again, or read-only, from a shadow's client: still a shadow's.
    assert scoped.shadow and scoped.read_only().shadow
    if writer in SHADOW_WRITERS:
        assert (verb, target) in scoped.writes  # type: ignore[operator]
        return
    server.faults.reset()
    with pytest.raises(NotOwned, match=f"may not {verb} {target}"):
        await send(scoped, verb, target)
    with pytest.raises(NotOwned):
        await send(shadow, verb, target)
    assert server.faults.requests() == []


async def send(client: KubeClient, verb: str, target: str) -> None:
    kind, _, sub = target.partition("/")
    if (verb, target) == ("create", "Pod/binding"):
        await client.bind_pod("default", "p", "uid", "n1")
    elif verb == "create":
        await client.create(kind, {"metadata": {"name": "x"}}, "default")
    elif verb == "replace":
        await client.replace(kind, {"metadata": {"name": "x", "namespace": "default"}})
    elif verb == "patch":
        await client.patch(kind, "x", {}, "default", subresource=sub)
    else:
        await client.delete(kind, "x", "default")


async def test_a_shadow_still_reads(client: tuple[KubeClient, ApiServer]) -> None:
    root, server = client
    nodes, _ = await root.shadowed().for_writer(Writer.BINDING).list("Node")
    assert nodes == []
    assert [r.method for r in server.faults.requests()] == ["GET"]
