"""Reading a cluster snapshot from YAML or JSON files, for ``simulate`` and ``explain``.

A file may hold several YAML documents, a JSON object, or a ``kind: List`` with
``items``. Each object is parsed into its typed view; any problem is one ``ObjectError``
or ``ConfigError`` naming the file, the document and the field. Objects written by hand
have not been through the API server's admission, so its defaults that change a decision
are applied here: claims without a class get the default StorageClass, and a pod naming a
RuntimeClass gets its overhead, node selector and tolerations.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Iterable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from volsched.cache.cluster import ClusterCache
from volsched.cache.errors import ConfigError, ObjectError
from volsched.cache.file_limits import FileLimitError, read_text_bounded
from volsched.cache.objects.registry import KINDS, kind_of
from volsched.cache.objects.storage import PersistentVolumeClaim
from volsched.cache.yaml_limits import YamlLimitError, load_all
from volsched.daemon.cli.admission import RUNTIME_CLASS, Admission


def _documents(path: Path) -> Iterator[tuple[str, Any]]:
    try:
        text = read_text_bounded(path)
    except FileLimitError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not a UTF-8 text file") from None
    try:
        documents = load_all(text, "YAML or JSON")
    except YamlLimitError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    for index, document in enumerate(documents):
        if document is None:
            continue
        where = f"{path} (document {index + 1})"
        if not isinstance(document, dict):
            raise ConfigError(f"{where}: a Kubernetes object must be a mapping")
        if document.get("kind") == "List" or (
            str(document.get("kind", "")).endswith("List") and "items" in document
        ):
            items = document.get("items") or []
            if not isinstance(items, list):
                raise ConfigError(f"{where}: items must be a list")
            for item_index, item in enumerate(items):
                item_where = f"{where} items[{item_index}]"
                if not isinstance(item, dict):
                    raise ConfigError(f"{item_where}: a Kubernetes object must be a mapping")
                yield item_where, item
        else:
            yield where, document


def load_snapshot(paths: Sequence[str | Path], warnings: TextIO | None = None) -> ClusterCache:
    return load_objects((located for path in paths for located in _documents(Path(path))), warnings)


def load_objects(
    objects: Iterable[tuple[str, Mapping[str, Any]]], warnings: TextIO | None = None
) -> ClusterCache:
    """A cluster cache of raw objects, each given with where it came from (a file and
    document, or a live cluster's kind and name) for the messages."""
    out = warnings if warnings is not None else sys.stderr
    cluster = ClusterCache()
    seen: dict[tuple[str, str], str] = {}
    claims: list[tuple[str, PersistentVolumeClaim]] = []
    located = list(objects)
    admission = Admission.of(raw for _, raw in located)
    for where, raw in located:
        kind = raw.get("kind")
        if not isinstance(kind, str) or not kind:
            raise ConfigError(f"{where}: kind is required")
        if kind == RUNTIME_CLASS:
            continue
        kind = kind_of(str(raw.get("apiVersion") or ""), kind)
        if kind == "Pod":
            raw = admission.admit(raw)
        info = KINDS.get(kind)
        if info is None:
            print(f"volsched: {where}: ignoring unknown kind {kind}", file=out)
            continue
        try:
            obj = info.parse(raw)
        except ObjectError as exc:
            raise exc.located(where) from None
        identity = (kind, obj.meta.key)
        if identity in seen:
            raise ConfigError(
                f"{where}: {kind} {obj.meta.key} is defined twice (first in {seen[identity]})"
            )
        seen[identity] = where
        if kind == "PersistentVolumeClaim" and obj.storage_class is None:
            claims.append((where, obj))
            continue
        cluster.upsert(kind, obj)
    default = cluster.default_storage_class()
    for _, claim in claims:
        if default is not None:
            claim = dataclasses.replace(claim, storage_class=default.meta.name)
        cluster.upsert("PersistentVolumeClaim", claim)
    return cluster
