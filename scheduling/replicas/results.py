"""What the replica scheduler decided for one volume."""

from __future__ import annotations

from dataclasses import dataclass

from volsched.scheduling.replicas.reasons import joined


@dataclass(frozen=True, slots=True)
class DiskPlacement:
    node: str
    disk: str


@dataclass(frozen=True, slots=True)
class VolumePlacement:
    """Placements in decision order: waiting Replica objects first (in name order, see
    ``replicas_to_fill``), then new replicas.  ``unplaced`` is the shortfall still left;
    ``reasons`` are distinct, sorted Longhorn reason strings, empty when it is zero."""

    volume: str
    placed: tuple[DiskPlacement, ...]
    unplaced: int
    reasons: tuple[str, ...]

    @property
    def message(self) -> str | None:
        return joined(self.reasons) or None
