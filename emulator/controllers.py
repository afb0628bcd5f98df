"""The controllers a scheduler relies on in a real cluster, as asyncio tasks.

Each controller is a finite, synchronous ``reconcile()`` that looks at the whole (small)
cluster and schedules delayed actions, wrapped in a thin loop that runs it whenever the
store changes.  An action re-checks its conditions when its delay has passed, so a
change in between (an annotation removed, a claim deleted) cancels it, as in a real
controller's next sync.  Writes go through the registry, so watchers see them exactly as
they would see a client's.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from volsched.emulator.errors import ApiError
from volsched.emulator.raw import Raw
from volsched.emulator.registry import Registry
from volsched.emulator.resources import ResourceType
from volsched.emulator.store import Change

log = logging.getLogger(__name__)

RETRY_SECONDS = 0.1


@dataclass(frozen=True, slots=True)
class ControllerSettings:
    """Which controllers run, and how slowly.  ``ControllerSettings.none()`` runs none."""

    pv_controller: bool = True
    pv_bind_delay_seconds: float = 0.1
    provisioner: bool = True
    provision_delay_seconds: float = 0.2
    # Provisioner names the emulated provisioner never answers for, as a broken or
    # absent external provisioner never does.
    silent_provisioners: tuple[str, ...] = ()
    local_volume_root: str = "/mnt/volsched"
    storage_agent: bool = True
    replica_sync_delay_seconds: float = 0.1
    kubelet: bool = False
    node_ready_delay_seconds: float = 0.5
    pod_start_delay_seconds: float = 0.5
    # kube-controller-manager's ServiceAccount and node lifecycle controllers (see
    # core_controllers); both off is a bare control plane.
    service_accounts: bool = True
    node_lifecycle: bool = True
    # kube-apiserver's StorageObjectInUseProtection admission: new claims and PVs get
    # their protection finalizers, which only kube-controller-manager's protection
    # controllers (not emulated) lift — so a deleted one stays Terminating, as on a bare
    # control plane, until whoever made it takes the finalizer off.
    storage_protection: bool = False

    @classmethod
    def none(cls) -> ControllerSettings:
        return cls(
            pv_controller=False,
            provisioner=False,
            storage_agent=False,
            kubelet=False,
            service_accounts=False,
            node_lifecycle=False,
        )


class Controller:
    """Base: wake on every store change, reconcile, run delayed actions once per key."""

    name = "controller"

    def __init__(self, registry: Registry, settings: ControllerSettings) -> None:
        self.registry = registry
        self.settings = settings
        self._wake = asyncio.Event()
        self._pending: dict[str, asyncio.Task[None]] = {}

    def notify(self, key: tuple[str, str], change: Change) -> None:
        self._wake.set()

    def reconcile(self) -> None:
        raise NotImplementedError

    async def run(self) -> None:
        self._wake.set()
        try:
            while True:
                await self._wake.wait()
                self._wake.clear()
                try:
                    self.reconcile()
                except ApiError as error:
                    # A write lost a race or was refused: look again shortly.
                    log.info("%s: %s", self.name, error)
                    await asyncio.sleep(RETRY_SECONDS)
                    self._wake.set()
                await asyncio.sleep(0)
        finally:
            for task in list(self._pending.values()):
                task.cancel()
            if self._pending:
                await asyncio.gather(*self._pending.values(), return_exceptions=True)

    def later(
        self, key: str, delay_seconds: float, action: Callable[[Any], None], argument: Any
    ) -> None:
        """Run ``action(argument)`` after the delay, unless one for ``key`` is waiting."""
        if key in self._pending:
            return
        # A fresh context: the action is the controller's write, not that of the client
        # whose request triggered it (whose field manager the request's context holds).
        self._pending[key] = asyncio.create_task(
            self._after(key, delay_seconds, functools.partial(action, argument)),
            context=contextvars.Context(),
        )

    async def _after(self, key: str, delay_seconds: float, action: Callable[[], None]) -> None:
        try:
            await asyncio.sleep(delay_seconds)
        finally:
            self._pending.pop(key, None)
        try:
            action()
        except ApiError as error:
            # Lost a race with a client (409, 404): the next reconcile looks again.
            log.info("%s: %s: %s", self.name, key, error)
            self._wake.set()

    # Helpers for subclasses.

    def kind(self, group: str, plural: str) -> ResourceType | None:
        return self.registry.storage_type(group, plural)

    def objects(self, group: str, plural: str) -> list[Raw]:
        return self.registry.objects(group, plural)

    def find(self, group: str, plural: str, namespace: str, name: str) -> Raw | None:
        return self.registry.store.get((group, plural), namespace, name)

    def crd_exists(self, name: str) -> bool:
        return self.find("apiextensions.k8s.io", "customresourcedefinitions", "", name) is not None

    def write(self, group: str, plural: str, new: Raw, subresource: str | None = None) -> Raw:
        """Update ``new`` (a modified copy of a stored object) through the registry."""
        resource = self.kind(group, plural)
        if resource is None:
            raise ApiError(404, "NotFound", f"{plural}.{group} is not served")
        meta = new.get("metadata") or {}
        return self.registry.update(
            resource, str(meta.get("namespace") or ""), str(meta["name"]), new, subresource
        )
