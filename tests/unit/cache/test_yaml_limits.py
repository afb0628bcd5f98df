"""Bounded YAML: aliases, numbers, nesting and times can cost neither a hang nor a
traceback; ordinary documents (anchors and merge keys included) read as before."""

from __future__ import annotations

import time

import pytest

from volsched.cache.yaml_limits import MAX_ALIAS_NODES, YamlLimitError, load_all, load_one


def laughs(levels: int = 9, width: int = 9) -> str:
    """The "billion laughs": each level an anchored list of ``width`` aliases of the last."""
    lines = ["lol0: &lol0 [" + ", ".join(["lol"] * width) + "]"]
    for level in range(1, levels):
        refs = ", ".join([f"*lol{level - 1}"] * width)
        lines.append(f"lol{level}: &lol{level} [{refs}]")
    return "\n".join(lines) + "\n"


def merges(levels: int = 9, width: int = 9) -> str:
    lines = ["m0: &m0 {a: 1, b: 2}"]
    for level in range(1, levels):
        refs = ", ".join([f"*m{level - 1}"] * width)
        lines.append(f"m{level}: &m{level} {{<<: [{refs}], k{level}: {level}}}")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        (laughs(), f"aliases expand to more than {MAX_ALIAS_NODES} nodes"),
        (merges(), f"aliases expand to more than {MAX_ALIAS_NODES} nodes"),
        ("a: &a [1, *a]\n", "the alias *a is inside the node it names"),
        ("a: &a {b: *a}\n", "the alias *a is inside the node it names"),
        ("a: " + "1" * 5000 + "\n", "a number longer than 64 characters"),
        ("a: 0x" + "f" * 5000 + "\n", "a number longer than 64 characters"),
        ("a: " + ":".join(["59"] * 40) + "\n", "a number longer than 64 characters"),
        ("a: 1." + "5" * 100 + "\n", "a number longer than 64 characters"),
        ("a: 0x_\n", "'0x_' is not a number"),
        ("a: 0b_\n", "'0b_' is not a number"),
        ("[" * 100 + "]" * 100, "nested deeper than 64 levels"),
        ("a:\n" + "".join("  " * depth + "- x:\n" for depth in range(1, 80)), "nested deeper"),
        ("a: \x08\n", "not valid YAML"),
        ("a: [1, 2\n", "not valid YAML at line 2"),
    ],
    ids=[
        "billion laughs",
        "merge keys",
        "alias in its own list",
        "alias in its own mapping",
        "5000 digits",
        "5000 hex digits",
        "sexagesimal",
        "long float",
        "bare 0x",
        "bare 0b",
        "deep flow",
        "deep block",
        "unprintable",
        "syntax",
    ],
)
def test_hostile_yaml_is_one_line_and_fast(text: str, problem: str) -> None:
    started = time.monotonic()
    with pytest.raises(YamlLimitError) as caught:
        load_all(text)
    assert time.monotonic() - started < 1
    assert problem in str(caught.value)
    assert "\n" not in str(caught.value)


def test_the_alias_bomb_of_the_issue_is_refused_in_a_blink() -> None:
    # 1.3 KB that an unbounded loader's consumers walked for nearly two minutes.
    bomb = laughs(levels=10, width=10) + "".join(f"laugh{n}: *lol9\n" for n in range(30))
    assert 1000 < len(bomb) < 1500
    started = time.monotonic()
    with pytest.raises(YamlLimitError, match="aliases expand"):
        load_all(bomb)
    assert time.monotonic() - started < 0.5


def test_ordinary_anchors_and_merge_keys_still_read() -> None:
    text = (
        "defaults: &defaults {cpu: 1, memory: 2Gi}\n"
        "a: {<<: *defaults, cpu: 2}\n"
        "b: *defaults\n"
        "c: [*defaults, *defaults]\n"
    )
    (document,) = load_all(text)
    assert document["a"] == {"cpu": 2, "memory": "2Gi"}
    assert document["c"] == [document["defaults"]] * 2


@pytest.mark.parametrize(
    "text",
    [
        "2024-01-02T03:04:05Z",
        "0001-01-01 00:00:00",
        "0000-01-01",
        "2023-02-30",
        "2024-01-01t00:00:00+99:99",
    ],
)
def test_times_stay_text_as_kubernetes_reads_them(text: str) -> None:
    # sigs.k8s.io/yaml leaves a YAML timestamp a string; the API server then parses it
    # as RFC 3339. Year 0, February 30 and an offset of 99 hours never reach datetime.
    assert load_one(f"t: {text}\n") == {"t": text}


def test_numbers_within_the_bound_read_as_yaml_says() -> None:
    assert load_one("a: 0x10\nb: 0b101\nc: 1_000\nd: 1:30\ne: 1.5e+3\nf: .inf\n") == {
        "a": 16,
        "b": 5,
        "c": 1000,
        "d": 90,
        "e": 1500.0,
        "f": float("inf"),
    }


def test_documents_and_one_document() -> None:
    assert load_all("a: 1\n---\n---\nb: 2\n") == [{"a": 1}, None, {"b": 2}]
    with pytest.raises(YamlLimitError, match="holds 2 YAML documents"):
        load_one("a: 1\n---\nb: 2\n")
