"""A kubeconfig for the emulator: one cluster over plain HTTP, no credentials."""

from __future__ import annotations

from pathlib import Path

import yaml

CONTEXT = "volsched-emulator"


def kubeconfig(url: str, namespace: str = "default") -> dict[str, object]:
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": {"server": url}}],
        "users": [{"name": CONTEXT, "user": {}}],
        "contexts": [
            {
                "name": CONTEXT,
                "context": {"cluster": CONTEXT, "user": CONTEXT, "namespace": namespace},
            }
        ],
        "current-context": CONTEXT,
        "preferences": {},
    }


def write_kubeconfig(path: str | Path, url: str, namespace: str = "default") -> Path:
    """Write a kubeconfig kubernetes-asyncio (and kubectl) can load; returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(yaml.safe_dump(kubeconfig(url, namespace), sort_keys=False))
    return target
