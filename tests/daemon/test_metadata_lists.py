"""Reading metadata-only lists for a warm start's proofs: each object's key and
resourceVersion and the list's, whatever else the items carry; a body that is not such
a list is one ``ApiError`` naming the request (never a traceback, never a partial
answer). End to end against the realistic emulator over HTTPS, paged."""

from __future__ import annotations

from collections.abc import AsyncIterator

import orjson
import pytest

from tests.emulator.support import node, pod
from volsched.cache.errors import ApiError
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.kube.metadata_lists import VersionsPage, version_pages, versions_page
from volsched.emulator import ApiServer, ControllerSettings

MANAGED = [
    {
        "manager": "kubelet",
        "operation": "Update",
        "fieldsType": "FieldsV1",
        "fieldsV1": {"f:status": {"f:conditions": {}}},
    }
]


def item(name: str, version: str, namespace: str | None = None, **meta: object) -> dict:
    metadata: dict[str, object] = {"name": name, "resourceVersion": version, **meta}
    if namespace is not None:
        metadata["namespace"] = namespace
    return {"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1", "metadata": metadata}


def body(items: object, version: str = "90", token: str | None = None) -> bytes:
    meta: dict[str, str] = {"resourceVersion": version}
    if token is not None:
        meta["continue"] = token
    return orjson.dumps({"kind": "PartialObjectMetadataList", "metadata": meta, "items": items})


READABLE = [
    pytest.param(
        body([item("n1", "11", managedFields=MANAGED, labels={"resourceVersion": "1"})]),
        False,
        VersionsPage({"n1": "11"}, "90", ""),
        id="cluster-scoped, managedFields and a label named like the field ignored",
    ),
    pytest.param(
        body([item("a", "5", "team"), item("b", "6")]),
        True,
        VersionsPage({"team/a": "5", "default/b": "6"}, "90", ""),
        id="namespaced: namespace/name, no namespace read as default",
    ),
    pytest.param(
        body([item("n1", "11")], token="abc"),
        False,
        VersionsPage({"n1": "11"}, "90", "abc"),
        id="a continue token for the next page",
    ),
    pytest.param(body(None), False, VersionsPage({}, "90", ""), id="items null: empty"),
    pytest.param(
        orjson.dumps({"items": [{"metadata": {"name": "x"}}]}),
        False,
        VersionsPage({"x": ""}, "", ""),
        id="fields absent: empty strings, which match no stored version",
    ),
]


@pytest.mark.parametrize(("data", "namespaced", "expected"), READABLE)
def test_a_metadata_list_is_read_into_keys_and_versions(
    data: bytes, namespaced: bool, expected: VersionsPage
) -> None:
    assert versions_page(data, namespaced, "GET /api/v1/nodes") == expected


UNREADABLE = [
    pytest.param(b"{not json", "not a metadata list that can be read", id="not JSON"),
    pytest.param(b"[]", "not a metadata list that can be read", id="an array, not a list"),
    pytest.param(
        body([item("n1", 11)]), "$.items[0].metadata.resourceVersion", id="a number for a version"
    ),
    pytest.param(body({"n1": "11"}), "$.items", id="items an object"),
    pytest.param(
        orjson.dumps({"items": [{"metadata": None}]}), "$.items[0].metadata", id="metadata null"
    ),
]


@pytest.mark.parametrize(("data", "named"), UNREADABLE)
def test_a_body_that_is_not_a_metadata_list_is_one_api_error(data: bytes, named: str) -> None:
    with pytest.raises(ApiError) as raised:
        versions_page(data, False, "GET /api/v1/nodes")
    assert raised.value.status == 0
    assert str(raised.value).startswith("0: GET /api/v1/nodes: ")
    assert named in str(raised.value)


@pytest.fixture
async def server() -> AsyncIterator[ApiServer]:
    emulator = ApiServer(controllers=ControllerSettings.none(), realistic=True)
    await emulator.start()
    yield emulator
    await emulator.stop()


async def test_every_page_of_a_realistic_list_is_read(
    server: ApiServer, client: KubeClient
) -> None:
    server.load([node(f"n{i}") for i in range(5)])
    server.load([pod(f"p{i}", namespace="team", nodeName=f"n{i}") for i in range(3)])
    nodes, _ = await client.list("Node")
    pods, version = await client.list("Pod")
    pages = [p async for p in version_pages(client, "/api/v1/nodes", False, 2)]
    assert [len(p.versions) for p in pages] == [2, 2, 1]
    assert all(p.continue_token for p in pages[:-1]) and not pages[-1].continue_token
    listed = {k: v for p in pages for k, v in p.versions.items()}
    assert listed == {n["metadata"]["name"]: n["metadata"]["resourceVersion"] for n in nodes}
    pod_pages = [p async for p in version_pages(client, "/api/v1/pods", True, 500)]
    assert pod_pages[0].versions == {
        f"team/{p['metadata']['name']}": p["metadata"]["resourceVersion"] for p in pods
    }
    assert pod_pages[0].resource_version == version


async def test_a_refused_list_is_the_api_error_of_its_status(client: KubeClient) -> None:
    with pytest.raises(ApiError) as raised:
        _ = [p async for p in version_pages(client, "/apis/example.com/v1/widgets", False, 10)]
    assert raised.value.status == 404


@pytest.mark.parametrize(
    "bad",
    [
        b'{"metadata":{"name":"bad","resourceVersion":"12","labels":{"a":"\\ud800"}}}',
        b'{"metadata":{"name":"bad","resourceVersion":"12"},"x":'
        + b"[" * 1500
        + b"]" * 1500
        + b"}",
    ],
    ids=["a lone surrogate", "nesting 1,500 deep"],
)
def test_an_item_that_cannot_be_decoded_is_left_out(bad: bytes) -> None:
    """As the relist and the watch leave it out of the cache, so a warm start's proof
    can still match."""
    good = orjson.dumps(item("n1", "11"))
    data = b'{"metadata":{"resourceVersion":"90"},"items":[' + good + b"," + bad + b"]}"
    assert versions_page(data, False, "GET /api/v1/nodes") == VersionsPage({"n1": "11"}, "90", "")
