"""kube-scheduler's feature gates that change a decision volsched makes.

Given as kube-scheduler takes them (``--feature-gates=Name=true,Other=false``) or as a
``featureGates`` mapping in volsched's own settings. Only the gates volsched implements
are accepted; any other name is refused, as kube-scheduler refuses a gate it does not
know, so a gate that would silently do nothing is never taken.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from volsched.cache.errors import ConfigError

STORAGE_CAPACITY_SCORING = "StorageCapacityScoring"
# Each known gate with its default in kube-scheduler 1.36.
KNOWN_GATES = {STORAGE_CAPACITY_SCORING: False}


@dataclass(frozen=True, slots=True)
class FeatureGates:
    # Alpha in 1.36: VolumeBinding scores nodes by the capacity of the chosen storage.
    storage_capacity_scoring: bool = False

    @classmethod
    def from_mapping(cls, gates: Mapping[str, bool]) -> FeatureGates:
        return cls(storage_capacity_scoring=gates.get(STORAGE_CAPACITY_SCORING, False))


# kube-scheduler 1.36's defaults.
DEFAULT_GATES = FeatureGates()


def _check_name(name: str, source: str) -> None:
    if name not in KNOWN_GATES:
        known = ", ".join(sorted(KNOWN_GATES))
        raise ConfigError(f"{source}: unrecognized feature gate: {name} (volsched knows {known})")


def parse_feature_gates_flag(text: str, source: str = "--feature-gates") -> dict[str, bool]:
    """``Name=true,Other=false`` as kube-scheduler's flag reads it; booleans as Go's
    strconv.ParseBool spells them."""
    gates: dict[str, bool] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, value = item.partition("=")
        name = name.strip()
        if not sep:
            raise ConfigError(f"{source}: missing bool value for {name}")
        _check_name(name, source)
        spelled = value.strip()
        if spelled in ("1", "t", "T", "true", "TRUE", "True"):
            gates[name] = True
        elif spelled in ("0", "f", "F", "false", "FALSE", "False"):
            gates[name] = False
        else:
            raise ConfigError(f"{source}: invalid value of {name}={spelled}, err: not a boolean")
    return gates


def parse_feature_gates_mapping(value: Any, source: str) -> dict[str, bool]:
    """The ``featureGates`` settings key: a mapping of gate names to true or false."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(f"{source}: featureGates: must be a mapping of gate names to booleans")
    gates: dict[str, bool] = {}
    for name, enabled in value.items():
        _check_name(str(name), f"{source}: featureGates")
        if not isinstance(enabled, bool):
            raise ConfigError(f"{source}: featureGates.{name}: must be true or false")
        gates[str(name)] = enabled
    return gates
