"""A thin HTTP client for the emulator tests: raw requests, JSON answers, watch readers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable
from typing import Any

import aiohttp

Raw = dict[str, Any]


class WatchReader:
    """Reads a watch stream one newline-delimited JSON event at a time."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self.response = response

    async def next(self, timeout: float = 2.0) -> Raw:
        line = await asyncio.wait_for(self.response.content.readline(), timeout)
        if not line:
            raise EOFError("the watch stream ended")
        event: Raw = json.loads(line)
        return event

    async def next_change(self, timeout: float = 2.0) -> Raw:
        """The next event that is not a BOOKMARK."""
        while True:
            event = await self.next(timeout)
            if event["type"] != "BOOKMARK":
                return event

    async def silent_for(self, seconds: float) -> bool:
        try:
            event = await self.next(seconds)
        except TimeoutError:
            return True
        raise AssertionError(f"unexpected event {event}")

    async def until_eof(self, timeout: float = 2.0) -> list[Raw]:
        events = []
        while True:
            try:
                events.append(await self.next(timeout))
            except EOFError:
                return events

    def close(self) -> None:
        self.response.close()


class Api:
    def __init__(self, session: aiohttp.ClientSession) -> None:
        self.session = session

    async def request(
        self,
        method: str,
        path: str,
        body: Any = None,
        content_type: str = "application/json",
        params: dict[str, str] | None = None,
    ) -> tuple[int, Raw]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": content_type} if data is not None else {}
        async with self.session.request(
            method, path, data=data, headers=headers, params=params
        ) as response:
            assert response.content_type == "application/json", await response.text()
            return response.status, await response.json()

    async def get(self, path: str, **params: str) -> tuple[int, Raw]:
        return await self.request("GET", path, params=params or None)

    async def post(self, path: str, body: Any) -> tuple[int, Raw]:
        return await self.request("POST", path, body)

    async def put(self, path: str, body: Any) -> tuple[int, Raw]:
        return await self.request("PUT", path, body)

    async def patch(
        self, path: str, body: Any, content_type: str = "application/merge-patch+json"
    ) -> tuple[int, Raw]:
        return await self.request("PATCH", path, body, content_type)

    async def delete(self, path: str, body: Any = None) -> tuple[int, Raw]:
        return await self.request("DELETE", path, body)

    async def ok(self, method: str, path: str, body: Any = None) -> Raw:
        status, answer = await self.request(method, path, body)
        assert status in (200, 201), answer
        return answer

    async def watch(self, path: str, **params: str) -> WatchReader:
        response = await self.session.get(path, params={"watch": "true", **params})
        assert response.status == 200, await response.text()
        return WatchReader(response)


async def eventually(check: Callable[[], Any], timeout: float = 3.0, what: str = "") -> Any:
    """Poll ``check`` until it returns something truthy (and return that)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        result = check()
        if isinstance(result, Awaitable):
            result = await result
        if result:
            return result
        if loop.time() > deadline:
            raise AssertionError(
                f"{what or 'condition'} not met within {timeout}s (last: {result!r})"
            )
        await asyncio.sleep(0.02)


def node(name: str, ready: bool = True, labels: dict[str, str] | None = None) -> Raw:
    status: Raw = {"allocatable": {"cpu": "4", "memory": "8Gi", "pods": "110"}}
    if ready:
        status["conditions"] = [{"type": "Ready", "status": "True"}]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
        "status": status,
    }


def pod(
    name: str, namespace: str = "default", labels: dict[str, str] | None = None, **spec: Any
) -> Raw:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": labels or {}},
        "spec": {"containers": [{"name": "main", "image": "busybox"}], **spec},
    }


def pv(
    name: str,
    size: str = "10Gi",
    storage_class: str = "local",
    claim: tuple[str, str] | None = None,
    labels: dict[str, str] | None = None,
) -> Raw:
    spec: Raw = {
        "capacity": {"storage": size},
        "accessModes": ["ReadWriteOnce"],
        "storageClassName": storage_class,
        "local": {"path": f"/mnt/{name}"},
    }
    if claim:
        spec["claimRef"] = {"namespace": claim[0], "name": claim[1]}
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": spec,
    }


def pvc(
    name: str,
    size: str = "5Gi",
    storage_class: str | None = "local",
    namespace: str = "default",
    annotations: dict[str, str] | None = None,
) -> Raw:
    spec: Raw = {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": size}}}
    if storage_class is not None:
        spec["storageClassName"] = storage_class
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": name, "namespace": namespace, "annotations": annotations or {}},
        "spec": spec,
    }


def storage_class(
    name: str,
    provisioner: str = "kubernetes.io/no-provisioner",
    mode: str = "WaitForFirstConsumer",
    parameters: dict[str, str] | None = None,
) -> Raw:
    body: Raw = {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name},
        "provisioner": provisioner,
        "volumeBindingMode": mode,
    }
    if parameters:
        body["parameters"] = parameters
    return body


def crd(
    kind: str,
    plural: str,
    group: str = "volsched.io",
    version: str = "v1alpha1",
    scope: str = "Cluster",
    status_subresource: bool = True,
) -> Raw:
    served: Raw = {
        "name": version,
        "served": True,
        "storage": True,
        "schema": {
            "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}
        },
    }
    if status_subresource:
        served["subresources"] = {"status": {}}
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{plural}.{group}"},
        "spec": {
            "group": group,
            "scope": scope,
            "names": {
                "kind": kind,
                "plural": plural,
                "singular": kind.lower(),
                "listKind": f"{kind}List",
            },
            "versions": [served],
        },
    }


VOLSCHED_CRDS = (
    crd("StorageNode", "storagenodes"),
    crd("Volume", "volumes"),
    crd("Replica", "replicas"),
)
