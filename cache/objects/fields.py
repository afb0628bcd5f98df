"""Reading raw Kubernetes JSON into typed views, with errors that name the field.

Every parser walks the raw object through a ``Fields`` reader so that a wrong type or a
bad quantity ends as one ``ObjectError`` naming kind, name and the dotted field path,
never a ``KeyError`` or ``TypeError`` from deep inside.

Numbers are bounded where they enter, as the API server bounds them: an integer field is
an int64 unless upstream declares it int32 (priorities, weights, maxSkew), a quantity
holds at most 2^63 - 1 (see ``volsched.cache.quantity``), and a time is RFC 3339 exactly
as the API server parses it — so nothing downstream meets an integer too large for a
float or a date outside what ``datetime`` holds.
"""

from __future__ import annotations

import builtins
import re
from collections.abc import Mapping
from datetime import datetime
from fractions import Fraction
from typing import Any

from volsched.cache.errors import ObjectError
from volsched.cache.quantity import QuantityError, parse_quantity

Raw = Mapping[str, Any]

# The ranges of Go's integer types, which the API server decodes fields into.
INT32 = 32
INT64 = 64


def shown(value: object, limit: int = 40) -> str:
    """``repr`` of a value for a one-line message, cut short if long."""
    if isinstance(value, builtins.int) and not isinstance(value, builtins.bool):
        text = str(value) if value.bit_length() < 4 * limit else "a very large integer"
    else:
        text = repr(value)
    return text if len(text) <= limit else text[:limit] + "…"


def shown_key(key: object, limit: int = 60) -> str:
    """A mapping key for a field path, cut short if long."""
    text = key if isinstance(key, str) else shown(key, limit)
    return text if len(text) <= limit else text[:limit] + "…"


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
        if not key:
            return self.path or "(object)"
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
            raise self.fail(key, f"must be true or false, not {shown(value)}")
        return value

    def int(
        self, key: builtins.str, default: builtins.int = 0, bits: builtins.int = INT64
    ) -> builtins.int:
        """An integer that fits the field's Go type (int64, or int32 where upstream
        declares it so): the API server refuses a larger one when it decodes the object."""
        value = self._data.get(key)
        if value is None:
            return default
        if isinstance(value, builtins.bool) or not isinstance(value, builtins.int):
            raise self.fail(key, f"must be an integer, not {shown(value)}")
        if not -(1 << (bits - 1)) <= value < 1 << (bits - 1):
            raise self.fail(key, f"{shown(value)} does not fit in an int{bits}")
        return value

    def opt_int(self, key: builtins.str, bits: builtins.int = INT64) -> builtins.int | None:
        if self._data.get(key) is None:
            return None
        return self.int(key, bits=bits)

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
                raise self.fail(f"{key}.{shown_key(k)}", f"must be a string, not {shown(v)}")
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
                raise self.fail(f"{key}.{shown_key(k)}", str(exc)) from None
        return result

    def timestamp(self, key: builtins.str) -> float | None:
        """An RFC 3339 time as seconds since the epoch (None when absent)."""
        value = self._data.get(key)
        if value is None:
            return None
        if isinstance(value, datetime):
            # Not from volsched's YAML reader (it keeps times as text); naive is UTC.
            return _epoch_seconds(value.replace(tzinfo=None), value.utcoffset())
        if not isinstance(value, builtins.str):
            raise self.fail(key, f"must be an RFC 3339 time, not {shown(value)}")
        return parse_time(value, lambda problem: self.fail(key, problem))


# RFC 3339 as the API server reads a metav1.Time (Go's time.RFC3339 layout, with an
# optional fraction): a date, "T", a time, and "Z" or an offset. ASCII digits only.
_RFC3339 = re.compile(
    r"([0-9]{4})-([0-9]{2})-([0-9]{2})[Tt]([0-9]{2}):([0-9]{2}):([0-9]{2})(\.[0-9]+)?"
    r"(?:([Zz])|([+-])([0-9]{2}):([0-9]{2}))"
)
_EPOCH = datetime(1970, 1, 1)


def parse_time(text: str, fail: Any = None) -> float:
    """RFC 3339 (with ``Z`` or an offset, optional fraction) to epoch seconds.

    Stricter than ``datetime.fromisoformat``, as the API server is: no date without a
    time, no time without a zone, no space for ``T``, no week dates.
    """

    def refuse(problem: str) -> Exception:
        return ValueError(problem) if fail is None else fail(problem)

    candidate = text
    match = _RFC3339.fullmatch(candidate)
    if match is None:
        problem = f"{shown(text)} is not an RFC 3339 time"
        if _RFC3339.fullmatch(candidate + "Z") is not None:
            problem = f"{shown(text)} has no time zone"
        raise refuse(problem)
    year, month, day, hour, minute, second = (int(part) for part in match.groups()[:6])
    fraction, zulu, sign, offset_hours, offset_minutes = match.groups()[6:]
    try:
        moment = datetime(year, month, day, hour, minute, second)
    except ValueError as exc:
        raise refuse(f"{shown(text)} is not a valid time ({exc})") from None
    offset = 0
    if not zulu:
        if int(offset_hours) > 23 or int(offset_minutes) > 59:
            raise refuse(f"{shown(text)} has a time zone offset out of range")
        offset = (int(offset_hours) * 60 + int(offset_minutes)) * 60
        offset = -offset if sign == "-" else offset
    return (moment - _EPOCH).total_seconds() + float(fraction or 0) - offset


def _epoch_seconds(moment: datetime, offset: Any) -> float:
    seconds = (moment - _EPOCH).total_seconds()
    return seconds - offset.total_seconds() if offset is not None else seconds
