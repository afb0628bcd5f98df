"""The snapshot's bodies, damaged: not bytes at all, not a pickle volsched writes (cut
short, opcodes it never writes, lengths and memo slots far past the part — the pickles
that made the unpickler allocate gigabytes), not in this version's format, and views of
the right class holding fields of the wrong type (what crashed scheduling at every
start). Each means the daemon reads the object rows instead.
"""

from __future__ import annotations

import copyreg
import dataclasses
import os
from typing import Any

from volsched.cache.objects.core import Node
from volsched.cache.objects.meta import OwnerReference
from volsched.cache.objects.registry import KINDS

from .damage_kit import (
    NODE,
    POD,
    PV,
    ROWS,
    Damage,
    allow_null,
    node_view,
    part,
    pickled,
    snapshot_body,
    sql,
)

GIB = 1 << 30
# 9 bytes that made the unpickler grow its memo to 3 GiB.
MEMO_SLOT_200_MILLION = b"\x80\x05Nr" + (200_000_000).to_bytes(4, "little") + b"."


def _length(size: int, value: int) -> bytes:
    return value.to_bytes(size, "little")


class _Unbuilt:
    """Pickles as a Node that was created and never given its fields."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:
        return Node

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (copyreg.__newobj__, (Node,), None)


def _view(kind: str, raw: dict[str, Any], **fields: Any) -> Any:
    return dataclasses.replace(KINDS[kind].parse(raw), **fields)


def damaged_node(**fields: Any) -> bytes:
    return part({"Node": {"node-1": _view("Node", NODE, **fields)}})


def damaged_meta(**fields: Any) -> bytes:
    return damaged_node(meta=dataclasses.replace(node_view().meta, **fields))


def _damage(name: str, body: Any, says: str) -> Damage:
    return Damage(f"snapshot {name}", snapshot_body(body), ROWS, says)


def _null_body() -> Damage:
    loosen = allow_null("snapshot", "body")
    update = sql("UPDATE snapshot SET body = NULL")

    def apply(path: Any) -> None:
        loosen(path)
        update(path)

    return Damage("snapshot.body NULL", apply, ROWS, "body is NoneType, not bytes")


SNAPSHOT_DAMAGES: list[Damage] = [
    # -- not bytes ------------------------------------------------------------------------
    _damage("that is text", "text", "body is str, not bytes"),
    Damage(
        "snapshot.body not UTF-8 text",
        sql("UPDATE snapshot SET body = CAST(X'80FF' AS TEXT)"),
        ROWS,
        "body is text that is not UTF-8, not bytes",
    ),
    _null_body(),
    # -- not a pickle volsched writes -------------------------------------------------
    _damage("of garbage", b"\x80\x05garbage", "never writes"),
    _damage("that is not a pickle", b"not a pickle", "does not start as a pickle"),
    Damage(
        "snapshot cut in half",
        sql("UPDATE snapshot SET body = substr(body, 1, length(body) / 2)"),
        ROWS,
        "past the end of the part",
    ),
    _damage("of 9 bytes naming memo slot 200,000,000", MEMO_SLOT_200_MILLION, "never writes"),
    _damage(
        "of bytes declaring 3 GiB",
        b"\x80\x05\x8e" + _length(8, 3 * GIB) + b"x" * 29 + b".",
        "never writes",
    ),
    _damage(
        "of a string declaring 3 GiB",
        b"\x80\x05\x8d" + _length(8, 3 * GIB) + b"x" * 29 + b".",
        "declares 3221225472 bytes",
    ),
    _damage(
        "of a frame declaring 3 GiB",
        b"\x80\x05\x95" + _length(8, 3 * GIB) + b"N.",
        "declares 3221225472 bytes",
    ),
    _damage(
        "of an integer declaring 2 GiB",
        b"\x80\x05\x8b" + _length(4, 2 * GIB - 1) + b"x" * 29 + b".",
        "declares 2147483647 bytes",
    ),
    _damage(
        "building a 3 GiB bytearray",
        b"\x80\x05\x8c\x08builtins\x94\x8c\tbytearray\x94\x93J\x00\x00\x00\xc0\x85R.",
        "never writes",
    ),
    _damage("naming os.system", pickled(os.system), "not a view class"),
    # -- not this version's format -----------------------------------------------------
    _damage("that unpickles to an int", pickled(5), "format"),
    _damage("of another format", part({}, fmt=99), "format"),
    _damage("of an unknown kind", part({"Gadget": {"g": node_view()}}), "not of a kind"),
    _damage("whose raw texts are ints", part({}, {"PersistentVolume": {"pv-1": 5}}), "not text"),
    # -- views that are not what they say -----------------------------------------------
    _damage("whose pod is an int", part({"Pod": {"ns/p": 5}}), "is a int, not a Pod"),
    _damage("whose pod is a node", part({"Pod": {"ns/p": node_view()}}), "is a Node, not a Pod"),
    _damage(
        "with a view under another key", part({"Node": {"elsewhere": node_view()}}), "another key"
    ),
    _damage("with a node never built", part({"Node": {"node-1": _Unbuilt()}}), ".meta is not set"),
    _damage(
        "whose labels are None", damaged_meta(labels=None), ".meta.labels is NoneType, not dict"
    ),
    _damage(
        "whose labels have an int key",
        damaged_meta(labels={1: "a"}),
        ".meta.labels key 1 is int, not str",
    ),
    _damage(
        "whose metadata is an owner reference",
        damaged_node(meta=OwnerReference("v1", "Node", "node-1", "u", False)),
        ".meta is OwnerReference, not ObjectMeta",
    ),
    _damage(
        "whose allocatable cpu is True",
        damaged_node(allocatable={"cpu": True}),
        ".allocatable['cpu'] is bool, not int",
    ),
    _damage("whose taints are text", damaged_node(taints=("x",)), ".taints[0] is str, not Taint"),
    _damage(
        "whose pod requests are None",
        part({"Pod": {"ns/p": _view("Pod", POD, requests=None)}}),
        ".requests is NoneType, not dict",
    ),
    _damage(
        "whose volume capacity is text",
        part({"PersistentVolume": {"pv-1": _view("PersistentVolume", PV, capacity="10Gi")}}),
        ".capacity is str, not int",
    ),
]
