"""Kubernetes quantities (``10Gi``, ``1.5G``, ``1e3``) as whole bytes, rounded up.

A copy of the few lines the controllers need, so the emulator stands alone.
"""

from __future__ import annotations

import math
import re
from fractions import Fraction

_SUFFIXES = {
    "Ki": Fraction(2**10),
    "Mi": Fraction(2**20),
    "Gi": Fraction(2**30),
    "Ti": Fraction(2**40),
    "Pi": Fraction(2**50),
    "Ei": Fraction(2**60),
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
    r"^(?P<number>[+-]?(?:\d+(?:\.\d*)?|\.\d+))"
    r"(?:(?P<exp>[eE][+-]?\d+)|(?P<suffix>Ki|Mi|Gi|Ti|Pi|Ei|[numkMGTPE]))?$"
)


def to_bytes(value: object) -> int | None:
    """The quantity rounded up to an integer, or None when it is not a quantity."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return math.ceil(value) if math.isfinite(value) else None
    if not isinstance(value, str):
        return None
    match = _PATTERN.match(value.strip())
    if match is None:
        return None
    number = Fraction(match["number"])
    if match["exp"]:
        number *= Fraction(10) ** int(match["exp"][1:])
    else:
        number *= _SUFFIXES[match["suffix"] or ""]
    return math.ceil(number)
