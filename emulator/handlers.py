"""HTTP: turn a request into a registry call and its answer into Kubernetes JSON.

Paths are parsed as kube-apiserver does: ``/api/v1/...`` for the core group,
``/apis/{group}/{version}/...`` for the others, then ``namespaces/{ns}/{plural}`` or
``{plural}``, an optional ``{name}`` and an optional subresource.  Errors are always
``kind: Status`` JSON (see ``errors``), never HTML.
"""

from __future__ import annotations

import base64
import bisect
import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aiohttp import web

from volsched.emulator import discovery
from volsched.emulator.binding import bind
from volsched.emulator.bookmark_timing import ApiserverBookmarks
from volsched.emulator.errors import ApiError, bad_request, method_not_allowed
from volsched.emulator.faults import Faults
from volsched.emulator.partial_metadata import partial_metadata_list, wants_partial_metadata
from volsched.emulator.raw import Raw, name_of, namespace_of
from volsched.emulator.registry import Registry, serve
from volsched.emulator.resources import ResourceType
from volsched.emulator.selectors import Matcher, matcher, parse_field_selector, parse_label_selector
from volsched.emulator.watching import WatchRequest, WatchStream

# Set by the server's middleware: logs a streaming request once its headers are sent.
ON_OPEN = web.RequestKey[Callable[[int], None]]("on_open")

TRUE_WORDS = ("1", "t", "T", "true", "TRUE", "True")  # Go's strconv.ParseBool


@dataclass(frozen=True, slots=True)
class Target:
    resource: ResourceType
    namespace: str | None  # None: all namespaces (or a cluster-scoped resource)
    name: str
    subresource: str


def not_found_path() -> ApiError:
    return ApiError(404, "NotFound", "the server could not find the requested resource")


def parse_target(registry: Registry, segments: list[str]) -> Target | None:
    """The resource a path names, None for a path that is not a resource path."""
    if segments[:2] == ["api", "v1"]:
        group, version, rest = "", "v1", segments[2:]
    elif len(segments) >= 3 and segments[0] == "apis":
        group, version, rest = segments[1], segments[2], segments[3:]
    else:
        return None
    if not rest:
        return None
    table = registry.resources
    if rest[0] == "namespaces" and len(rest) >= 3:
        resource = table.lookup(group, version, rest[2])
        if resource is not None and resource.namespaced:
            if len(rest) > 5:
                raise not_found_path()
            return Target(resource, rest[1], _at(rest, 3), _at(rest, 4))
    resource = table.lookup(group, version, rest[0])
    if resource is None or len(rest) > 3:
        raise not_found_path()
    if resource.namespaced and len(rest) > 1:
        raise not_found_path()
    return Target(resource, None, _at(rest, 1), _at(rest, 2))


def _strip_watch_segment(segments: list[str]) -> bool:
    """Remove the ``watch`` of ``/api/v1/watch/...`` or ``/apis/g/v/watch/...``."""
    index = 2 if segments[:1] == ["api"] else 3
    if len(segments) > index and segments[index] == "watch" and segments[0] in ("api", "apis"):
        del segments[index]
        return True
    return False


def _at(items: list[str], index: int) -> str:
    return items[index] if len(items) > index else ""


def json_response(body: Any, status: int = 200) -> web.Response:
    return web.Response(
        body=json.dumps(body, separators=(",", ":")).encode(),
        status=status,
        content_type="application/json",
    )


def error_response(error: ApiError) -> web.Response:
    response = json_response(error.status(), error.code)
    if error.code == 429:
        response.headers["Retry-After"] = "1"
    return response


async def read_json(request: web.Request, required: bool = True) -> Any:
    data = await request.read()
    if not data.strip():
        if required:
            raise bad_request("the request body is empty")
        return None
    try:
        return json.loads(data)
    except ValueError as exc:
        raise bad_request(f"couldn't get version/kind; json parse error: {exc}") from None


class Handlers:
    def __init__(
        self,
        registry: Registry,
        faults: Faults,
        bookmark_interval_seconds: float,
        watch_timeout_seconds: float | None,
        apiserver_bookmarks: ApiserverBookmarks | None = None,
    ) -> None:
        self.registry = registry
        # First pages of paginated lists, kept so that continuing costs a page, not a
        # scan of the whole kind (a few, newest last).
        self._list_snapshots: dict[tuple[Any, ...], tuple[list[tuple[str, str]], list[Raw]]] = {}
        self.faults = faults
        self.bookmark_interval_seconds = bookmark_interval_seconds
        self.watch_timeout_seconds = watch_timeout_seconds
        self.apiserver_bookmarks = apiserver_bookmarks

    async def handle(self, request: web.Request) -> web.StreamResponse:
        segments = [s for s in request.path.split("/") if s]
        answer = self._discovery(request, segments)
        if answer is not None:
            return answer
        # The deprecated ``/api/v1/watch/...`` form some older clients still use.
        legacy_watch = _strip_watch_segment(segments)
        target = parse_target(self.registry, segments)
        if target is None:
            raise not_found_path()
        if legacy_watch:
            if request.method != "GET" or target.subresource:
                raise method_not_allowed()
            if target.name:
                # A watch of one object is a watch of its collection, by name.
                selector = f"metadata.name={target.name}"
                return await self._list_or_watch(
                    request, Target(target.resource, target.namespace, "", ""), True, selector
                )
            return await self._list_or_watch(request, target, True)
        if request.method != "GET" and request.query.get("dryRun"):
            # Refused rather than silently persisted: a dry run must not change anything.
            raise bad_request("dryRun is not supported by the volsched emulator")
        if target.subresource and target.subresource not in target.resource.subresources:
            raise not_found_path()
        method = request.method
        if target.namespace is None and target.resource.namespaced and method != "GET":
            raise method_not_allowed()
        if not target.name:
            if method == "GET":
                return await self._list_or_watch(request, target)
            if method == "POST":
                return await self._create(request, target)
            if method == "DELETE":
                return await self._delete_collection(request, target)
            raise method_not_allowed()
        if target.subresource == "binding":
            if method != "POST":
                raise method_not_allowed()
            return json_response(
                bind(self.registry, target.namespace or "", target.name, await read_json(request)),
                201,
            )
        namespace = target.namespace or ""
        subresource = target.subresource or None
        if method == "GET":
            return json_response(
                serve(target.resource, self.registry.get(target.resource, namespace, target.name))
            )
        if method == "PUT":
            body = await read_json(request)
            updated = self.registry.update(
                target.resource, namespace, target.name, body, subresource
            )
            return json_response(serve(target.resource, updated))
        if method == "PATCH":
            body = await read_json(request)
            content_type = request.content_type
            patched = self.registry.patch(
                target.resource, namespace, target.name, content_type, body, subresource
            )
            return json_response(serve(target.resource, patched))
        if method == "DELETE" and not subresource:
            options = await read_json(request, required=False)
            deleted, gone = self.registry.delete(target.resource, namespace, target.name, options)
            return json_response(serve(target.resource, deleted), 200 if gone else 202)
        raise method_not_allowed()

    def _discovery(self, request: web.Request, segments: list[str]) -> web.StreamResponse | None:
        table = self.registry.resources
        if request.method != "GET":
            return None
        found: Raw | None = None
        if not segments:
            found = discovery.root_paths(table)
        elif segments in (["healthz"], ["livez"], ["readyz"]):
            return web.Response(text="ok", content_type="text/plain")
        elif segments == ["version"]:
            found = discovery.KUBERNETES_VERSION
        elif segments == ["api"]:
            found = discovery.core_versions(request.host)
        elif segments == ["api", "v1"]:
            found = discovery.resource_list(table, "", "v1")
        elif segments == ["apis"]:
            found = discovery.group_list(table)
        elif len(segments) == 2 and segments[0] == "apis":
            found = discovery.group(table, segments[1])
            if found is None:
                raise not_found_path()
        elif len(segments) == 3 and segments[0] == "apis":
            found = discovery.resource_list(table, segments[1], segments[2])
            if found is None:
                raise not_found_path()
        return json_response(found) if found is not None else None

    def _selectors(
        self, request: web.Request, resource: ResourceType, extra_fields: str = ""
    ) -> Matcher:
        labels = parse_label_selector(request.query.get("labelSelector"))
        field_text = ",".join(t for t in (request.query.get("fieldSelector"), extra_fields) if t)
        fields = parse_field_selector(field_text, resource.group, resource.kind)
        return matcher(labels, fields)

    async def _list_or_watch(
        self,
        request: web.Request,
        target: Target,
        force_watch: bool = False,
        name_selector: str = "",
    ) -> web.StreamResponse:
        resource = target.resource
        matches = self._selectors(request, resource, name_selector)
        query = request.query
        if force_watch or query.get("watch", "") in TRUE_WORDS:
            version = query.get("resourceVersion", "")
            since: int | None = None
            if version not in ("", "0"):
                try:
                    since = int(version)
                except ValueError:
                    raise bad_request(f'invalid resource version "{version}"') from None
            timeout = _number(query.get("timeoutSeconds"), "timeoutSeconds")
            if timeout is None:
                timeout = self.watch_timeout_seconds
            watch = WatchRequest(
                resource,
                target.namespace,
                matches,
                since,
                timeout,
                query.get("allowWatchBookmarks", "") in TRUE_WORDS,
            )
            stream = WatchStream(
                self.registry.store,
                self.faults,
                watch,
                self.bookmark_interval_seconds,
                self.apiserver_bookmarks,
            )
            return await stream.serve(request, request.get(ON_OPEN))
        revision = self.registry.store.revision
        list_meta: Raw = {"resourceVersion": str(revision)}
        token = query.get("continue")
        selection = (
            resource.key,
            target.namespace,
            query.get("labelSelector", ""),
            query.get("fieldSelector", ""),
            name_selector,
        )
        if token:
            try:
                state = json.loads(base64.urlsafe_b64decode(token.encode()))
                start, revision = tuple(state["start"]), int(state["rv"])
            except (ValueError, KeyError, TypeError):
                raise bad_request("continue key is not valid") from None
            list_meta["resourceVersion"] = str(revision)
            # Later pages come from the snapshot the first page was cut from, as an
            # API server serves them from etcd at the list's revision.
            snapshot = self._list_snapshots.get((*selection, revision))
            if snapshot is None:
                items = self.registry.select(resource, target.namespace, matches)
                items = [i for i in items if (namespace_of(i), name_of(i)) > start]
            else:
                keys, all_items = snapshot
                items = all_items[bisect.bisect_right(keys, start) :]
        else:
            items = self.registry.select(resource, target.namespace, matches)
        limit = _number(query.get("limit"), "limit")
        if limit and len(items) > limit and not token:
            keyed = sorted(((namespace_of(i), name_of(i)), index) for index, i in enumerate(items))
            ordered = [items[index] for _, index in keyed]
            self._list_snapshots[(*selection, revision)] = ([k for k, _ in keyed], ordered)
            while len(self._list_snapshots) > 8:
                self._list_snapshots.pop(next(iter(self._list_snapshots)))
            items = ordered
        if limit and len(items) > limit:
            items, remaining = items[: int(limit)], len(items) - int(limit)
            last = items[-1]
            state = {"rv": revision, "start": [namespace_of(last), name_of(last)]}
            list_meta["continue"] = base64.urlsafe_b64encode(json.dumps(state).encode()).decode()
            list_meta["remainingItemCount"] = remaining
        if wants_partial_metadata(request.headers.get("Accept", "")):
            return self._list_response(partial_metadata_list(list_meta, items))
        body = {
            "kind": resource.list_kind,
            "apiVersion": resource.api_version,
            "metadata": list_meta,
            "items": [_list_item(resource, item) for item in items],
        }
        return self._list_response(body)

    def _list_response(self, body: Raw) -> web.Response:
        """A list as served: garbled where a fault asks (see ``Faults.garble``)."""
        response = json_response(body)
        if isinstance(response.body, bytes):
            response.body = self.faults.garbled(response.body)
        return response

    async def _create(self, request: web.Request, target: Target) -> web.StreamResponse:
        body = await read_json(request)
        resource = target.resource
        namespace = target.namespace or ""
        if resource.group == "" and resource.plural == "bindings":
            name = name_of(body) if isinstance(body, dict) else ""
            return json_response(bind(self.registry, namespace, name, body), 201)
        created = self.registry.create(resource, namespace, body)
        return json_response(serve(resource, created), 201)

    async def _delete_collection(self, request: web.Request, target: Target) -> web.StreamResponse:
        resource = target.resource
        if "deletecollection" not in resource.verbs:
            raise method_not_allowed()
        options = await read_json(request, required=False)
        matches = self._selectors(request, resource)
        deleted = []
        for obj in self.registry.select(resource, target.namespace, matches):
            gone, _ = self.registry.delete(resource, namespace_of(obj), name_of(obj), options)
            deleted.append(_list_item(resource, gone))
        body = {
            "kind": resource.list_kind,
            "apiVersion": resource.api_version,
            "metadata": {"resourceVersion": str(self.registry.store.revision)},
            "items": deleted,
        }
        return json_response(body)


def _list_item(resource: ResourceType, obj: Raw) -> Raw:
    """List items of built-in kinds carry no kind/apiVersion (upstream omits them)."""
    if resource.custom:
        return serve(resource, obj)
    return {k: v for k, v in obj.items() if k not in ("apiVersion", "kind")}


def _number(text: str | None, name: str) -> float | None:
    if text is None or text == "":
        return None
    try:
        value = float(text)
    except ValueError:
        raise bad_request(f"invalid value for {name}: {text!r}") from None
    if value < 0:
        raise bad_request(f"{name} must not be negative")
    return value
