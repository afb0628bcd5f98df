"""Starting and stopping the enabled controllers (see ``controllers``)."""

from __future__ import annotations

import asyncio

from volsched.emulator.controllers import Controller, ControllerSettings
from volsched.emulator.core_controllers import NodeLifecycleController, ServiceAccountController
from volsched.emulator.node_agents import Kubelet, StorageAgent
from volsched.emulator.provisioner import Provisioner
from volsched.emulator.pv_controller import PersistentVolumeController
from volsched.emulator.registry import Registry


class ControllerManager:
    """Starts the enabled controllers as tasks and stops them cleanly."""

    def __init__(self, registry: Registry, settings: ControllerSettings) -> None:
        self.registry = registry
        self.controllers: list[Controller] = []
        enabled = (
            (settings.pv_controller, PersistentVolumeController),
            (settings.provisioner, Provisioner),
            (settings.storage_agent, StorageAgent),
            (settings.kubelet, Kubelet),
            (settings.service_accounts, ServiceAccountController),
            (settings.node_lifecycle, NodeLifecycleController),
        )
        for on, factory in enabled:
            if on:
                self.controllers.append(factory(registry, settings))
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        for controller in self.controllers:
            self.registry.store.listeners.append(controller.notify)
            self._tasks.append(
                asyncio.create_task(controller.run(), name=f"emulator-{controller.name}")
            )

    async def stop(self) -> None:
        for controller in self.controllers:
            if controller.notify in self.registry.store.listeners:
                self.registry.store.listeners.remove(controller.notify)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        self._tasks.clear()
