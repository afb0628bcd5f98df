"""The objects of the storage systems volsched reads, one store per owner.

Two systems describe replicated storage: volsched's own ``volsched.io`` StorageNodes,
Volumes and Replicas, which volsched writes, and Longhorn's ``longhorn.io`` Nodes, Volumes,
Replicas and Settings, which only longhorn-manager writes. Each lives in its own
``StorageSystem``, keyed as its watch keys it, so a relist of one never sees the other's
objects vanish and a writer can ask which system an object belongs to.

The replica scheduler and pod locality decide over both at once (one decision code path
serves both systems): ``StorageObjects`` keeps the merged by-name views they read. When
both systems have an object of the same name, the one written last shows, and removing it
shows the other again.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from volsched.cache.objects.longhorn import LonghornSetting
from volsched.cache.objects.replicated import Replica, StorageNode, Volume

VOLSCHED = "volsched.io"
LONGHORN = "longhorn.io"


@dataclass(slots=True)
class StorageSystem:
    """One owner's objects, by the key its watch uses (``namespace/name`` for Longhorn's)."""

    group: str
    nodes: dict[str, StorageNode] = field(default_factory=dict)
    volumes: dict[str, Volume] = field(default_factory=dict)
    replicas: dict[str, Replica] = field(default_factory=dict)
    settings: dict[str, LonghornSetting] = field(default_factory=dict)


# volsched's name of each kind → (the system, which of its maps).
STORAGE_KINDS: dict[str, tuple[str, str]] = {
    "StorageNode": (VOLSCHED, "nodes"),
    "Volume": (VOLSCHED, "volumes"),
    "Replica": (VOLSCHED, "replicas"),
    "LonghornNode": (LONGHORN, "nodes"),
    "LonghornVolume": (LONGHORN, "volumes"),
    "LonghornReplica": (LONGHORN, "replicas"),
    "LonghornSetting": (LONGHORN, "settings"),
}


class StorageObjects:
    """Both systems, and the merged by-name views decisions read."""

    def __init__(self) -> None:
        self.systems = {VOLSCHED: StorageSystem(VOLSCHED), LONGHORN: StorageSystem(LONGHORN)}
        self.volsched = self.systems[VOLSCHED]
        self.longhorn = self.systems[LONGHORN]
        # Merged, by name: what the replica scheduler and locality read.
        self.storage_nodes: dict[str, StorageNode] = {}
        self.volumes: dict[str, Volume] = {}
        self.replicas: dict[str, Replica] = {}
        self.replicas_by_volume: dict[str, dict[str, Replica]] = defaultdict(dict)

    def store(self, kind: str) -> dict[str, Any]:
        group, attribute = STORAGE_KINDS[kind]
        store: dict[str, Any] = getattr(self.systems[group], attribute)
        return store

    def upsert(self, kind: str, obj: Any) -> None:
        attribute = STORAGE_KINDS[kind][1]
        store = self.store(kind)
        old = store.get(obj.meta.key)
        store[obj.meta.key] = obj
        if attribute == "nodes":
            self.storage_nodes[obj.meta.name] = obj
        elif attribute == "volumes":
            self.volumes[obj.meta.name] = obj
        elif attribute == "replicas":
            if old is not None and old.volume_name != obj.volume_name:
                self.replicas_by_volume[old.volume_name].pop(old.meta.name, None)
            self.replicas[obj.meta.name] = obj
            self.replicas_by_volume[obj.volume_name][obj.meta.name] = obj

    def delete(self, kind: str, key: str) -> Any:
        group, attribute = STORAGE_KINDS[kind]
        old = self.store(kind).pop(key, None)
        if old is None or attribute == "settings":
            return old
        name = old.meta.name
        other = self._same_name_elsewhere(group, attribute, name)
        if attribute == "nodes":
            _show(self.storage_nodes, name, old, other)
        elif attribute == "volumes":
            _show(self.volumes, name, old, other)
        else:
            by_volume = self.replicas_by_volume[old.volume_name]
            if by_volume.get(name) is old:
                del by_volume[name]
            if _show(self.replicas, name, old, other) and other is not None:
                self.replicas_by_volume[other.volume_name][name] = other
        return old

    def _same_name_elsewhere(self, group: str, attribute: str, name: str) -> Any:
        for other_group, system in self.systems.items():
            if other_group == group:
                continue
            for obj in getattr(system, attribute).values():
                if obj.meta.name == name:
                    return obj
        return None

    def longhorn_settings(self) -> dict[str, str]:
        """Longhorn's Settings by name (``storage-over-provisioning-percentage`` → "100")."""
        return {s.meta.name: s.value for s in self.longhorn.settings.values()}


def _show(merged: dict[str, Any], name: str, old: Any, other: Any) -> bool:
    """After ``old`` left its system: the other system's object of that name, or none.
    False when ``old`` was not the one shown (nothing changes)."""
    if merged.get(name) is not old:
        return False
    if other is None:
        del merged[name]
    else:
        merged[name] = other
    return True
