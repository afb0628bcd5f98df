"""Reading a policy file from disk (the parsing and validation are pure, in
``volsched.scheduling.policy``)."""

from __future__ import annotations

import json
from pathlib import Path

from volsched.cache.errors import ConfigError
from volsched.cache.json_limits import JsonLimitError, loads_bounded
from volsched.scheduling.policy import PolicySpec, parse_policy


def load_policy_file(path: str) -> PolicySpec:
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"{path}: not UTF-8 text (byte {exc.start})") from None
    try:
        data = loads_bounded(text)
    except JsonLimitError as exc:
        raise ConfigError(f"{path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    return parse_policy(data, path)
