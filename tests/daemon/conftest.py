"""A KubeClient connected to the test module's own ``server`` fixture (each module starts
the emulator it needs)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from volsched.daemon.kube.client import KubeClient
from volsched.emulator import ApiServer


@pytest.fixture
async def client(server: ApiServer, tmp_path: Path) -> AsyncIterator[KubeClient]:
    kubeconfig = server.write_kubeconfig(tmp_path / "kubeconfig")
    connected = await KubeClient.connect(str(kubeconfig))
    yield connected
    await connected.close()
