"""Tests against a real Kubernetes control plane, from the binaries in
``VOLSCHED_KUBE_ASSETS``; skipped with one line without them."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench.oracle.controlplane import ASSETS_ENV, assets_dir


def required_assets() -> Path:
    """The binaries' directory; skips the calling test module when it is not given."""
    assets = assets_dir()
    if assets is None:
        pytest.skip(
            f"set {ASSETS_ENV} to a directory with etcd, kube-apiserver, "
            "kube-controller-manager and kube-scheduler",
            allow_module_level=True,
        )
    return assets
