"""Reading one field of a KubeSchedulerConfiguration: every mistake is one ``ConfigError``
naming the document and the path inside it (``profiles[0].plugins.score.enabled[1]``)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from volsched.cache.errors import ConfigError
from volsched.cache.objects.fields import shown

INT32_MAX = 2**31 - 1
INT32_MIN = -(2**31)
INT64_MAX = 2**63 - 1


class Where:
    """Builds errors that name the document and the path inside it."""

    def __init__(self, source: str, path: str = "") -> None:
        self.source = source
        self.path = path

    def at(self, key: str | int) -> Where:
        if isinstance(key, int):
            return Where(self.source, f"{self.path}[{key}]")
        return Where(self.source, f"{self.path}.{key}" if self.path else key)

    def fail(self, problem: str) -> ConfigError:
        return ConfigError(f"{self.source}: {self.path or '(document)'}: {problem}")


def mapping(value: Any, where: Where, allowed: Sequence[str]) -> Mapping[str, Any]:
    """A mapping with only the ``allowed`` keys (null: empty, as the API decodes it)."""
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise where.fail("must be a mapping")
    for key in value:
        if key not in allowed:
            raise where.at(str(key)).fail("unknown field")
    return value


def items(value: Any, where: Where) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise where.fail("must be a list")
    return value


def integer(value: Any, where: Where, minimum: int, maximum: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise where.fail(f"must be an integer, not {shown(value)}")
    if not minimum <= value <= maximum:
        raise where.fail(f"must be between {minimum} and {maximum}, not {value}")
    return value


def positive(value: Any, where: Where, maximum: int = INT64_MAX) -> int:
    """An integer greater than zero (upstream's "must be greater than 0")."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise where.fail(f"must be an integer, not {shown(value)}")
    if value <= 0:
        raise where.fail(f"must be greater than 0, not {value}")
    if value > maximum:
        raise where.fail(f"must be at most {maximum}, not {value}")
    return value


def boolean(value: Any, where: Where, default: bool) -> bool:
    if value is None:
        return default
    if not isinstance(value, bool):
        raise where.fail(f"must be true or false, not {shown(value)}")
    return value


def name(value: Any, where: Where) -> str:
    if not isinstance(value, str) or not value:
        raise where.fail("must be a non-empty string")
    return value


def quoted(text: str) -> str:
    """A name from the document, quoted as Go's %q does, every control character escaped
    (the error stays one line whatever the document holds)."""
    return json.dumps(text)
