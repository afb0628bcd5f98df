"""Stored JSON text: orjson's, and for what orjson refuses the standard library's, so an
object read back from an old file is still stored."""

from __future__ import annotations

import json
from typing import Any

import pytest

from volsched.cache.store.flushing import dumps


@pytest.mark.parametrize(
    "raw",
    [
        {"metadata": {"name": "p", "labels": {"app": "web"}}, "spec": {"priority": 0}},
        {"message": "déjà vu ✓"},
        {"count": 10**30},  # past 64 bits: orjson refuses it
        {"name": "\ud800"},  # a lone surrogate: orjson refuses it
    ],
)
def test_stored_text_is_compact_json_of_the_object(raw: dict[str, Any]) -> None:
    assert dumps(raw) == json.dumps(raw, separators=(",", ":"), ensure_ascii=False)
