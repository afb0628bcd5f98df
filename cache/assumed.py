"""The assume layer: what this scheduler decided that the API server has not confirmed.

Semantics follow kube-scheduler's AssumeCache, so behaviour under races is the one
operators know:

- resource versions are compared as integers;
- an informer add/update replaces an entry only if it is strictly newer than the latest
  (possibly assumed) version — an informer resync cannot wipe an assumption;
- ``assume`` rejects an unknown key or an object older than the latest version (equal is
  allowed, which is how an assumption is made on top of the informer copy);
- ``restore`` puts the informer copy back, and is a no-op for an unknown key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Generic, Protocol, TypeVar

from volsched.cache.objects.meta import ObjectMeta


class _Versioned(Protocol):
    @property
    def meta(self) -> ObjectMeta: ...


T = TypeVar("T", bound=_Versioned)


class AssumeError(Exception):
    """An assumption was refused (unknown object or out of sync)."""


class AssumeCache(Generic[T]):
    """One kind's objects: the API server's copy and the latest (maybe assumed) copy."""

    def __init__(
        self, description: str, on_change: Callable[[T | None, T | None], None] | None = None
    ):
        self.description = description
        self._api: dict[str, T] = {}
        self._latest: dict[str, T] = {}
        self._on_change = on_change

    def __len__(self) -> int:
        return len(self._latest)

    def __contains__(self, key: str) -> bool:
        return key in self._latest

    def get(self, key: str) -> T | None:
        return self._latest.get(key)

    @property
    def latest(self) -> Mapping[str, T]:
        """The latest copy of every object, read-only (for hot loops)."""
        return self._latest

    def get_api(self, key: str) -> T | None:
        return self._api.get(key)

    def values(self) -> Iterator[T]:
        return iter(self._latest.values())

    def api_items(self) -> Iterator[tuple[str, T]]:
        """The API server's copy of every object, by key (layer 1 alone)."""
        return iter(self._api.items())

    def is_assumed(self, key: str) -> bool:
        latest = self._latest.get(key)
        return latest is not None and latest is not self._api.get(key)

    def assumed_keys(self) -> list[str]:
        return [key for key in self._latest if self.is_assumed(key)]

    def _changed(self, old: T | None, new: T | None) -> None:
        if self._on_change is not None and old is not new:
            self._on_change(old, new)

    def informer_upsert(self, key: str, obj: T) -> bool:
        """Apply an add/update from the API server; False when it was not newer."""
        latest = self._latest.get(key)
        if latest is not None and obj.meta.resource_version <= latest.meta.resource_version:
            return False
        self._api[key] = obj
        self._latest[key] = obj
        self._changed(latest, obj)
        return True

    def informer_delete(self, key: str) -> T | None:
        self._api.pop(key, None)
        latest = self._latest.pop(key, None)
        if latest is not None:
            self._changed(latest, None)
        return latest

    def assume(self, key: str, obj: T) -> None:
        latest = self._latest.get(key)
        if latest is None:
            raise AssumeError(f"{self.description} {key!r} not found")
        stored = latest.meta.resource_version
        new = obj.meta.resource_version
        if new < stored:
            raise AssumeError(
                f"{self.description} {key!r} is out of sync (stored: {stored}, assume: {new})"
            )
        self._latest[key] = obj
        self._changed(latest, obj)

    def restore(self, key: str) -> None:
        latest = self._latest.get(key)
        api = self._api.get(key)
        if latest is None or api is None or latest is api:
            return
        self._latest[key] = api
        self._changed(latest, api)
