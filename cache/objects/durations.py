"""Go durations (``time.ParseDuration``, as ``metav1.Duration`` reads them from YAML):
one reading for every configuration field that takes one."""

from __future__ import annotations

import math
import re

_PART = re.compile(r"(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|ms|s|m|h)")
_UNIT_SECONDS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def go_duration_seconds(text: str) -> float | None:
    """``15s``, ``1m30s``, ``500ms`` or ``0`` in seconds; None when ``text`` is not a
    duration (the caller names the field). Unsigned: a sign is not a duration here."""
    if text == "0":
        return 0.0
    position = 0
    total = 0.0
    for match in _PART.finditer(text):
        if match.start() != position:
            break
        total += float(match.group(1)) * _UNIT_SECONDS[match.group(2)]
        position = match.end()
    if position != len(text) or position == 0 or not math.isfinite(total):
        return None  # not a duration, or one of hundreds of digits (an infinite float)
    return total
