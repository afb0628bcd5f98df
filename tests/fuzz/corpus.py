"""A corpus of hostile files for every file the command line reads: snapshots, config
files, policy files and kubeconfigs.

Each file starts from a valid base. One leaf at a time is replaced by a hostile value —
numbers (thousands of digits, past int64 and int32, past a float, hex and sexagesimal
forms, ``1e400``, Arabic-Indic digits), types (null, lists, mappings, binary, sets),
timestamps (year 0 and 1, no zone, February 30, an offset of 99 hours), strings (long,
NUL, bidi overrides), nesting (deep, self-referencing) — and the whole file is replaced
by encodings and shapes (UTF-16 and UTF-32, a BOM, Latin-1 bytes, NUL bytes, alias
bombs, deep nesting, a top-level list or scalar).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import yaml

HOLE = "HOLEHOLEHOLE"

# YAML (flow) texts of hostile values, by kind of hostility.
NUMBERS = [
    "1" * 5000,
    "9" * 400,
    "9" * 64,
    str(2**63),
    str(2**63 - 1),
    str(-(2**63) - 1),
    str(2**31),
    str(-(2**31) - 1),
    "-1",
    "0",
    "0x" + "f" * 70,
    "0x_",
    "0b_",
    ":".join(["59"] * 30),
    "1:30",
    "1.0e+400",
    "-1.0e+400",
    "1.0e-400",
    ".nan",
    ".inf",
    "'1e999'",
    "'8Ei'",
    "'9Ei'",
    "'-8Ei'",
    "'٤'",
    "'4\u0660'",
    "'0.0000000000001'",
    "'1_000'",
    "1_000",
    "'" + "9" * 64 + "'",
]
TIMES = [
    "0001-01-01 00:00:00",
    "0001-01-01",
    "0000-01-01",
    "2023-02-30",
    "2024-01-01T00:00:00",
    "9999-12-31T23:59:59-23:59",
    "0001-01-01T00:00:00+23:59",
    "2024-01-01t00:00:00+99:99",
    "'2024-W01-1T00:00:00Z'",
    "'٢٠٢٤-01-01T00:00:00Z'",
]
TYPES = [
    "null",
    "true",
    "[]",
    "{}",
    "[1, [2, [3]]]",
    "{a: {b: {c: 1}}}",
    "'text'",
    "''",
    "1.5",
    "!!binary aGVsbG8=",
    "!!set {a, b}",
    "!!str 5",
    "{1: a, b: 2, null: 3}",
]
STRINGS = [
    "'" + "x" * 20000 + "'",
    '"\\0"',
    '"\\u202e"',
    '"\\x85"',
    "'[::1:80'",
    "'gopher://x'",
    "'127.0.0.1:٨٠'",
    "'../../etc/passwd'",
]
NESTING = [
    "[" * 100 + "]" * 100,
    "{a: " * 100 + "1" + "}" * 100,
    "&self [*self]",
    "&me {a: *me}",
]
VALUES = NUMBERS + TIMES + TYPES + STRINGS + NESTING


def laughs(levels: int = 10, width: int = 10) -> str:
    lines = ["lol0: &lol0 [" + ", ".join(["lol"] * width) + "]"]
    lines += [
        f"lol{n}: &lol{n} [" + ", ".join([f"*lol{n - 1}"] * width) + "]" for n in range(1, levels)
    ]
    return "\n".join(lines) + "\n"


def merges(levels: int = 10, width: int = 10) -> str:
    lines = ["m0: &m0 {a: 1, b: 2}"]
    lines += [
        f"m{n}: &m{n} {{<<: [" + ", ".join([f"*m{n - 1}"] * width) + f"], k{n}: {n}}}"
        for n in range(1, levels)
    ]
    return "\n".join(lines) + "\n"


def whole_files(base: str) -> Iterator[tuple[str, bytes]]:
    """Whole-file hostility, built around ``base`` (a valid file's text)."""
    yield "empty", b""
    yield "only a separator", b"---\n"
    yield "a list", b"- 1\n- 2\n"
    yield "a scalar", b"just text\n"
    yield "a number", b"1" * 5000
    yield "utf-16", base.encode("utf-16")
    yield "utf-32", base.encode("utf-32")
    yield "utf-8 with a BOM", b"\xef\xbb\xbf" + base.encode()
    yield "latin-1", base.encode("utf-8") + "café".encode("latin-1")
    yield "a NUL byte", base.encode() + b"\x00"
    yield "CR line ends", base.replace("\n", "\r").encode()
    yield "CRLF line ends", base.replace("\n", "\r\n").encode()
    yield "billion laughs", laughs().encode()
    yield "merge-key bomb", merges().encode()
    yield "laughs after the base", (base + "\n---\n" + laughs()).encode()
    yield "deep flow", ("[" * 5000 + "]" * 5000).encode()
    yield "deep block", ("a:\n" + "".join("  " * n + "- b:\n" for n in range(1, 300))).encode()
    yield "deep JSON", ('{"a":' * 5000 + "1" + "}" * 5000).encode()
    yield "JSON with a huge number", ('{"kind": "Node", "n": 1' + "0" * 5000 + "}").encode()
    yield "unterminated", base[: len(base) // 2].encode() + b"\n  - [ {\n"
    yield "tabs", base.replace("  ", "\t").encode()
    yield "garbage", bytes(range(256)) * 4
    yield "a document of garbage", (base + "\n---\n" + "!!python/object:os.system x\n").encode()


def leaves(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], Any]]:
    if isinstance(value, dict):
        if not value:
            yield path, value
        for key, item in value.items():
            yield from leaves(item, (*path, key))
    elif isinstance(value, list):
        if not value:
            yield path, value
        for index, item in enumerate(value):
            yield from leaves(item, (*path, index))
    else:
        yield path, value


def _with_hole(document: Any, path: tuple[Any, ...]) -> Any:
    if not path:
        return HOLE
    copy: Any = dict(document) if isinstance(document, dict) else list(document)
    copy[path[0]] = _with_hole(document[path[0]], path[1:])
    return copy


def _dump(document: Any) -> str:
    dumper = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
    return str(yaml.dump(document, Dumper=dumper, default_flow_style=True, width=10**9))


def yaml_mutants(documents: list[Any], per_leaf: int) -> Iterator[tuple[str, str]]:
    """(name, text) for each leaf of each document replaced by ``per_leaf`` hostile
    values, the other documents kept as they are. The values rotate through the whole
    list, so every value meets many leaves; a leaf that held a number also gets as many
    of the hostile numbers and times."""
    texts = [_dump(document) for document in documents]
    anything = numbers = 0
    for index, document in enumerate(documents):
        for path, original in leaves(document):
            chosen = [VALUES[(anything + n) % len(VALUES)] for n in range(per_leaf)]
            anything += per_leaf
            if isinstance(original, int | float) and not isinstance(original, bool):
                numeric = NUMBERS + TIMES
                chosen += [numeric[(numbers + n) % len(numeric)] for n in range(per_leaf)]
                numbers += per_leaf
            holed = _dump(_with_hole(document, path))
            where = "/".join(str(step) for step in path)
            for value in dict.fromkeys(chosen):
                mutated = [*texts[:index], holed.replace(HOLE, value, 1), *texts[index + 1 :]]
                yield f"doc {index} {where} = {value[:30]}", "---\n".join(mutated)


JSON_VALUES = [
    "1" * 5000,
    "9" * 400,
    str(2**63),
    "1e400",
    "-0",
    "1.5",
    "null",
    "true",
    "[]",
    "{}",
    '"text"',
    '"\\u0000"',
    '"\\ud800"',
    "[" * 100 + "]" * 100,
    '"' + "x" * 20000 + '"',
    '{"1": 2, "": 3}',
]


def json_mutants(document: Any, per_leaf: int) -> Iterator[tuple[str, str]]:
    """As ``yaml_mutants``, for one JSON document and JSON's values."""
    counter = 0
    for path, _ in leaves(document):
        text = json.dumps(_with_hole(document, path))
        where = "/".join(str(step) for step in path)
        for n in range(min(per_leaf, len(JSON_VALUES))):
            value = JSON_VALUES[(counter + n) % len(JSON_VALUES)]
            yield f"{where} = {value[:30]}", text.replace(json.dumps(HOLE), value, 1)
        counter += per_leaf
