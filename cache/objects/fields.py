"""Reading raw Kubernetes JSON into typed views, with errors that name the field.

Every parser walks the raw object through a ``Fields`` reader so that a wrong type or a
bad quantity ends as one ``ObjectError`` naming kind, name and the dotted field path,
never a ``KeyError`` or ``TypeError`` from deep inside.
"""

from __future__ import annotations

import builtins
from collections.abc import Mapping
from datetime import datetime
from fractions import Fraction
from typing import Any

from volsched.cache.errors import ObjectError
from volsched.cache.quantity import QuantityError, parse_quantity

Raw = Mapping[str, Any]


class Fields:
    """A cursor over one mapping of a raw object, remembering its path for errors."""

    __slots__ = ("_data", "kind", "name", "path")

    def __init__(
        self, data: object, kind: builtins.str, name: builtins.str, path: builtins.str = ""
    ) -> None:
        if data is None:
            data = {}
        if not isinstance(data, Mapping):
            raise ObjectError(kind, name, path or "(object)", "must be a mapping")
        self._data: Mapping[builtins.str, Any] = data
        self.kind = kind
        self.name = name
        self.path = path

    def fail(self, key: builtins.str, problem: builtins.str) -> ObjectError:
        return ObjectError(self.kind, self.name, self._at(key), problem)

    def _at(self, key: builtins.str) -> builtins.str:
        return f"{self.path}.{key}" if self.path else key

    def has(self, key: builtins.str) -> builtins.bool:
        return self._data.get(key) is not None

    def raw(self, key: builtins.str) -> Any:
        return self._data.get(key)

    def sub(self, key: builtins.str) -> Fields:
        return Fields(self._data.get(key), self.kind, self.name, self._at(key))

    def items(self, key: builtins.str) -> list[Fields]:
        value = self._data.get(key)
        if value is None:
            return []
        if not isinstance(value, list):
            raise self.fail(key, "must be a list")
        return [
            Fields(item, self.kind, self.name, f"{self._at(key)}[{index}]")
            for index, item in enumerate(value)
        ]

    def str(self, key: builtins.str, default: builtins.str = "") -> builtins.str:
        value = self._data.get(key)
        if value is None:
            return default
        if not isinstance(value, builtins.str):
            raise self.fail(key, f"must be a string, not {type(value).__name__}")
        return value

    def opt_str(self, key: builtins.str) -> builtins.str | None:
        value = self._data.get(key)
        if value is None:
            return None
        return self.str(key)

    def bool(self, key: builtins.str, default: builtins.bool = False) -> builtins.bool:
        value = self._data.get(key)
        if value is None:
            return default
        if not isinstance(value, builtins.bool):
            raise self.fail(key, f"must be true or false, not {value!r}")
        return value

    def int(self, key: builtins.str, default: builtins.int = 0) -> builtins.int:
        value = self._data.get(key)
        if value is None:
            return default
        if isinstance(value, builtins.bool) or not isinstance(value, builtins.int):
            raise self.fail(key, f"must be an integer, not {value!r}")
        return value

    def opt_int(self, key: builtins.str) -> builtins.int | None:
        if self._data.get(key) is None:
            return None
        return self.int(key)

    def str_list(self, key: builtins.str) -> tuple[builtins.str, ...]:
        value = self._data.get(key)
        if value is None:
            return ()
        if not isinstance(value, list) or not all(isinstance(v, builtins.str) for v in value):
            raise self.fail(key, "must be a list of strings")
        return tuple(value)

    def str_map(self, key: builtins.str) -> dict[builtins.str, builtins.str]:
        value = self._data.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(key, "must be a mapping of strings")
        result: dict[builtins.str, builtins.str] = {}
        for k, v in value.items():
            if not isinstance(k, builtins.str) or not isinstance(v, builtins.str):
                raise self.fail(f"{key}.{k}", f"must be a string, not {v!r}")
            result[k] = v
        return result

    def quantity(self, key: builtins.str) -> Fraction | None:
        value = self._data.get(key)
        if value is None:
            return None
        try:
            return parse_quantity(value)
        except QuantityError as exc:
            raise self.fail(key, str(exc)) from None

    def quantity_map(self, key: builtins.str) -> dict[builtins.str, Fraction]:
        value = self._data.get(key)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(key, "must be a mapping of quantities")
        result: dict[builtins.str, Fraction] = {}
        for k, v in value.items():
            try:
                result[builtins.str(k)] = parse_quantity(v)
            except QuantityError as exc:
                raise self.fail(f"{key}.{k}", str(exc)) from None
        return result

    def timestamp(self, key: builtins.str) -> float | None:
        """An RFC 3339 time as seconds since the epoch (None when absent)."""
        value = self._data.get(key)
        if value is None:
            return None
        if isinstance(value, datetime):  # YAML loaders turn unquoted times into datetimes
            return value.timestamp()
        if not isinstance(value, builtins.str):
            raise self.fail(key, f"must be an RFC 3339 time, not {value!r}")
        return parse_time(value, lambda problem: self.fail(key, problem))


def parse_time(text: str, fail: Any = None) -> float:
    """RFC 3339 (with ``Z`` or an offset, optional fraction) to epoch seconds."""
    candidate = text.strip()
    if candidate.endswith(("Z", "z")):
        candidate = candidate[:-1] + "+00:00"
    try:
        moment = datetime.fromisoformat(candidate)
    except ValueError:
        problem = f"{text!r} is not an RFC 3339 time"
        if fail is None:
            raise ValueError(problem) from None
        raise fail(problem) from None
    if moment.tzinfo is None:
        problem = f"{text!r} has no time zone"
        if fail is None:
            raise ValueError(problem)
        raise fail(problem)
    return moment.timestamp()
