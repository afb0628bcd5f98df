"""A live cluster, read and never written: ``volsched snapshot`` and the forms of
``simulate`` and ``explain`` that read a cluster instead of files.

    volsched snapshot [--kubeconfig FILE] [--context C] [--request-timeout 30s] [-o FILE]
    volsched simulate [--kubeconfig FILE] [--context C] [same options as with files]
    volsched explain [NAMESPACE/]POD [--kubeconfig FILE] [--context C] [-n NAMESPACE]

The kubeconfig is found as kubectl finds it (``--kubeconfig``, else ``$KUBECONFIG``,
else ``~/.kube/config``; see ``kubeconfig_merging``). Every kind ``simulate`` reads is
listed in pages (``limit`` / ``continue``, bounded in size, count and time by
``live_pages``), volsched's and Longhorn's storage kinds only
when discovery says their CRDs are served, and each object is cut down to the fields
scheduling reads (``read_fields``) before it goes anywhere: a container's env, args and
command, and secrets, never leave the cluster. A snapshot is a ``kind: List`` that
``simulate`` and ``explain`` read like any snapshot file.

Nothing here writes. The client is made read-only (``KubeClient.read_only``), so a write
asked for by mistake is refused before a request is sent.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, TextIO

import yaml

from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import ApiError, ConfigError, Gone
from volsched.cache.objects.durations import go_duration_seconds
from volsched.cache.objects.read_fields import read_fields
from volsched.cache.objects.registry import KINDS, kind_of
from volsched.daemon.cli.live_pages import (
    DEFAULT_REQUEST_TIMEOUT_SECONDS,
    ListLimits,
    list_pages,
)
from volsched.daemon.cli.live_pages import served as served_resources
from volsched.daemon.cli.snapshot_files import load_objects, load_snapshot
from volsched.daemon.kube.client import KubeClient
from volsched.daemon.kube.kubeconfig_merging import (
    Kubeconfig,
    connect_for,
    kubeconfig_paths,
    load_kubeconfig,
)
from volsched.daemon.kube.resources import resource
from volsched.daemon.watch.watching import OPTIONAL_KINDS, WATCHED_KINDS

Raw = dict[str, Any]

# kube-scheduler's informer lists no finished pods; they hold nothing on any node.
POD_FIELD_SELECTOR = "status.phase!=Succeeded,status.phase!=Failed"
PAGE_SIZE = 500
# A continue token expires (410) after the API server's compaction, about five minutes:
# a kind whose listing outlives it is listed again from the start, this many times.
RELISTS = 2

_Dumper: Any = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


def api_kind(kind: str) -> str:
    """The kind an object of volsched's ``kind`` has in the API (LonghornNode → Node)."""
    return kind.removeprefix(kind_of(KINDS[kind].api_version, ""))


def add_cluster_options(parser: argparse.ArgumentParser) -> None:
    """kubectl's flags for choosing a cluster, as kubectl spells them."""
    parser.add_argument(
        "--kubeconfig",
        metavar="FILE",
        help="kubeconfig to read the cluster with (default: $KUBECONFIG, else ~/.kube/config)",
    )
    parser.add_argument("--context", metavar="NAME", help="kubeconfig context (default: current)")
    parser.add_argument(
        "-n",
        "--namespace",
        metavar="NAMESPACE",
        help="namespace of a pod named without one (default: the context's)",
    )
    parser.add_argument(
        "--request-timeout",
        metavar="DURATION",
        type=request_timeout,
        default=DEFAULT_REQUEST_TIMEOUT_SECONDS,
        help="give up on a request not answered whole within this (default: 30s)",
    )


def chosen_kubeconfig(args: argparse.Namespace, environ: Mapping[str, str]) -> Kubeconfig:
    return load_kubeconfig(kubeconfig_paths(args.kubeconfig, environ), args.context)


@asynccontextmanager
async def read_only_client(kubeconfig: Kubeconfig) -> AsyncIterator[KubeClient]:
    """A client that sends no write at all: a refused write never leaves the process."""
    client = KubeClient(await connect_for(kubeconfig)).read_only()
    try:
        yield client
    finally:
        await client.close()


class Progress:
    """One line on a terminal, rewritten as pages arrive; silent anywhere else."""

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream if stream is not None and stream.isatty() else None

    def show(self, text: str) -> None:
        if self.stream is not None:
            self.stream.write(f"\r\x1b[Kvolsched: {text}")
            self.stream.flush()

    def done(self) -> None:
        if self.stream is not None:
            self.stream.write("\r\x1b[K")
            self.stream.flush()


async def _list_kind(
    client: KubeClient, kind: str, progress: Progress, total: int, limits: ListLimits
) -> list[Raw]:
    info = KINDS[kind]
    selector = POD_FIELD_SELECTOR if kind == "Pod" else None
    for attempt in range(RELISTS + 1):
        kept: list[Raw] = []
        try:
            path = resource(kind).path()
            async for page in list_pages(client, path, PAGE_SIZE, selector, limits):
                for item in page:
                    item["kind"] = api_kind(kind)
                    item["apiVersion"] = info.api_version
                    fields = read_fields(kind, item)
                    if fields is not None:
                        kept.append(fields)
                progress.show(f"listing {info.plural}: {len(kept)} ({total + len(kept)} objects)")
            return kept
        except Gone:
            if attempt == RELISTS:
                raise
    return []  # not reached: the last attempt returns or raises


async def list_cluster(
    client: KubeClient, progress: Progress, limits: ListLimits | None = None
) -> list[Raw]:
    """Every object ``simulate`` reads, cut down to the fields scheduling reads, within
    ``limits`` (see ``live_pages``)."""
    limits = limits if limits is not None else ListLimits()
    objects: list[Raw] = []
    served: dict[str, frozenset[str]] = {}
    try:
        for kind in WATCHED_KINDS:
            info = KINDS[kind]
            try:
                if kind in OPTIONAL_KINDS:
                    # A CRD that is not installed, or an API group not served, is nothing to read, not an error.
                    if info.api_version not in served:
                        served[info.api_version] = await served_resources(
                            client, info.api_version, limits
                        )
                    if info.plural not in served[info.api_version]:
                        continue
                objects += await _list_kind(client, kind, progress, len(objects), limits)
            except ApiError as exc:
                host = client.connection.host
                problem = str(exc).removeprefix("0: ")  # no status: the server never answered
                problem = " ".join(problem.split())  # aiohttp's texts can span lines
                raise ConfigError(f"{host}: cannot list {info.plural}: {problem}") from None
    finally:
        progress.done()
    return objects


async def read_cluster(
    kubeconfig: Kubeconfig, progress: Progress, limits: ListLimits | None = None
) -> list[Raw]:
    async with read_only_client(kubeconfig) as client:
        return await list_cluster(client, progress, limits)


def request_timeout(text: str) -> float:
    """``--request-timeout``: seconds (``30``) or a duration (``30s``, ``1m``), above 0."""
    seconds = go_duration_seconds(text)
    if seconds is None:
        try:
            seconds = float(text)
        except ValueError:
            seconds = None
    if seconds is None or not 0 < seconds < 86_400:
        raise argparse.ArgumentTypeError(f"{text!r} is not a duration above 0 (e.g. 30s)")
    return seconds


def _limits(args: argparse.Namespace) -> ListLimits:
    return ListLimits(request_timeout_seconds=args.request_timeout)


def load_cluster(args: argparse.Namespace, environ: Mapping[str, str]) -> ClusterCache:
    """The snapshot files given, else the live cluster of the kubeconfig."""
    if args.files:
        if args.kubeconfig or args.context:
            raise ConfigError("give snapshot files or --kubeconfig/--context, not both")
        return load_snapshot(args.files)
    kubeconfig = chosen_kubeconfig(args, environ)
    objects = asyncio.run(read_cluster(kubeconfig, Progress(sys.stderr), _limits(args)))
    return load_objects((_where(raw), raw) for raw in objects)


def _where(raw: Raw) -> str:
    meta = raw.get("metadata") or {}
    name = (
        f"{meta.get('namespace')}/{meta.get('name')}" if meta.get("namespace") else meta.get("name")
    )
    return f"the cluster's {raw.get('kind')} {name}"


def pod_key(args: argparse.Namespace, environ: Mapping[str, str]) -> str:
    """``namespace/name`` of the pod ``explain`` is asked about; a bare name is in
    ``-n``'s namespace, else (reading a cluster) the kubeconfig context's."""
    text: str = args.pod
    parts = text.split("/")
    if len(parts) == 2 and all(parts):
        return text
    if len(parts) == 1 and text:
        namespace = args.namespace
        if namespace is None and not args.files:
            namespace = chosen_kubeconfig(args, environ).namespace
        if namespace:
            return f"{namespace}/{text}"
    raise ConfigError(f"{text}: give the pod as NAMESPACE/NAME")


def snapshot_document(objects: list[Raw]) -> Raw:
    return {"apiVersion": "v1", "kind": "List", "metadata": {}, "items": objects}


def write_snapshot(document: Raw, out: TextIO, as_json: bool) -> None:
    if as_json:
        json.dump(document, out, indent=1)
        out.write("\n")
        return
    out.write(
        "# A volsched snapshot: only the fields scheduling reads. Read it with\n"
        "# `volsched simulate FILE` or `volsched explain NAMESPACE/POD FILE`.\n"
    )
    yaml.dump(document, out, Dumper=_Dumper, sort_keys=False, allow_unicode=True)


def cmd_snapshot(args: argparse.Namespace) -> int:
    kubeconfig = chosen_kubeconfig(args, os.environ)
    objects = asyncio.run(read_cluster(kubeconfig, Progress(sys.stderr), _limits(args)))
    document = snapshot_document(objects)
    if not args.output or args.output == "-":
        write_snapshot(document, sys.stdout, as_json=False)
        return 0
    path = Path(args.output)
    try:
        with path.open("w", encoding="utf-8") as out:
            write_snapshot(document, out, as_json=path.suffix == ".json")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot write: {exc.strerror or exc}") from None
    print(
        f"volsched: {len(objects)} objects of context {kubeconfig.context} written to {path}",
        file=sys.stderr,
    )
    return 0


def register(commands: Any) -> None:
    """Add ``snapshot`` to the command line's subcommands."""
    snapshot = commands.add_parser(
        "snapshot",
        help="write the objects simulate reads from a live cluster, read-only, without secrets",
    )
    add_cluster_options(snapshot)
    snapshot.add_argument(
        "-o",
        "--output",
        metavar="FILE",
        help="write here instead of standard output (.json: JSON, else YAML)",
    )
    snapshot.set_defaults(handler=cmd_snapshot)
