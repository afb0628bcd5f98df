"""Kubernetes resource quantities, parsed exactly.

A quantity is a signed decimal number with an optional suffix: binary (Ki … Ei), decimal
SI (n u m k M G T P E) or a decimal exponent (``1e3``, ``1.5E-2``).  Values are kept as
``Fraction`` so ``0.1`` stays exact; the scheduler then rounds up the way the API machinery
does (``Value()`` and ``MilliValue()`` round away from zero to the next integer).

A quantity is bounded as the API machinery bounds it: its value is read into an int64
(``Value()``), so a magnitude above 2^63 - 1 is refused, however it is written — a
string, a YAML integer of a hundred digits, a float such as ``1e300`` — except with a
binary suffix, which upstream caps at 2^63 - 1 (``8Ei`` reads as 2^63 - 1), and so
does this.
"""

from __future__ import annotations

import functools
import math
import re
from fractions import Fraction

_BINARY = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
_DECIMAL = {
    "n": Fraction(1, 10**9),
    "u": Fraction(1, 10**6),
    "m": Fraction(1, 10**3),
    "": Fraction(1),
    "k": Fraction(10**3),
    "M": Fraction(10**6),
    "G": Fraction(10**9),
    "T": Fraction(10**12),
    "P": Fraction(10**15),
    "E": Fraction(10**18),
}
_PATTERN = re.compile(
    r"^(?P<sign>[+-]?)(?P<number>\d+(?:\.\d*)?|\.\d+)"
    r"(?:(?P<exp>[eE][+-]?\d+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$",
    re.ASCII,  # upstream's digits are 0-9: "٣" (an Arabic-Indic three) is no quantity
)


# A real quantity is a few characters; thousands of digits only cost time to parse.
MAX_QUANTITY_CHARS = 64
# The largest magnitude ``resource.Quantity.Value()`` returns (math.MaxInt64).
MAX_QUANTITY = 2**63 - 1
_OUT_OF_RANGE = f"is out of range (a quantity holds at most 2^63 - 1 = {MAX_QUANTITY})"


class QuantityError(ValueError):
    """The text is not a Kubernetes quantity."""


def parse_quantity(value: object) -> Fraction:
    """Parse a quantity given as YAML may give it: a string, an int or a float."""
    if type(value) is str:
        return _parse_text(value)
    return _checked(value)


def _checked(value: object) -> Fraction:
    number = _parse(value)
    if abs(number) > MAX_QUANTITY:
        raise QuantityError(_OUT_OF_RANGE)
    return number


# A cluster writes the same few quantities ("100m", "256Mi", a node size) over and over,
# in every pod and node a watch delivers: each text is parsed once. (A Fraction never
# changes, so sharing one is safe; a text that fails is not cached and fails again.)
_parse_text = functools.lru_cache(maxsize=4096)(_checked)


def _parse(value: object) -> Fraction:
    if isinstance(value, bool):
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        if value.bit_length() > 64:
            raise QuantityError(_OUT_OF_RANGE)
        return Fraction(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise QuantityError(f"{value!r} is not a quantity")
        return Fraction(str(value))
    if not isinstance(value, str):
        raise QuantityError(f"a {type(value).__name__} is not a quantity")
    text = value.strip()
    if len(text) > MAX_QUANTITY_CHARS:
        raise QuantityError(f"quantity longer than {MAX_QUANTITY_CHARS} characters")
    match = _PATTERN.match(text)
    if match is None:
        raise QuantityError(f"{value!r} is not a quantity")
    if not text.isascii():
        raise QuantityError(f"{value!r} is not a quantity (digits must be ASCII)")
    number = Fraction(match["number"])
    if match["exp"]:
        exponent = int(match["exp"][1:])
        if abs(exponent) > 60:
            raise QuantityError(f"{value!r} is out of range")
        number *= Fraction(10) ** exponent
    elif match["suffix"]:
        suffix = match["suffix"]
        number *= _BINARY[suffix] if suffix in _BINARY else _DECIMAL[suffix]
        if suffix in _BINARY:
            # ParseQuantity: "The max is just a simple cap" (for BinarySI).
            number = min(number, Fraction(MAX_QUANTITY))
    return -number if match["sign"] == "-" else number


def ceil_value(quantity: Fraction) -> int:
    """The integer value, rounded up as ``resource.Quantity.Value()`` does."""
    return math.ceil(quantity)


def ceil_milli_value(quantity: Fraction) -> int:
    """The value in thousandths, rounded up as ``resource.Quantity.MilliValue()`` does."""
    return math.ceil(quantity * 1000)
