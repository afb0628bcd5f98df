"""Every field of a view read back from a snapshot has the type its class declares.

A snapshot part is unpickled, not parsed: the parsers that guarantee a view's fields
(``labels`` a dict of text, ``requests`` a dict of integers, a PV's capacity an integer)
never ran on it. A part that names only view classes, under the right keys, could still
hold ``labels=None`` or a capacity of ``"10Gi"``, and the first plugin to read the view
raised a TypeError in the middle of scheduling, at every start. So each view is walked
against the annotations of its dataclass before anyone sees it.

The annotations understood are the ones views use: ``str``, ``int``, ``float`` (an int is
a float too), ``bool``, ``None``, unions with ``None``, ``tuple[X, ...]``, fixed tuples,
``dict[K, V]``, ``frozenset[X]`` and other view dataclasses; anything else is accepted as
it is. A non-empty container reached twice (a pickle may refer to one object many times)
is checked once, so the walk is bounded by the part's size, not by how often it refers
to something.

A warm start checks hundreds of thousands of views, so the check of each class is
generated once as Python source, with every field's test inline (closures per field
took as long as the unpickling itself).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Callable
from typing import Any


class ShapeError(ValueError):
    """A value is not of its declared type; the message names the field path."""


Check = Callable[[Any, set[int]], None]


def check_view(view: object, seen: set[int] | None = None) -> None:
    """Raise ``ShapeError`` naming the first field of ``view`` that is not of its type
    (``view`` must be a dataclass instance).

    ``seen`` carries the ids of the containers already checked across the views of one
    part."""
    _class_check(type(view))(view, set() if seen is None else seen)


# -- helpers the generated code calls, only when something is wrong ----------------------


def _wrong(path: str, value: object, expected: str) -> ShapeError:
    return ShapeError(f"{path} is {type(value).__name__}, not {expected}")


def _within(path: str, error: ShapeError) -> ShapeError:
    return ShapeError(f"{path}{error}")


def _unset(value: object, names: tuple[str, ...]) -> ShapeError:
    missing = next((name for name in names if not hasattr(value, name)), "a field")
    return ShapeError(f".{missing} is not set")


# -- generating a class's check ------------------------------------------------------------


_EXACT = {str: "str", int: "int", bool: "bool"}


class _Source:
    """The lines of one generated function, and the names its code refers to."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names: dict[str, Any] = {
            "_wrong": _wrong,
            "_within": _within,
            "_unset": _unset,
            "ShapeError": ShapeError,
        }
        self._counter = 0

    def fresh(self, stem: str) -> str:
        self._counter += 1
        return f"{stem}{self._counter}"

    def refer(self, value: Any, stem: str) -> str:
        name = self.fresh(stem)
        self.names[name] = value
        return name

    def emit(self, indent: int, line: str) -> None:
        self.lines.append("    " * indent + line)


def _emit(source: _Source, indent: int, var: str, path: str, annotation: Any) -> None:
    """Lines that raise ShapeError unless ``var`` is an ``annotation``; ``path`` is an
    f-string body naming where ``var`` is."""
    emit = source.emit
    if annotation in _EXACT:
        emit(indent, f"if type({var}) is not {_EXACT[annotation]}:")
        emit(indent + 1, f'raise _wrong(f"{path}", {var}, "{_EXACT[annotation]}")')
        return
    if annotation is float:
        emit(indent, f"if type({var}) is not float and type({var}) is not int:")
        emit(indent + 1, f'raise _wrong(f"{path}", {var}, "float")')
        return
    if annotation is type(None):
        emit(indent, f"if {var} is not None:")
        emit(indent + 1, f'raise _wrong(f"{path}", {var}, "None")')
        return
    if isinstance(annotation, type) and dataclasses.is_dataclass(annotation):
        cls = source.refer(annotation, "cls")
        check = source.refer(_class_check(annotation), "check")
        emit(indent, f"if type({var}) is not {cls}:")
        emit(indent + 1, f'raise _wrong(f"{path}", {var}, "{annotation.__name__}")')
        emit(indent, "try:")
        emit(indent + 1, f"{check}({var}, seen)")
        emit(indent, "except ShapeError as error:")
        emit(indent + 1, f'raise _within(f"{path}", error) from None')
        return
    origin = typing.get_origin(annotation)
    arguments = typing.get_args(annotation)
    if origin in (types.UnionType, typing.Union):
        others = [argument for argument in arguments if argument is not type(None)]
        if len(others) == 1 and len(arguments) == 2:
            emit(indent, f"if {var} is not None:")
            _emit(source, indent + 1, var, path, others[0])
        return
    if origin is tuple and len(arguments) == 2 and arguments[1] is Ellipsis:
        _emit_items(source, indent, var, path, "tuple", arguments[0])
    elif origin is tuple:
        emit(indent, f"if type({var}) is not tuple or len({var}) != {len(arguments)}:")
        emit(indent + 1, f'raise _wrong(f"{path}", {var}, "a tuple of {len(arguments)}")')
        for index, argument in enumerate(arguments):
            item = source.fresh("item")
            emit(indent, f"{item} = {var}[{index}]")
            _emit(source, indent, item, f"{path}[{index}]", argument)
    elif origin is frozenset and len(arguments) == 1:
        _emit_items(source, indent, var, path, "frozenset", arguments[0])
    elif origin is dict and len(arguments) == 2:
        _emit_container_check(source, indent, var, path, "dict")
        key, item = source.fresh("key"), source.fresh("item")
        emit(indent + 1, f"for {key}, {item} in {var}.items():")
        _emit(source, indent + 2, key, f"{path} key {{{key}!r:.40}}", arguments[0])
        _emit(source, indent + 2, item, f"{path}[{{{key}!r:.40}}]", arguments[1])


def _emit_container_check(
    source: _Source, indent: int, var: str, path: str, container: str
) -> None:
    """``var`` must be exactly ``container``; a non-empty one is walked once (``seen``
    stops a container shared or looping back from being walked again)."""
    source.emit(indent, f"if type({var}) is not {container}:")
    source.emit(indent + 1, f'raise _wrong(f"{path}", {var}, "{container}")')
    source.emit(indent, f"if {var} and id({var}) not in seen:")
    source.emit(indent + 1, f"seen.add(id({var}))")


def _emit_items(
    source: _Source, indent: int, var: str, path: str, container: str, annotation: Any
) -> None:
    emit = source.emit
    _emit_container_check(source, indent, var, path, container)
    index, item = source.fresh("index"), source.fresh("item")
    emit(indent + 1, f"for {index}, {item} in enumerate({var}):")
    _emit(source, indent + 2, item, f"{path}[{{{index}}}]", annotation)


# The generated check of each class (its fields; the caller checks the class itself).
_CHECKS: dict[type, Check] = {}
# Classes whose check is being generated: one met again refers to itself.
_GENERATING: set[type] = set()


def _class_check(cls: type) -> Check:
    """The check of a view class's fields, generated on first use. The checks of the
    classes it holds are generated first and called directly; a class that holds
    itself (no view does) is reached through ``_CHECKS`` instead."""
    known = _CHECKS.get(cls)
    if known is not None:
        return known
    if cls in _GENERATING:
        return lambda value, seen: _CHECKS[cls](value, seen)
    _GENERATING.add(cls)
    try:
        return _CHECKS.setdefault(cls, _generate(cls))
    finally:
        _GENERATING.discard(cls)


def _generate(cls: type) -> Check:
    hints = typing.get_type_hints(cls)
    names = tuple(field.name for field in dataclasses.fields(cls))
    source = _Source()
    source.names["NAMES"] = names
    # A view reached twice is checked twice: it costs its fields, and each reference to
    # it is an opcode of its own, so the walk stays bounded by the part's size (its
    # containers, which could be long, are checked once).
    source.emit(0, "def check(value, seen):")
    source.emit(1, "try:")
    for index, name in enumerate(names):
        source.emit(2, f"field{index} = value.{name}")
    source.emit(1, "except AttributeError:")
    source.emit(2, "raise _unset(value, NAMES) from None")
    for index, name in enumerate(names):
        _emit(source, 1, f"field{index}", f".{name}", hints.get(name, Any))
    source.emit(1, "return None")
    namespace = dict(source.names)
    # The source is built above, from the annotations of volsched's own classes.
    exec("\n".join(source.lines), namespace)
    generated: Check = namespace["check"]
    return generated
