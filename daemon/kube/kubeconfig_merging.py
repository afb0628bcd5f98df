"""Finding and merging kubeconfig files as kubectl does, for the commands a person runs
against their own cluster (``snapshot``, ``simulate``, ``explain``, the kubectl plugin).

kubectl's rules (client-go's ``ClientConfigLoadingRules``), which this follows:

- ``--kubeconfig FILE`` names the one file to read, and it must exist;
- else every file of ``$KUBECONFIG`` (a list separated like ``$PATH``), skipping the ones
  that do not exist;
- else ``~/.kube/config``.

Several files merge name by name: the first file that defines a cluster, user or context
of a name wins, and so does the first file that sets ``current-context``. A relative
certificate, key or token file path is relative to the file that names it. The context
is ``--context`` or else the current context; its namespace (``default`` when it names
none) is where a pod named without one is looked for.

The files are checked by ``kubeconfig`` (shape, server URL, certificate data) and the
merged mapping loaded as the daemon loads one file, so there is one loader, not two.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from volsched.cache.errors import ConfigError
from volsched.daemon.kube.connection import Connection
from volsched.daemon.kube.credentials import credentials_error
from volsched.daemon.kube.kubeconfig import check_config, connect_context, read_kubeconfig

# kubectl's fields that name a file, resolved against the kubeconfig that holds them.
_FILE_FIELDS = {
    "clusters": ("cluster", ("certificate-authority",)),
    "users": ("user", ("client-certificate", "client-key", "tokenFile")),
}
_NAMED_LISTS = ("clusters", "contexts", "users")
DEFAULT_NAMESPACE = "default"


@dataclass(frozen=True, slots=True)
class Kubeconfig:
    """The merged kubeconfig, the context chosen in it and that context's namespace."""

    data: dict[str, Any]
    where: str
    context: str
    namespace: str


def kubeconfig_paths(explicit: str | None, environ: Mapping[str, str]) -> list[str]:
    """The files to read, in kubectl's order of precedence (empty when there are none)."""
    if explicit:
        return [explicit]
    listed = environ.get("KUBECONFIG", "")
    if listed:
        paths = [os.path.expanduser(p) for p in listed.split(os.pathsep) if p]
        return [p for p in dict.fromkeys(paths) if Path(p).is_file()]
    home = Path(environ.get("HOME") or "~").expanduser() / ".kube" / "config"
    return [str(home)] if home.is_file() else []


def _resolved(entry: Mapping[str, Any], list_name: str, base: Path) -> dict[str, Any]:
    """A cluster or user entry with its relative file paths made absolute."""
    body_key, fields = _FILE_FIELDS.get(list_name, ("", ()))
    result = dict(entry)
    body = entry.get(body_key)
    if not fields or not isinstance(body, Mapping):
        return result
    body = dict(body)
    for field in fields:
        value = body.get(field)
        if isinstance(value, str) and value and not Path(value).is_absolute():
            body[field] = str(base / value)
    result[body_key] = body
    return result


def merge_kubeconfigs(paths: Sequence[str]) -> dict[str, Any]:
    """The files merged name by name, the first definition of each name winning."""
    merged: dict[str, Any] = {name: [] for name in _NAMED_LISTS}
    seen: dict[str, set[str]] = {name: set() for name in _NAMED_LISTS}
    for path in paths:
        data = read_kubeconfig(path)
        base = Path(path).resolve().parent
        for list_name in _NAMED_LISTS:
            for entry in data.get(list_name) or []:
                if not isinstance(entry, Mapping):
                    raise credentials_error(path, f"{list_name}: every entry must be a mapping")
                name = entry.get("name")
                if not isinstance(name, str) or not name:
                    raise credentials_error(path, f"{list_name}: an entry has no name")
                if name not in seen[list_name]:
                    seen[list_name].add(name)
                    merged[list_name].append(_resolved(entry, list_name, base))
        current = data.get("current-context")
        if current and "current-context" not in merged:
            merged["current-context"] = current
    return merged


def load_kubeconfig(paths: Sequence[str], context: str | None = None) -> Kubeconfig:
    """The merged files with ``context`` (or the current context) chosen and checked."""
    if not paths:
        raise ConfigError(
            "no kubeconfig: give --kubeconfig, set KUBECONFIG or create ~/.kube/config"
        )
    where = ":".join(paths)
    data = merge_kubeconfigs(paths)
    chosen = context or data.get("current-context")
    if not chosen:
        raise credentials_error(where, "no current-context is set; give --context")
    if not isinstance(chosen, str):
        raise credentials_error(where, "current-context must be a context's name")
    check_config(data, where, chosen)
    body = next(c["context"] for c in data["contexts"] if c.get("name") == chosen)
    namespace = body.get("namespace") or DEFAULT_NAMESPACE
    if not isinstance(namespace, str):
        raise credentials_error(where, f"contexts[{chosen}].context.namespace: must be a string")
    return Kubeconfig(data, where, chosen, namespace)


async def connect_for(kubeconfig: Kubeconfig) -> Connection:
    """A connection for the chosen context of merged files (their relative paths are
    already absolute)."""
    return await connect_context(kubeconfig.data, kubeconfig.where, kubeconfig.context, Path("/"))
