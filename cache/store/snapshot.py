"""A snapshot of the parsed layer-1 cache: what a warm start loads instead of decoding
and parsing every stored object (at 50,000 objects, 0.8 s instead of 2.7 s).

The snapshot is taken at a clean stop, after the last flush, from the views the daemon
holds, and kept beside the objects it mirrors, in rows of a few thousand objects each
(written in one transaction). Any later write of an object deletes it in the same
transaction, so a snapshot that exists was taken at or after the moment the rows were
written, and the watches, resuming from the stored points, bring it up to date exactly
as they would the rows. A start that finds none, or one it cannot use, reads the rows.

It is stamped with a fingerprint of the code that parsed it (the view classes, their
parsers and the quantity rules): after an upgrade, or any change there, the views could
mean something else, so an old snapshot is never used.

Only volsched's view classes may be named in it, only the opcodes ``encode`` writes may
appear, no length may exceed the part (``snapshot_opcodes``), and every field of every
view must have its declared type (``shapes``): a damaged or tampered database file gives
a ``SnapshotError`` — and a start that reads the rows — never code execution, a huge
allocation or a view that breaks scheduling.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import io
import pickle
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from importlib import import_module
from pathlib import Path
from typing import Any

from volsched.cache.store import rows, snapshot_opcodes

# What a snapshot holds: views by kind and key, and the raw JSON text kept for kinds the
# binder writes back whole.
Views = dict[str, dict[str, Any]]
RawTexts = dict[str, dict[str, str]]

# Bumped when the layout of the pickled tuple changes.
FORMAT = 1
# Objects per stored part (one row each).
PART_OBJECTS = 5000
_VIEW_PACKAGE = "volsched.cache.objects"
# Modules whose code decides what a parsed view holds.
_PARSING_MODULES = ("volsched.cache.quantity", "volsched.cache.errors")


class SnapshotError(Exception):
    """The stored snapshot cannot be used; the message says why."""


@dataclass(frozen=True)
class Snapshot:
    views: Views
    raw: RawTexts


@functools.cache
def fingerprint() -> str:
    """A digest of the source of every module that shapes a parsed view."""
    package = import_module(_VIEW_PACKAGE)
    files = sorted(Path(next(iter(package.__path__))).glob("*.py"))
    for name in _PARSING_MODULES:
        module_file = import_module(name).__file__
        if module_file is not None:
            files.append(Path(module_file))
    digest = hashlib.sha256(f"format {FORMAT}\n".encode())
    for path in files:
        digest.update(path.name.encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def encode(
    views: Mapping[str, Mapping[str, Any]],
    raw: Mapping[str, Mapping[str, str]],
    objects_per_part: int = PART_OBJECTS,
) -> Iterator[bytes]:
    """The snapshot in parts of ``objects_per_part`` objects, each made when asked for:
    pickling 100,000 objects at once held twice their size in memory at the stop."""
    for kind, by_key in views.items():
        texts = raw.get(kind, {})
        keys = list(by_key)
        for start in range(0, len(keys), objects_per_part):
            part = keys[start : start + objects_per_part]
            part_views = {kind: {key: by_key[key] for key in part}}
            part_raw = {kind: {key: texts[key] for key in part if key in texts}} if texts else {}
            yield pickle.dumps((FORMAT, part_views, part_raw), protocol=pickle.HIGHEST_PROTOCOL)


class _ViewsOnly(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module.startswith(_VIEW_PACKAGE + ".") and not name.startswith("_"):
            found = getattr(import_module(module), name, None)
            if (
                isinstance(found, type)
                and found.__module__.startswith(_VIEW_PACKAGE + ".")
                and dataclasses.is_dataclass(found)
            ):
                return found
        raise SnapshotError(f"it names {module}.{name}, which is not a view class")


def decode(parts: Iterable[bytes]) -> Snapshot:
    views: Views = {}
    raw: RawTexts = {}
    for body in parts:
        part_views, part_raw = _decode_part(body)
        for kind, by_key in part_views.items():
            views.setdefault(kind, {}).update(by_key)
        for kind, texts in part_raw.items():
            raw.setdefault(kind, {}).update(texts)
    return Snapshot(views, raw)


def _decode_part(body: bytes) -> tuple[Views, RawTexts]:
    try:
        snapshot_opcodes.check_part(body)
    except snapshot_opcodes.OpcodeError as problem:
        raise SnapshotError(str(problem)) from None
    try:
        loaded = _ViewsOnly(io.BytesIO(body)).load()
    except SnapshotError:
        raise
    except Exception as error:
        raise SnapshotError(f"it cannot be read: {type(error).__name__}: {error}") from None
    if not (isinstance(loaded, tuple) and len(loaded) == 3 and loaded[0] == FORMAT):
        raise SnapshotError("it is not in this version's format")
    _, views, raw = loaded
    try:
        rows.snapshot_part(views, raw, check_numbers=rows.may_hold_non_finite(body))
    except rows.BadRow as problem:
        raise SnapshotError(str(problem)) from None
    return views, raw
