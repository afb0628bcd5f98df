"""The ``shadow`` section of the config file, and the ``--shadow`` flag over it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from volsched.cache.errors import ConfigError
from volsched.daemon.config.settings import Settings, ShadowSettings

KEYS = frozenset({"enabled", "schedulerNames"})


def shadow_from_data(value: Any, source: str) -> ShadowSettings:
    """``shadow: {enabled: true, schedulerNames: [default-scheduler]}``; a bad value is one
    ``ConfigError`` naming the file and the key."""
    if value is None:
        return ShadowSettings()
    if not isinstance(value, Mapping):
        raise ConfigError(f"{source}: shadow: must be a mapping")
    unknown = set(value) - KEYS
    if unknown:
        raise ConfigError(f"{source}: shadow.{min(map(str, unknown))}: unknown key")
    enabled = value.get("enabled", False)
    if not isinstance(enabled, bool):
        raise ConfigError(f"{source}: shadow.enabled: must be true or false")
    names = value.get("schedulerNames", list(ShadowSettings().scheduler_names))
    if (
        not isinstance(names, list)
        or not names
        or not all(isinstance(name, str) and name for name in names)
    ):
        raise ConfigError(f"{source}: shadow.schedulerNames: must be a non-empty list of names")
    return ShadowSettings(enabled=enabled, scheduler_names=tuple(dict.fromkeys(names)))


def with_shadow(settings: Settings, flag: bool) -> Settings:
    """``--shadow`` turns shadow mode on over whatever the file says.

    A shadow must not decide pods of a schedulerName volsched itself serves: those it
    would be expected to bind, and a comparison with its own bindings means nothing.
    """
    shadow = replace(settings.shadow, enabled=True) if flag else settings.shadow
    if shadow.enabled:
        served = {settings.scheduler_name, *(p.scheduler_name for p in settings.profiles)}
        overlap = sorted(served & set(shadow.scheduler_names))
        if overlap:
            raise ConfigError(
                f"{settings.source}: shadow.schedulerNames: {overlap[0]} is the schedulerName "
                "volsched serves; a shadow compares with another scheduler's bindings"
            )
    return replace(settings, shadow=shadow)
