"""A kubeconfig for the emulator: one cluster, no credentials; over HTTPS, the cluster
carries the emulator's CA as ``certificate-authority-data``, as kubeadm's admin.conf does."""

from __future__ import annotations

import base64
from pathlib import Path

import yaml

CONTEXT = "volsched-emulator"


def kubeconfig(
    url: str, namespace: str = "default", certificate_authority: bytes | None = None
) -> dict[str, object]:
    cluster: dict[str, str] = {"server": url}
    if certificate_authority is not None:
        cluster["certificate-authority-data"] = base64.b64encode(certificate_authority).decode()
    return {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": CONTEXT, "cluster": cluster}],
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


def write_kubeconfig(
    path: str | Path,
    url: str,
    namespace: str = "default",
    certificate_authority: bytes | None = None,
) -> Path:
    """Write a kubeconfig kubernetes-asyncio (and kubectl) can load; returns the path.
    ``certificate_authority``: the PEM of the CA to trust for an https URL."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    config = kubeconfig(url, namespace, certificate_authority)
    target.write_text(yaml.safe_dump(config, sort_keys=False))
    return target
