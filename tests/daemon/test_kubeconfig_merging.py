"""Which kubeconfig files are read and how they merge, as kubectl does it: --kubeconfig,
else each file of $KUBECONFIG (the first definition of a name, and the first
current-context, win), else ~/.kube/config; the context's namespace; relative paths."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml

from volsched.cache.errors import ConfigError
from volsched.daemon.kube.kubeconfig_merging import kubeconfig_paths, load_kubeconfig


def kubeconfig(
    path: Path,
    clusters: dict[str, str],
    contexts: dict[str, tuple[str, str | None]],
    current: str | None = None,
    users: dict[str, dict[str, Any]] | None = None,
) -> str:
    """A file of clusters (name → server), contexts (name → (cluster, namespace))."""
    data: dict[str, Any] = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": n, "cluster": {"server": s}} for n, s in clusters.items()],
        "contexts": [
            {
                "name": name,
                "context": {"cluster": cluster, "user": "u"}
                | ({"namespace": namespace} if namespace else {}),
            }
            for name, (cluster, namespace) in contexts.items()
        ],
        "users": [{"name": n, "user": u} for n, u in (users or {"u": {}}).items()],
    }
    if current:
        data["current-context"] = current
    path.write_text(yaml.safe_dump(data))
    return str(path)


@pytest.fixture
def files(tmp_path: Path) -> dict[str, str]:
    (tmp_path / "certs").mkdir()
    return {
        "first": kubeconfig(
            tmp_path / "first",
            {"a": "https://a.example:6443"},
            {"dev": ("a", "team-a")},
            current="dev",
            users={"u": {"client-certificate": "certs/u.crt", "client-key": "/abs/u.key"}},
        ),
        "second": kubeconfig(
            tmp_path / "second",
            {"a": "https://shadowed.example", "b": "https://b.example"},
            {"dev": ("b", "shadowed"), "prod": ("b", None)},
            current="prod",
        ),
    }


@pytest.mark.parametrize(
    ("explicit", "listed", "home", "expected"),
    [
        ("first", ["second"], True, ["first"]),
        (None, ["second", "missing", "first"], True, ["second", "first"]),
        (None, ["missing"], True, []),
        (None, [], True, ["home"]),
        (None, [], False, []),
    ],
)
def test_the_files_kubectl_would_read(
    tmp_path: Path,
    files: dict[str, str],
    explicit: str | None,
    listed: list[str],
    home: bool,
    expected: list[str],
) -> None:
    paths = {**files, "missing": str(tmp_path / "missing"), "home": str(tmp_path / ".kube/config")}
    if home:
        (tmp_path / ".kube").mkdir()
        kubeconfig(tmp_path / ".kube" / "config", {"h": "https://h.example"}, {"h": ("h", None)})
    environ = {"HOME": str(tmp_path)}
    if listed:
        environ["KUBECONFIG"] = os.pathsep.join(paths[name] for name in listed)
    chosen = kubeconfig_paths(paths[explicit] if explicit else None, environ)
    assert chosen == [paths[name] for name in expected]


@pytest.mark.parametrize(
    ("order", "context", "server", "namespace"),
    [
        (["first", "second"], None, "https://a.example:6443", "team-a"),
        (["second", "first"], None, "https://b.example", "default"),
        (["first", "second"], "prod", "https://b.example", "default"),
        (["second", "first"], "dev", "https://b.example", "shadowed"),
    ],
)
def test_the_first_definition_of_each_name_wins(
    files: dict[str, str], order: list[str], context: str | None, server: str, namespace: str
) -> None:
    loaded = load_kubeconfig([files[name] for name in order], context)
    chosen = next(c for c in loaded.data["contexts"] if c["name"] == loaded.context)
    cluster = next(c for c in loaded.data["clusters"] if c["name"] == chosen["context"]["cluster"])
    assert cluster["cluster"]["server"] == server
    assert loaded.namespace == namespace


def test_relative_file_paths_are_relative_to_their_kubeconfig(
    tmp_path: Path, files: dict[str, str]
) -> None:
    loaded = load_kubeconfig([files["first"], files["second"]])
    [user] = [u["user"] for u in loaded.data["users"]]
    assert user["client-certificate"] == str(tmp_path.resolve() / "certs" / "u.crt")
    assert user["client-key"] == "/abs/u.key"


@pytest.mark.parametrize(
    ("paths", "context", "error"),
    [
        ([], None, "no kubeconfig: give --kubeconfig, set KUBECONFIG or create ~/.kube/config"),
        (["first"], "staging", 'context "staging" does not exist'),
        (["orphan"], None, 'context "lost" names cluster "gone", which does not exist'),
        (["bare"], None, "no current-context is set; give --context"),
    ],
)
def test_a_context_that_cannot_be_used_is_one_error(
    tmp_path: Path, files: dict[str, str], paths: list[str], context: str | None, error: str
) -> None:
    files["orphan"] = kubeconfig(
        tmp_path / "orphan", {"a": "https://a.example"}, {"lost": ("gone", None)}, current="lost"
    )
    files["bare"] = kubeconfig(tmp_path / "bare", {"a": "https://a.example"}, {"x": ("a", None)})
    with pytest.raises(ConfigError) as raised:
        load_kubeconfig([files[name] for name in paths], context)
    assert error in str(raised.value)
