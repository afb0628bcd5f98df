"""The one boundary to the API server: list, watch, get, replace, patch, create, bind.

Everything above it deals in raw JSON dicts and volsched's errors (``Conflict``,
``NotFound``, ``Gone``, ``ApiError``); everything below it is a ``Connection`` — the
credentials of a kubeconfig or of the in-cluster service account (refreshed tokens
included), TLS, and an aiohttp session with its pool of kept-alive connections — with
requests built and sent by ``sending``. Bodies go out and come back as raw JSON (``decoding``: orjson,
managedFields dropped; ``reading``: answers as errors, events and list items, object by
object when one object cannot be decoded) — no generated model objects on the hot path,
and no deserialisation surprises:

- a pod ``binding`` POST answers with a ``Status`` (201), which the generated
  ``create_namespaced_binding`` cannot deserialise (it raises ValueError although the
  binding succeeded); we only look at the HTTP status;
- kubernetes-asyncio's default request timeout (300 s) would cut long watches. A watch
  here ends when the server ends it, at the timeoutSeconds it asked for; its own
  deadline is a margin past that, so a quiet stream (no event, no bookmark: a kind
  nobody writes) is never cut, and one the server stopped serving is. A dead peer is
  noticed sooner through TCP keepalive on the watch's connection, which plays the part
  of client-go's HTTP/2 health check (a ping after 30 s without a frame, answered within
  15 s).
"""

from __future__ import annotations

import builtins
from collections.abc import AsyncIterator, Callable, Mapping
from typing import Any

import aiohttp

from volsched.cache.errors import ApiError, NotFound
from volsched.daemon.kube.connection import Connection
from volsched.daemon.kube.decoding import Skipped, Undecodable, decoded, strip_body
from volsched.daemon.kube.keepalive import keep_alive
from volsched.daemon.kube.kubeconfig import connect
from volsched.daemon.kube.ownership import (
    SHADOW_WRITERS,
    WRITES,
    NotLeader,
    Writer,
    check_write,
)
from volsched.daemon.kube.reading import error_of, list_version, page, watch_event, whole_items
from volsched.daemon.kube.resources import resource
from volsched.daemon.kube.sending import close_write_pool, send, send_write

Raw = dict[str, Any]
# Asks a list for each item's metadata only (kube-apiserver's PartialObjectMetadataList).


def _query(**parameters: str | None) -> list[tuple[str, str]]:
    """A query string's parameters, those given a value only, in the order given."""
    return [(name, value) for name, value in parameters.items() if value]


def _watch_query(
    resource_version: str, timeout_seconds: int, field_selector: str | None
) -> list[tuple[str, str]]:
    return _query(
        watch="true",
        resourceVersion=resource_version,
        allowWatchBookmarks="true",
        timeoutSeconds=str(timeout_seconds),
        fieldSelector=field_selector,
    )


def _stalled(kind: str, overdue_seconds: float, timeout_seconds: int) -> ApiError:
    """The server ends every watch at its timeoutSeconds; one still open well past it is
    not being served (a stall with the connection kept open)."""
    return ApiError(
        0,
        f"watch {kind}: still open {overdue_seconds:g}s after its "
        f"timeoutSeconds ({timeout_seconds}s); the stream had stalled",
    )


async def _read(response: aiohttp.ClientResponse, path: str) -> tuple[int, bytes]:
    """A GET's status and body; the request's timeout covers the body, so one sent a
    byte at a time ends here, as an ``ApiError`` like any failed request."""
    try:
        async with response:
            return response.status, await response.read()
    except TimeoutError:
        raise ApiError(0, f"GET {path}: no whole answer in time") from None
    except aiohttp.ClientError as exc:
        raise ApiError(0, f"GET {path}: the answer broke off: {exc}") from None


class KubeClient:
    """Raw-JSON access to the API server through one connection."""

    def __init__(
        self,
        connection: Connection,
        request_timeout_seconds: float = 30.0,
        writer: Writer | None = None,
        writes: frozenset[tuple[str, str]] | None = None,
        leading: Callable[[], bool] | None = None,
        shadow: bool = False,
    ) -> None:
        self.connection = connection
        # Which writes this client sends (see ``ownership``): None for any but another
        # system's objects, else exactly these.
        self.writer = writer
        self.writes = writes
        # For a leader's writer: whether this replica still holds the lease.
        self.leading = leading
        # A shadow's root: every writer's client it hands out is read-only.
        self.shadow = shadow
        self.request_timeout = aiohttp.ClientTimeout(total=request_timeout_seconds)

    @classmethod
    async def connect(cls, kubeconfig: str | None) -> KubeClient:
        """From a kubeconfig file, or the in-cluster service account when none is given
        and the process runs in a pod."""
        return cls(await connect(kubeconfig))

    def for_writer(self, writer: Writer, leading: Callable[[], bool] | None = None) -> KubeClient:
        """The same connection, sending only ``writer``'s writes — and, with ``leading``,
        only while it says this replica leads. From a shadow's root, no write at all
        unless the writer is one of ``SHADOW_WRITERS``."""
        seconds = self.request_timeout.total or 30.0
        if self.shadow and writer not in SHADOW_WRITERS:
            return type(self)(self.connection, seconds, writer, frozenset(), shadow=True)
        return type(self)(self.connection, seconds, writer, WRITES[writer], leading, self.shadow)

    def read_only(self) -> KubeClient:
        """The same connection, sending no write at all."""
        seconds = self.request_timeout.total or 30.0
        return type(self)(self.connection, seconds, writes=frozenset(), shadow=self.shadow)

    def shadowed(self) -> KubeClient:
        """The same connection as a shadow's root: itself read-only, and every client
        scoped from it read-only but for ``SHADOW_WRITERS`` (see ``ownership``)."""
        seconds = self.request_timeout.total or 30.0
        return type(self)(self.connection, seconds, writes=frozenset(), shadow=True)

    def _may(self, verb: str, target: str) -> None:
        check_write(self.writer, self.writes, verb, target)
        if self.leading is not None and not self.leading():
            raise NotLeader(
                f"not the leader any more: volsched's {self.writer} sends no {verb} {target}"
            )

    async def close(self) -> None:
        await close_write_pool(self.connection)
        await self.connection.close()

    async def _call(
        self,
        method: str,
        path: str,
        query: list[tuple[str, str]] | None = None,
        body: Any = None,
        content_type: str = "application/json",
        timeout: aiohttp.ClientTimeout | None = None,
        accept: str = "application/json",
    ) -> aiohttp.ClientResponse:
        """Send one request on the connection's session, authenticated."""
        timeout = timeout or self.request_timeout
        return await send(self.connection, method, path, query, body, content_type, timeout, accept)

    async def read(self, path: str, **kwargs: Any) -> bytes:
        """A GET's body undecoded: ``_json`` decodes it, ``metadata_lists`` reads its own."""
        status, data = await _read(await self._call("GET", path, **kwargs), path)
        if not 200 <= status <= 299:
            raise error_of(status, data)
        return data

    async def _json(self, method: str, path: str, *, reply: bool = True, **kwargs: Any) -> Raw:
        """The decoded answer; with ``reply`` False the answer of a write nobody reads is
        only checked for success (an Event created, a Binding's Status), not decoded."""
        if method == "GET":
            status, data = 200, await self.read(path, **kwargs)
        else:  # a write: on a kept-alive connection (``write_connections``)
            status, data = await send_write(
                self.connection, method, path, **kwargs, timeout=self.request_timeout
            )
            if not 200 <= status <= 299:
                raise error_of(status, data)
        if not reply:
            return {}
        body = strip_body(decoded(data, f"{method} {path}")) if data else {}
        if not isinstance(body, dict):
            raise ApiError(status, f"{method} {path}: unexpected response body")
        return body

    async def list(
        self,
        kind: str,
        namespace: str | None = None,
        field_selector: str | None = None,
        label_selector: str | None = None,
        limit: int | None = None,
    ) -> tuple[list[Raw], str]:
        query = _query(
            limit=None if limit is None else str(limit),
            fieldSelector=field_selector,
            labelSelector=label_selector,
        )
        body = await self._json("GET", resource(kind).path(namespace), query=query)
        return whole_items(body, kind), list_version(body)

    async def list_pages(
        self,
        kind: str,
        page_size: int = 500,
        field_selector: str | None = None,
        accept: str = "application/json",
        skipped: Skipped | None = None,
        prune_deep: bool = False,
    ) -> AsyncIterator[tuple[builtins.list[Raw], str]]:
        """A whole list in pages of ``page_size`` (``limit`` / ``continue``): each page
        with the list's resourceVersion. An expired continue token is a ``Gone``.
        ``accept`` may ask for ``metadata_lists.PARTIAL_METADATA`` items (each its
        ``metadata`` only). ``skipped`` and ``prune_deep``: see ``_page``."""
        token = ""
        path = resource(kind).path()
        while True:
            query = _query(
                limit=str(page_size), fieldSelector=field_selector, **{"continue": token}
            )
            data = await self.read(path, query=query, accept=accept)
            body = page(data, f"GET {path}", kind, skipped, prune_deep)
            yield whole_items(body, kind), list_version(body)
            token = str((body.get("metadata") or {}).get("continue") or "")
            if not token:
                return

    async def watch(
        self,
        kind: str,
        resource_version: str,
        timeout_seconds: int,
        overdue_seconds: float,
        field_selector: str | None = None,
        prune_deep: bool = False,
    ) -> AsyncIterator[Raw | Undecodable]:
        """Events after ``resource_version`` until the server ends the stream, which it
        does at ``timeout_seconds``; an event whose object cannot be decoded comes as an
        ``Undecodable`` instead (see ``_watch_event``), and the stream goes on.

        Raises ``Gone`` for 410 (as an HTTP status or an ERROR event) and ``ApiError`` for
        a broken connection, or a stream still open ``overdue_seconds`` past its timeout.
        """
        query = _watch_query(resource_version, timeout_seconds, field_selector)
        deadline = timeout_seconds + overdue_seconds
        timeout = aiohttp.ClientTimeout(total=deadline, sock_connect=10)
        response = await self._call("GET", resource(kind).path(), query=query, timeout=timeout)
        async with response:
            if not 200 <= response.status <= 299:
                raise error_of(response.status, await response.read())
            connection = response.connection
            if connection is not None and connection.transport is not None:
                keep_alive(connection.transport.get_extra_info("socket"))
            try:
                async for line in response.content:
                    if not line.strip():
                        continue
                    for event in watch_event(line, kind, prune_deep):
                        yield event
            except (aiohttp.ServerTimeoutError, TimeoutError):
                raise _stalled(kind, overdue_seconds, timeout_seconds) from None
            except (aiohttp.ClientPayloadError, aiohttp.ClientConnectionError) as exc:
                raise ApiError(0, f"watch {kind}: {exc}") from None

    async def served(self, api_version: str) -> frozenset[str]:
        """The resources (plurals) the server serves in a group version, from its
        discovery document; none when the group is not installed (404)."""
        try:
            body = await self._json("GET", f"/apis/{api_version}")
        except NotFound:
            return frozenset()
        found = body.get("resources")
        entries = found if isinstance(found, builtins.list) else []
        return frozenset(str(e.get("name")) for e in entries if isinstance(e, dict))

    async def get(self, kind: str, name: str, namespace: str | None = None) -> Raw:
        return await self._json("GET", resource(kind).path(namespace, name))

    async def replace(self, kind: str, obj: Mapping[str, Any]) -> Raw:
        """PUT the whole object; its resourceVersion makes a concurrent change a 409."""
        self._may("replace", kind)
        meta = obj.get("metadata") or {}
        path = resource(kind).path(meta.get("namespace"), meta.get("name"))
        return await self._json("PUT", path, body=dict(obj))

    async def patch(
        self,
        kind: str,
        name: str,
        patch: Mapping[str, Any],
        namespace: str | None = None,
        subresource: str = "",
        strategic: bool = False,
    ) -> Raw:
        """A merge patch; ``strategic`` for lists merged by key (pod conditions)."""
        self._may("patch", f"{kind}/{subresource}" if subresource else kind)
        path = resource(kind).path(namespace, name, subresource)
        kind_of_patch = "strategic-merge" if strategic else "merge"
        content_type = f"application/{kind_of_patch}-patch+json"
        return await self._json("PATCH", path, body=dict(patch), content_type=content_type)

    async def create(
        self,
        kind: str,
        obj: Mapping[str, Any],
        namespace: str | None = None,
        *,
        reply: bool = True,
    ) -> Raw:
        """POST; with ``reply`` False the created object is not decoded ({} instead)."""
        self._may("create", kind)
        path = resource(kind).path(namespace)
        return await self._json("POST", path, body=dict(obj), reply=reply)

    async def delete(self, kind: str, name: str, namespace: str | None = None) -> None:
        self._may("delete", kind)
        await self._json("DELETE", resource(kind).path(namespace, name))

    async def bind_pod(self, namespace: str, name: str, uid: str, node: str) -> None:
        """POST pods/binding. The server answers 201 with a Status (not a Binding)."""
        self._may("create", "Pod/binding")
        body = {
            "apiVersion": "v1",
            "kind": "Binding",
            "metadata": {"name": name, "namespace": namespace, "uid": uid},
            "target": {"apiVersion": "v1", "kind": "Node", "name": node},
        }
        path = resource("Pod").path(namespace, name, "binding")
        await self._json("POST", path, body=body, reply=False)
