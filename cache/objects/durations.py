"""Go durations (``time.ParseDuration``, as ``metav1.Duration`` reads them from YAML):
one reading for every configuration field that takes one.

A Go duration is an int64 of nanoseconds, so anything past 2562047h47m16.854775807s
does not parse upstream ("invalid duration"): kube-scheduler refuses the file, and so
does volsched, rather than sleep for a thousand years or overflow a float. The sum is
counted in whole nanoseconds, as Go counts it, each part's fraction cut off at the
nanosecond."""

from __future__ import annotations

import re
from fractions import Fraction

_PART = re.compile(r"([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(ns|us|µs|ms|s|m|h)")
_UNIT_NANOSECONDS = {
    "ns": 1,
    "us": 10**3,
    "µs": 10**3,
    "ms": 10**6,
    "s": 10**9,
    "m": 60 * 10**9,
    "h": 3600 * 10**9,
}
MAX_NANOSECONDS = 2**63 - 1
LONGEST = "2562047h47m16.854775807s"
# Past this many significant digits a part is beyond the range whatever its unit
# (int() of thousands of digits is refused by Python itself).
_MOST_DIGITS = 30


def _nanoseconds(number: str, unit: int) -> int | None:
    whole, _, fraction = number.partition(".")
    whole = whole.lstrip("0")
    if len(whole) > _MOST_DIGITS:
        return None
    digits = fraction[:_MOST_DIGITS]
    part = Fraction(int(digits or "0"), 10 ** len(digits)) * unit
    return int(whole or "0") * unit + int(part)


def go_duration_seconds(text: str) -> float | None:
    """``15s``, ``1m30s``, ``500ms`` or ``0`` in seconds; None when ``text`` is not a
    duration or one past Go's range (the caller names the field; ``duration_problem``
    says which). Unsigned: a sign is not a duration here."""
    if text == "0":
        return 0.0
    position = 0
    total = 0
    for match in _PART.finditer(text):
        if match.start() != position:
            break
        part = _nanoseconds(match.group(1), _UNIT_NANOSECONDS[match.group(2)])
        if part is None or total + part > MAX_NANOSECONDS:
            return None
        total += part
        position = match.end()
    if position != len(text) or position == 0:
        return None
    return total / 1e9


BEYOND_RANGE = f"must be at most {LONGEST} (Go's time.Duration)"


def beyond_range(text: str) -> bool:
    """Whether ``text``, refused by ``go_duration_seconds``, is a duration too long for
    Go rather than no duration at all."""
    return re.fullmatch(f"(?:{_PART.pattern})+", text) is not None


def duration_problem(text: str, example: str = "15s") -> str:
    """What to say of ``text`` when ``go_duration_seconds`` refused it."""
    shown = text if len(text) <= 40 else text[:40] + "…"
    if beyond_range(text):
        return f"{BEYOND_RANGE}, not {shown!r}"
    return f"must be a duration such as {example}, not {shown!r}"
